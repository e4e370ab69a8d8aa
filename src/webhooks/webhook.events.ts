/**
 * The events a hook can ask for, which hooks want a change, and the body that tells them. The
 * outbox (webhook.outbox.ts) uses them to queue a logged change's deliveries in its transaction.
 */
import type { DbHandle } from '../db/schema.js';
import { activeHooks } from './webhook.repository.js';

/** What happened to a record, as the change log says it (content_changes.op), and as an event says it. */
const PAST_TENSE = { create: 'created', update: 'updated', delete: 'deleted', restore: 'restored' } as const;

type RecordType = 'page' | 'blog';
type ChangeOp = keyof typeof PAST_TENSE;

/** Every event a hook may name: the four operations of each record type, and `*` for all of them. */
export const EVENTS: readonly string[] = [
  ...(['page', 'blog'] as const).flatMap((type) => Object.values(PAST_TENSE).map((past) => `${type}.${past}`)),
  '*',
];

/** The event sent to a hook by "send a test"; no hook subscribes to it. */
export const TEST_EVENT = 'webhook.test';

export function eventOf(type: RecordType, op: ChangeOp): string {
  return `${type}.${PAST_TENSE[op]}`;
}

/** A hook's `events` column: the list as stored. */
export function eventsOf(stored: string): string[] {
  return stored.split(',');
}

function wants(stored: string, event: string): boolean {
  return eventsOf(stored).some((wanted) => wanted === '*' || wanted === event);
}

/**
 * The website's active hooks that want `event`, and whose credential may read what it tells of
 * (a hook made with pages:read only is never sent a blog's change). Read before the change takes
 * its number, so the website's counter row (locked from then to the commit on PostgreSQL) is held
 * no longer for it.
 */
export async function hooksFor(db: DbHandle, siteId: number, event: string): Promise<number[]> {
  const rows = await activeHooks(db, siteId);
  return rows.filter((row) => wants(row.events, event) && mayRead(row.read_scopes, event)).map((row) => row.id);
}

/** The Standard Webhooks body: `{type, timestamp, data}`. */
export function payloadOf(event: string, data: object, at = new Date()): string {
  return JSON.stringify({ type: event, timestamp: at.toISOString(), data });
}

/**
 * Which read scopes see an event of each record type: the record's own, or the change feed's,
 * which names every change of pages and blogs (docs/oauth.md, Scopes).
 */
const READ_BY: Readonly<Record<string, readonly string[]>> = {
  page: ['pages:read', 'history:read'],
  blog: ['blogs:read', 'history:read'],
};

/** Whether a hook whose credential reads `readScopes` (null: everything) may be sent `event`. */
function mayRead(readScopes: string | null, event: string): boolean {
  if (readScopes === null) return true;
  const readers = READ_BY[event.slice(0, event.indexOf('.'))] ?? [];
  return readScopes.split(' ').some((scope) => readers.includes(scope));
}
