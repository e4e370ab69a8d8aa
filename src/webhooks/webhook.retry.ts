/**
 * What becomes of a delivery after an attempt, and of its hook after a run of failures: rules
 * without a database or a clock, so that each is tested by itself (webhook.retry.test.ts). The
 * worker's outcomes read what they need, ask them, and write what they say (webhook.outcome.ts).
 */
import { timestampBefore } from '../db/time.js';

/** A hook whose attempts have all failed for this long is disabled. */
export const FAILING_DISABLE_MS = 5 * 24 * 3600 * 1000;
/** The longest Retry-After honoured; a later one is cut to it. */
const MAX_RETRY_AFTER_S = 24 * 3600;
/** Each delay of the schedule is stretched or shrunk by up to this share, so that failed deliveries spread out. */
const JITTER = 0.1;

/** What the receiver answered: its status (null when no answer came), and its Retry-After in seconds on a 429 or 503. */
interface AttemptResult {
  readonly statusCode: number | null;
  readonly retryAfterS?: number | undefined;
}

type NextState =
  /** The receiver has it (a 2xx). */
  | { readonly state: 'delivered' }
  /** Given up: the schedule ran out, or the receiver said the endpoint is gone (a 410: `disable`). */
  | { readonly state: 'failed'; readonly disable?: 'gone' }
  /** Due again at `dueMs`, on the schedule's next step. */
  | { readonly state: 'pending'; readonly step: number; readonly dueMs: number };

/**
 * The delivery's state after an attempt. `step` is how many retries it has had (the schedule's
 * next entry); a Retry-After replaces that entry's delay, and the last entry used, the next
 * failure gives up. `random` (0 to 1) places the delay within its jitter.
 */
export function nextDeliveryState(
  result: AttemptResult,
  step: number,
  { schedule, nowMs, random }: { readonly schedule: readonly number[]; readonly nowMs: number; readonly random: number },
): NextState {
  const { statusCode } = result;
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { state: 'delivered' };
  // The receiver says the endpoint is gone for good (Standard Webhooks): stop sending to it.
  if (statusCode === 410) return { state: 'failed', disable: 'gone' };
  if (step >= schedule.length) return { state: 'failed' };
  const delayS = result.retryAfterS ?? (schedule[step] ?? 0) * (1 - JITTER + 2 * JITTER * random);
  return { state: 'pending', step: step + 1, dueMs: nowMs + Math.round(delayS * 1000) };
}

/** Whether an active hook failing since `failingSince` (a stored timestamp) has failed long enough at `at` to be disabled. */
export function failingTooLong(failingSince: string, at: Date): boolean {
  return failingSince <= timestampBefore(at, FAILING_DISABLE_MS);
}

/** Seconds of a Retry-After header, as a number or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, nowMs = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value) : (Date.parse(value) - nowMs) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_S);
}
