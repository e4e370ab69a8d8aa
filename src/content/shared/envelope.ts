/**
 * The replies every resource route shares (DESIGN §3): the list envelope, one record in the
 * envelope, a written record, ETags and If-Match. Small helpers that a routes file calls; the
 * routes themselves are declared in each resource's own file.
 */
import type { FastifyReply, FastifySchema } from 'fastify';
import { Type } from 'typebox';
import type { Scope } from '../../auth/scopes.js';
import type { Budget } from '../../http/budget.js';
import type { MaybePromise } from '../../maybe-async.js';
import { DEFAULT_PAGE_SIZE } from './schemas.js';
import { listTag, type StoredItem, type StoredRecord } from './stored.js';

/** A page of a list: by offset (with the total), or in cursor mode (with the next page's cursor). */
export type Listed<R> = {
  records: R[];
  pageSize: number;
  /** The fields each record was cut to (projection.ts); absent when every field is sent. */
  fields?: readonly string[];
} & ({ total: number; offset: number; nextCursor?: undefined } | { nextCursor: string | null; total?: undefined; offset?: undefined });

/** The list envelope's meta; offset paging keeps exactly the keys and order it always had. */
export function listMeta(listed: Listed<unknown>): object {
  if (listed.nextCursor !== undefined) return { pageSize: listed.pageSize, nextCursor: listed.nextCursor };
  return { total: listed.total, offset: listed.offset, pageSize: listed.pageSize };
}

/** What a POST did: the record as saved, its stored ETag, and whether it was inserted. */
export interface Saved<R> {
  record: R;
  etag: string;
  created: boolean;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Records that the lists of one process hold in memory at once: about 12 MB of
 * JSON at 3 KB a record, so four lists of 999 or twenty lists of 200. A list beyond it waits for
 * room before it reads anything; on 2 cores more lists at once would only share the same CPU.
 */
export const LIST_RECORDS_IN_FLIGHT = 4000;

/**
 * Runs a list's work within the process's list budget: it waits for room for `pageSize` records,
 * and gives the room back once the answer has been sent (or the client has gone).
 */
export async function withinBudget<T>(budget: Budget, reply: FastifyReply, pageSize: number, work: () => Promise<T>): Promise<T> {
  const giveBack = await budget.take(pageSize);
  reply.raw.once('close', giveBack);
  // A client that left while the list waited: its 'close' has been and gone.
  if (reply.raw.destroyed) giveBack();
  return work();
}

/**
 * A list: the stored texts of its records joined into the envelope, byte for byte what
 * `JSON.stringify({ data: records, meta })` gives; the ETag comes from the records' stored tags.
 */
export function sendList(reply: FastifyReply, listed: Listed<StoredItem>): FastifyReply {
  const meta = JSON.stringify(listMeta(listed));
  return reply
    .header('etag', listTag(listed.records, meta, listed.fields))
    .type(JSON_TYPE)
    .send(envelopeBytes(listed.records, `],"meta":${meta}}`));
}

const COMMA = 0x2c;
const HEAD = '{"data":[';
const ONE_TAIL = `],"meta":{"total":1,"offset":0,"pageSize":${DEFAULT_PAGE_SIZE}}}`;

/**
 * The envelope as UTF-8 bytes, each stored text written once straight into one buffer. Joining
 * the texts into one string and sending that would copy a large list twice (the join, then its
 * UTF-8 encoding on the socket), many times slower (bench/README.md). A text read as bytes is
 * copied as it is. Each text's size is the one the database gave (record_bytes) where there is
 * one, as measuring every text again cost as much as writing it. A size that disagrees with what
 * was written (a database that counts in another encoding) is caught at once, and the envelope is
 * built again from measured sizes.
 */
function envelopeBytes(records: readonly StoredItem[], tail: string): Buffer {
  return envelopeSized(records, tail, true) ?? (envelopeSized(records, tail, false) as Buffer);
}

function sizeOf(record: StoredItem, trustStored: boolean): number {
  const json = record.record_json;
  if (typeof json !== 'string') return json.length;
  return trustStored && record.record_bytes !== undefined ? Number(record.record_bytes) : Buffer.byteLength(json);
}

function envelopeSized(records: readonly StoredItem[], tail: string, trustStored: boolean): Buffer | undefined {
  const sizes = records.map((record) => sizeOf(record, trustStored));
  let size = HEAD.length + Buffer.byteLength(tail) + Math.max(0, records.length - 1);
  for (const bytes of sizes) size += bytes;
  const body = Buffer.allocUnsafe(size);
  let at = body.write(HEAD, 0, 'latin1');
  for (let i = 0; i < records.length; i++) {
    if (i > 0) body[at++] = COMMA;
    const json = records[i]!.record_json;
    const written = typeof json === 'string' ? body.write(json, at) : json.copy(body, at);
    if (written !== sizes[i]) return undefined;
    at += written;
  }
  body.write(tail, at);
  return body;
}

/**
 * One stored record in the list envelope, with its stored ETag, so If-Match compares with the same
 * value. A text read as a string goes out as one string (V8 and the socket are quickest so for
 * ASCII); one read as bytes goes out as bytes.
 */
function sendRecord(reply: FastifyReply, stored: StoredRecord): FastifyReply {
  const json = stored.record_json;
  return reply
    .header('etag', stored.etag)
    .type(JSON_TYPE)
    .send(typeof json === 'string' ? `${HEAD}${json}${ONE_TAIL}` : envelopeBytes([{ id: 0, ...stored }], ONE_TAIL));
}

/**
 * One stored record as a GET by id's answer. Read at once, it is sent at once and the handler
 * returns nothing (no promise); read later, the handler's promise ends once the reply has been
 * sent (a reply is awaitable), as an async handler's `return reply` does.
 */
export function sendStored(reply: FastifyReply, stored: MaybePromise<StoredRecord>): undefined | Promise<void> {
  if (stored instanceof Promise) {
    return stored.then(async (record) => {
      await sendRecord(reply, record);
    });
  }
  sendRecord(reply, stored);
  return undefined;
}

/** A POST's answer: 201 with Location for an insert, 200 for an update; the record's stored ETag either way. */
export function sendSaved<R extends object>(reply: FastifyReply, saved: Saved<R>, location: (record: R) => string): { data: R[] } {
  reply.header('etag', saved.etag);
  if (saved.created) reply.code(201).header('location', location(saved.record));
  return { data: [saved.record] };
}

/** DELETE answers 204 with no body. */
export const Deleted = Type.Null({ description: 'Deleted' });

/** Routes that take no query parameters still refuse unknown ones, as lists do. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

/** What a route's declaration adds to its OpenAPI operation beyond its schemas. */
interface OperationNotes {
  /** Error statuses beyond those the OpenAPI document derives from the route's shape. */
  readonly problems?: readonly number[];
  /** The route honours If-Match and If-None-Match (writePreconditions), and a write answers the record's ETag. */
  readonly conditional?: boolean;
}

/** The scopes a resource's reads and its writes need. */
export interface OperationScopes {
  readonly read: Scope;
  readonly write: Scope;
}

/**
 * A route's declaration for one resource: its OpenAPI tag, hidden under the /webapps alias, the
 * summary and description of its reference, its schemas (with the operationId), the scope it
 * needs (`scopes`' read or write), and the notes of its operation. The schemas keep their types,
 * so the handler's request is typed by them.
 */
export function operations(tag: string, prefix: string, scopes: OperationScopes) {
  const doc = { tags: [tag], hide: prefix !== '/api' };
  const declare =
    (scope: Scope) =>
    <S extends FastifySchema & { operationId: string }>(summary: string, description: string, schema: S, notes: OperationNotes = {}) => ({
      schema: { ...doc, summary, description, ...schema },
      config: { scope, ...notes },
    });
  return { read: declare(scopes.read), write: declare(scopes.write) };
}
