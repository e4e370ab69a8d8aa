/**
 * Managing a website's webhooks: what the API routes, the CLI and a console call. Every function
 * takes the website's id, so a hook of another website is not found.
 */

import type { DbHandle } from '../db/schema.js';
import { formatTimestamp, now } from '../db/time.js';
import { inTransaction, lockInTransaction } from '../db/transaction.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { OutboundError, type OutboundGuard } from '../http/outbound.js';
import { entityTag, type Precondition } from '../http/representation.js';
import {
  countHooks,
  deleteHook,
  type HookRow,
  insertHook,
  previousSecretUntil,
  selectHook,
  selectHooks,
  updateHook,
} from './hook.repository.js';
import { EVENTS, eventsOf } from './webhook.events.js';
import { disableHook } from './webhook.repository.js';
import { newSecret } from './webhook.signing.js';
import type { DisabledReason } from './webhook.table.js';

/** After a rotation the previous secret still signs this long, for receivers to switch over. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** Hooks one website may have. */
export const MAX_HOOKS_PER_SITE = 50;
const MAX_URL_LENGTH = 2000;

/** A hook as the API shows it; `secret` only in the answers that create or rotate it. */
export interface WebhookView {
  id: number;
  url: string;
  events: string[];
  description: string;
  status: 'active' | 'disabled';
  /**
   * Why it is disabled: owner, gone (its receiver answered 410), failing (every attempt failed for
   * 5 days), revoked (the credential it sends under was revoked or ended).
   */
  disabledReason: DisabledReason | null;
  /** When the failures still going on began. */
  failingSince: string | null;
  createdAt: string;
  secret?: string;
}

function viewOf(row: HookRow, withSecret = false): WebhookView {
  return {
    id: row.id,
    url: row.url,
    events: eventsOf(row.events),
    description: row.description,
    status: row.status,
    disabledReason: row.status === 'disabled' ? row.disabled_reason : null,
    failingSince: row.failing_since,
    createdAt: row.created_at,
    ...(withSecret ? { secret: row.secret } : {}),
  };
}

/** The events as stored, or a 400 that names the known ones. */
function eventsText(events: readonly string[]): string {
  const unknown = events.filter((event) => !EVENTS.includes(event));
  if (unknown.length > 0 || events.length === 0) {
    const what =
      unknown.length > 0 ? `${unknown.join(', ')} ${unknown.length === 1 ? 'is not an event' : 'are not events'}` : 'name at least one';
    throw new ValidationError([{ field: 'events', message: `${what}; the events are ${EVENTS.join(', ')}` }]);
  }
  return [...new Set(events)].join(',');
}

/** The URL as stored, or a 400 saying which rule of the outbound guard it breaks (resolved now, and again at each delivery). */
async function checkedUrl(guard: OutboundGuard, url: string): Promise<string> {
  const parsed = URL.parse(url);
  if (!parsed || url.length > MAX_URL_LENGTH)
    throw new ValidationError([{ field: 'url', message: 'must be an absolute URL, such as https://example.com/hooks/cms' }]);
  try {
    await guard.check(parsed);
  } catch (error) {
    if (error instanceof OutboundError) {
      const hint = error.privateTargetsWouldAllow
        ? ' (for local development, WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets hooks use http and private addresses: docs/webhooks.md)'
        : '';
      throw new ValidationError([{ field: 'url', message: `${error.message}${hint}` }]);
    }
    throw error;
  }
  return parsed.href;
}

/** The hook's row, or a 404; `lock`: on PostgreSQL, held until the transaction ends, so a precondition checked on it still holds at the write. */
export async function hookRow(db: DbHandle, siteId: number, id: number, lock = false): Promise<HookRow> {
  const row = await selectHook(db, siteId, id, lock);
  if (!row) throw new NotFoundError(`There is no webhook ${id} on this website.`);
  return row;
}

/**
 * A hook's strong ETag: the hash of its view (never with the secret), as GET /api/webhooks/<id>
 * and PATCH answer it, and what If-Match on a PATCH or DELETE is compared with.
 */
export function webhookTag(view: WebhookView): string {
  return entityTag(JSON.stringify(view));
}

export interface NewWebhook {
  readonly url: string;
  readonly events: readonly string[];
  readonly description?: string | undefined;
}

/**
 * The API credential or OAuth connection a hook sends under: the caller that creates or enables it
 * through the API. A hook tells whoever its URL names of every change, so it is a use of that
 * credential, and ends with it (the worker disables it: webhook.worker.ts). The console and the
 * CLI act for the website itself and give none.
 */
export interface HookCredential {
  readonly kind: 'api-key' | 'oauth';
  readonly id: string;
  /**
   * What it may read: the hook is sent only the events of those (webhook.events.ts, hooksFor).
   * Absent: everything.
   */
  readonly readScopes?: readonly string[];
}

const credentialColumns = (credential: HookCredential | undefined) => ({
  credential_kind: credential?.kind ?? null,
  credential_id: credential?.id ?? null,
  read_scopes: credential?.readScopes ? credential.readScopes.join(' ') : null,
});

/** Class of the pg_advisory_xact_lock(class, site) that serialises creating a website's hooks, so the limit holds. */
const HOOKS_LOCK = 7306;

export async function createWebhook(
  db: DbHandle,
  guard: OutboundGuard,
  siteId: number,
  input: NewWebhook,
  credential?: HookCredential,
): Promise<WebhookView> {
  const events = eventsText(input.events);
  // Resolved before the transaction: a slow DNS answer holds no lock.
  const url = await checkedUrl(guard, input.url);
  return inTransaction(db, async (trx) => {
    // The count and the insert under one lock of the website's hooks: two creates on any nodes
    // cannot both count 49.
    await lockInTransaction(trx, HOOKS_LOCK, siteId);
    if ((await countHooks(trx, siteId)) >= MAX_HOOKS_PER_SITE)
      throw new ConflictError(`This website has ${MAX_HOOKS_PER_SITE} webhooks, the most it may have: delete one before adding another.`);
    const row = await insertHook(trx, {
      site_id: siteId,
      url,
      events,
      description: input.description ?? '',
      secret: newSecret(),
      disabled_reason: null,
      created_at: now(),
      ...credentialColumns(credential),
    });
    return viewOf(row, true);
  });
}

export async function listWebhooks(db: DbHandle, siteId: number): Promise<WebhookView[]> {
  const rows = await selectHooks(db, siteId);
  return rows.map((row) => viewOf(row));
}

export async function getWebhook(db: DbHandle, siteId: number, id: number): Promise<WebhookView> {
  return viewOf(await hookRow(db, siteId, id));
}

export interface WebhookPatch {
  readonly url?: string | undefined;
  readonly events?: readonly string[] | undefined;
  readonly description?: string | undefined;
  readonly status?: 'active' | 'disabled' | undefined;
}

/**
 * Changes what is given. Enabling starts afresh (no failures counted) and makes `credential` the
 * one the hook sends under; disabling gives up the pending deliveries.
 */
export async function updateWebhook(
  db: DbHandle,
  guard: OutboundGuard,
  siteId: number,
  id: number,
  patch: WebhookPatch,
  credential?: HookCredential,
  precondition?: Precondition,
): Promise<WebhookView> {
  // Resolved before the transaction: a slow DNS answer holds no lock.
  const url = patch.url !== undefined ? await checkedUrl(guard, patch.url) : undefined;
  const events = patch.events !== undefined ? eventsText(patch.events) : undefined;
  return inTransaction(db, async (trx) => {
    // What the change depends on (the ETag, whether the hook is active) is read from the locked row.
    const current = await hookRow(trx, siteId, id, true);
    precondition?.(webhookTag(viewOf(current)));
    const changes = {
      ...(url !== undefined ? { url } : {}),
      ...(events !== undefined ? { events } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.status === 'active' && current.status !== 'active'
        ? { status: 'active' as const, disabled_reason: null, failing_since: null, ...credentialColumns(credential) }
        : {}),
    };
    if (Object.keys(changes).length > 0) await updateHook(trx, id, changes);
    if (patch.status === 'disabled' && current.status !== 'disabled') await disableHook(trx, id, 'owner');
    return viewOf(await hookRow(trx, siteId, id));
  });
}

export async function deleteWebhook(db: DbHandle, siteId: number, id: number, precondition?: Precondition): Promise<void> {
  await inTransaction(db, async (trx) => {
    precondition?.(webhookTag(viewOf(await hookRow(trx, siteId, id, true))));
    if (!(await deleteHook(trx, siteId, id))) throw new NotFoundError(`There is no webhook ${id} on this website.`);
  });
}

/**
 * A new secret, shown once; the old one signs beside it for ROTATION_OVERLAP_MS. A rotation while
 * an earlier one's overlap runs is a 409: it would end the overlap that the earlier answer
 * promised, and of rotations sent at once only the first one's secret would sign. One row lock
 * makes them take turns, so exactly one succeeds.
 */
export async function rotateSecret(db: DbHandle, siteId: number, id: number, at = new Date()): Promise<WebhookView> {
  return inTransaction(db, async (trx) => {
    const current = await hookRow(trx, siteId, id, true);
    const until = await previousSecretUntil(trx, id);
    if (until !== null && until > formatTimestamp(at)) {
      throw new ConflictError(
        `The secret of webhook ${id} was rotated less than 24 hours ago, and the secret before it signs until ${until} UTC: rotating again now would end that overlap early. Rotate after ${until} UTC, or delete the webhook and create it again to replace both secrets at once.`,
      );
    }
    const secret = newSecret();
    await updateHook(trx, id, {
      secret,
      previous_secret: current.secret,
      previous_secret_until: formatTimestamp(new Date(at.getTime() + ROTATION_OVERLAP_MS)),
    });
    return viewOf({ ...current, secret }, true);
  });
}
