/**
 * The change log: every change of a page or blog, appended in the transaction that makes it, with
 * who made it and the record as it then was, and its webhook deliveries queued in the same
 * transaction through the outbox the log was handed at wiring (app.ts, the `cms` command). The
 * feed, the revisions and undo read it; every write of a record appends to it (stored-writes.ts),
 * so no write path can change a record without a trace or without telling the hooks.
 */
import { userInfo } from 'node:os';
import type { Principal } from '../../auth/principal.js';
import type { DbHandle } from '../../db/schema.js';
import {
  type Actor,
  type ChangeOp,
  connectionClient,
  credentialLabel,
  insertChange,
  nextRevision,
  type RecordType,
  takeChangeNumber,
} from './history.repository.js';

export type { Actor, ChangeOp, RecordType } from './history.repository.js';

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
    case 'api-key':
      return { kind: actor.kind, id: actor.apiId, name: (await credentialLabel(db, actor.apiId)) || actor.apiId, clientId: null };
    case 'oauth':
    case 'mcp': {
      const client = await connectionClient(db, actor.connectionId);
      return { kind: actor.kind, id: actor.connectionId, name: client?.name ?? actor.connectionId, clientId: client?.client_id ?? null };
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

/** A change as logged: what a webhook delivery tells about it. */
interface LoggedChange {
  readonly type: RecordType;
  readonly id: number;
  readonly seq: number;
  readonly op: ChangeOp;
  readonly actor: Actor;
  readonly revision: number;
}

/**
 * What queues a logged change's webhook deliveries (the outbox, webhook.outbox.ts), in the
 * change's transaction. `recipients` is asked before the change takes its number, so the
 * website's counter row, locked from then to the commit on PostgreSQL, is held no longer for it;
 * what it returns queues the deliveries once the change is logged.
 */
export interface Outbox {
  recipients(db: DbHandle, siteId: number, type: RecordType, op: ChangeOp): Promise<(logged: LoggedChange) => Promise<void>>;
}

/** The change log, with the outbox its changes are queued in. One per process, made where the app or the command is wired. */
export class ChangeLog {
  readonly #outbox: Outbox;

  constructor(outbox: Outbox) {
    this.#outbox = outbox;
  }

  /**
   * Appends a change and queues its webhook deliveries, inside the transaction `db` that makes it,
   * as its last step: a committed change is always delivered and a rolled-back one never is. On
   * PostgreSQL the website's counter row stays locked from the moment its number is taken to the
   * commit, so the website's changes become visible in the order of their numbers and a feed
   * reader that follows them never skips one that commits late.
   */
  async appendAndQueue(db: DbHandle, change: Change): Promise<{ seq: number; revision: number }> {
    if (!db.isTransaction) throw new Error('the change log is appended to in the transaction of the change');
    const actor = await resolve(db, change.actor);
    const queue = await this.#outbox.recipients(db, change.siteId, change.type, change.op);
    const seq = await takeChangeNumber(db, change.siteId);
    const revision = await nextRevision(db, change.siteId, change.type, change.id);
    await insertChange(db, {
      site_id: change.siteId,
      seq,
      type: change.type,
      record_id: change.id,
      op: change.op,
      revision,
      actor_kind: actor.kind,
      actor_id: actor.id,
      actor_name: actor.name,
      client_id: actor.clientId,
      record_json: change.recordJson,
    });
    const { kind, id, name } = actor;
    await queue({ type: change.type, id: change.id, seq, op: change.op, actor: { kind, id, name }, revision });
    return { seq, revision };
  }
}
