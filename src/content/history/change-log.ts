/**
 * The change log: every change of a page or blog, recorded in the transaction that makes it, with
 * who made it and the record as it then was. The feed, the revisions and undo read it
 * (history.service.ts); the page and blog services write it (recordChange), so no write path can
 * change a record without a trace.
 */
import { userInfo } from 'node:os';
import { sql } from 'kysely';
import type { Principal } from '../../auth/principal.js';
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import { eventOf, hooksFor, payloadOf } from '../../webhooks/webhook.events.js';
import { enqueueDeliveries } from '../../webhooks/webhook.repository.js';
import type { ContentChangesTable } from './history.table.js';

export type RecordType = ContentChangesTable['type'];
export type ChangeOp = ContentChangesTable['op'];

/**
 * Who makes a write, as its caller knows it; the log adds the name as it is at the time of the
 * change (a credential's label, an application's name), so a later rename or deletion does not
 * rewrite history.
 */
export type ActorRef =
  | { readonly kind: 'api-key'; readonly apiId: string }
  | { readonly kind: 'oauth' | 'mcp'; readonly connectionId: string }
  | { readonly kind: 'console'; readonly userId: number; readonly email: string }
  | { readonly kind: 'cli' | 'system'; readonly id: string; readonly name: string };

/** An actor as the log keeps it and the API shows it. */
export interface Actor {
  readonly kind: ActorRef['kind'];
  readonly id: string;
  readonly name: string;
}

/** The writer behind a request: its API credential, or its OAuth connection (`mcp` when it came through /mcp). */
export function actorOf(principal: Principal, via: 'api' | 'mcp' = 'api'): ActorRef {
  if (principal.method === 'api-key') return { kind: 'api-key', apiId: principal.subject };
  return { kind: via === 'mcp' ? 'mcp' : 'oauth', connectionId: principal.subject };
}

/** A `cms` command: named by the command, and by the operating system's user who ran it. */
export function cliActor(command: string): ActorRef {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No entry for this user id (a container's): the command still names itself.
  }
  return { kind: 'cli', id: user, name: `cms ${command} (${user})` };
}

/** The demo data and other writes the service makes for itself. */
export const SYSTEM_ACTOR: ActorRef = { kind: 'system', id: 'system', name: 'system' };

async function resolve(db: DbHandle, actor: ActorRef): Promise<Actor & { clientId: string | null }> {
  switch (actor.kind) {
    case 'api-key': {
      const row = await db.selectFrom('api_credentials').select('label').where('api_id', '=', actor.apiId).executeTakeFirst();
      return { kind: actor.kind, id: actor.apiId, name: row?.label || actor.apiId, clientId: null };
    }
    case 'oauth':
    case 'mcp': {
      const row = await db
        .selectFrom('oauth_connections')
        .innerJoin('oauth_clients', 'oauth_clients.client_id', 'oauth_connections.client_id')
        .select(['oauth_clients.client_id', 'oauth_clients.name'])
        .where('oauth_connections.id', '=', actor.connectionId)
        .executeTakeFirst();
      return { kind: actor.kind, id: actor.connectionId, name: row?.name ?? actor.connectionId, clientId: row?.client_id ?? null };
    }
    case 'console':
      return { kind: actor.kind, id: String(actor.userId), name: actor.email, clientId: null };
    default:
      return { kind: actor.kind, id: actor.id, name: actor.name, clientId: null };
  }
}

export interface Change {
  readonly siteId: number;
  readonly type: RecordType;
  readonly id: number;
  readonly op: ChangeOp;
  readonly actor: ActorRef;
  /** The record's JSON text as the API returns it (for a delete, as it was). */
  readonly recordJson: string;
}

/**
 * Appends a change, inside the transaction `db` that makes it, as its last step. On PostgreSQL the
 * website's counter row stays locked from the moment its number is taken to the commit, so the
 * website's changes become visible in the order of their numbers and a feed reader that follows
 * them never skips one that commits late. The change's webhook deliveries are queued here too
 * (the outbox, webhook.events.ts), so every write that is logged is also delivered, from the same
 * commit.
 */
export async function recordChange(db: DbHandle, change: Change): Promise<{ seq: number; revision: number }> {
  if (!db.isTransaction) throw new Error('recordChange must run in the transaction of the change');
  const actor = await resolve(db, change.actor);
  // The hooks to tell are read before the number is taken: the counter row stays locked from then on.
  const event = eventOf(change.type, change.op);
  const hooks = await hooksFor(db, change.siteId, event);
  // The website's counter row exists after its first change: an update by key, or the insert that makes it.
  const counted =
    (await db
      .updateTable('change_counters')
      .set({ last_seq: sql`last_seq + 1` })
      .where('site_id', '=', change.siteId)
      .returning('last_seq')
      .executeTakeFirst()) ??
    (await db
      .insertInto('change_counters')
      .values({ site_id: change.siteId, last_seq: 1, pruned_seq: 0 })
      .onConflict((oc) => oc.column('site_id').doUpdateSet({ last_seq: sql`change_counters.last_seq + 1` }))
      .returning('last_seq')
      .executeTakeFirstOrThrow());
  const seq = counted.last_seq;
  const last = await db
    .selectFrom('content_changes')
    .select((eb) => eb.fn.max('revision').as('revision'))
    .where('site_id', '=', change.siteId)
    .where('type', '=', change.type)
    .where('record_id', '=', change.id)
    .executeTakeFirst();
  const revision = Number(last?.revision ?? 0) + 1;
  await db
    .insertInto('content_changes')
    .values({
      site_id: change.siteId,
      seq,
      type: change.type,
      record_id: change.id,
      op: change.op,
      at: now(),
      revision,
      actor_kind: actor.kind,
      actor_id: actor.id,
      actor_name: actor.name,
      client_id: actor.clientId,
      record_json: change.recordJson,
    })
    .execute();
  const data = {
    type: change.type,
    id: change.id,
    seq,
    op: change.op,
    actor: { kind: actor.kind, id: actor.id, name: actor.name },
    revision,
  };
  await enqueueDeliveries(db, change.siteId, hooks, event, payloadOf(event, data));
  return { seq, revision };
}
