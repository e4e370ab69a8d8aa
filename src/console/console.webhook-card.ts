/**
 * A webhook as the console's pages show it: its fields, why it is disabled or that it is failing,
 * in words, and the addresses of its buttons.
 */

import { FAILING_DISABLE_MS } from '../webhooks/webhook.retry.js';
import type * as hooks from '../webhooks/webhook.service.js';
import { webhooksPath } from './console.paths.js';

/** How long a hook may fail before it is disabled, in the days the pages say. */
export const FAILING_DAYS = FAILING_DISABLE_MS / 86_400_000;

/** Why a hook is disabled, or that it is failing on its way there; undefined for a hook that is fine. */
function statusNote(hook: hooks.WebhookView): { text: string; danger: boolean } | undefined {
  if (hook.status === 'active') {
    if (!hook.failingSince) return undefined;
    return {
      text: `Failing since ${hook.failingSince} UTC: every attempt since then has failed. If that goes on for ${FAILING_DAYS} days, the hook is disabled.`,
      danger: false,
    };
  }
  switch (hook.disabledReason) {
    case 'owner':
      return { text: 'Disabled by an owner of this website (here or with the API). Nothing is sent until it is enabled.', danger: true };
    case 'gone':
      return {
        text: 'Disabled automatically: its receiver answered 410 Gone, which says this hook is no longer wanted. Enable it once the receiver takes deliveries again.',
        danger: true,
      };
    case 'revoked':
      return {
        text: 'Disabled automatically: the API credential or connected application that created it (or last enabled it) was revoked, or its connection ended. Enable it here to send under the website’s own authority.',
        danger: true,
      };
    case 'failing':
      return {
        text: `Disabled automatically: every delivery attempt failed for ${FAILING_DAYS} days${hook.failingSince ? ` (failing since ${hook.failingSince} UTC)` : ''}. Enable it once the receiver works again.`,
        danger: true,
      };
    default:
      return { text: 'Disabled; no reason was recorded.', danger: true };
  }
}

/** The events as a person reads them. */
const eventsText = (events: readonly string[]) => events.map((e) => (e === '*' ? 'every event (*)' : e)).join(', ');

export function hookCard(siteId: number, hook: hooks.WebhookView) {
  const at = (rest: string) => webhooksPath(siteId, hook.id, rest);
  return {
    ...hook,
    eventsText: eventsText(hook.events),
    note: statusNote(hook),
    href: at(''),
    enablePath: at('/enable'),
    disablePath: at('/disable'),
    testPath: at('/test'),
    rotatePath: at('/rotate'),
    editPath: at('/edit'),
    deletePath: at('/delete'),
  };
}
