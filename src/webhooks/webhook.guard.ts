/**
 * The outbound guard every delivery goes through (http/outbound.ts does the guarding): how long a
 * receiver has, how much of its answer is read, and which addresses may be dialled.
 */
import type { WebhookConfig } from '../config.js';
import { type OutboundGuard, type OutboundOptions, outboundGuard } from '../http/outbound.js';

/** A receiver has this long to answer, headers and body, for an attempt to count as delivered. */
export const DELIVERY_TIMEOUT_MS = 15_000;

/** Tests only: the resolver asked instead of the system's (to fake DNS answers), and a shorter time a receiver gets to answer. */
interface DeliveryGuardTests {
  readonly resolve?: OutboundOptions['resolve'];
  readonly timeoutMs?: number;
}

/**
 * 15 s for the whole answer. Only its status and headers count: a body is read and discarded up
 * to 64 KiB, and a longer one is cut there and its connection closed, so a 2xx with any body is a
 * delivery and no receiver makes a node read more.
 */
export function deliveryGuard(config: WebhookConfig, tests: DeliveryGuardTests = {}): OutboundGuard {
  return outboundGuard({
    maxBytes: 64 * 1024,
    cutPastLimit: true,
    connectTimeoutMs: 5000,
    timeoutMs: tests.timeoutMs ?? DELIVERY_TIMEOUT_MS,
    privateTargets: config.allowPrivateTargets,
    ...(tests.resolve ? { resolve: tests.resolve } : {}),
  });
}
