/**
 * Each page and blog keeps its record's JSON text and strong ETag beside its columns, written in
 * the same transaction as the record (docs/architecture.md, "Stored records"). Reads send the
 * stored text as it is, so a GET neither builds nor serializes the record, and its ETag is not a
 * hash of the body sent.
 */
import { createHash } from 'node:crypto';
import { entityTag } from '../../http/representation.js';

/**
 * A stored record's JSON text as read: a string, or its UTF-8 bytes where SQLite holds a text
 * with anything outside ASCII (storedText).
 */
export type StoredText = string | Buffer;

/** The two stored columns of a page or blog row, as read. */
export interface StoredRecord {
  record_json: StoredText;
  etag: string;
}

/** A stored text as a string, for the callers that parse it. */
export function textOf(json: StoredText): string {
  return typeof json === 'string' ? json : json.toString('utf8');
}

/** Whether a text has anything outside ASCII: what the `record_non_ascii` column stores. */
export function nonAscii(text: string): 0 | 1 {
  return /[\u0080-\uffff]/.test(text) ? 1 : 0;
}

/** One record of a list: its id (for the list's ETag) and its stored text and tag. */
export interface StoredItem extends StoredRecord {
  id: number;
  /**
   * The stored text's length in UTF-8 bytes as the database counts it, when the list read it: the
   * envelope is sized from it rather than by measuring every text again (envelope.ts checks it).
   */
  record_bytes?: number;
}

/** What a write stores for a record: its JSON text, always a string here, and its ETag. */
export interface WrittenRecord {
  record_json: string;
  etag: string;
}

/**
 * The stored form of a record built from its columns. Records are built field by field from the
 * catalogue, so nothing outside the schema can leak; V8's JSON.stringify is faster here than a
 * schema-compiled serializer, whose string escaping falls back to JSON.stringify for every HTML
 * field with a quote in it (bench/README.md).
 */
export function storedRecord(record: object): WrittenRecord {
  const record_json = JSON.stringify(record);
  return { record_json, etag: entityTag(record_json) };
}

/**
 * A list's strong ETag, from what the list is made of: each record's id and stored ETag, the
 * envelope's meta as sent (the total and the window, or the page size and the next cursor), and
 * the fields the records were cut to, if they were. Equal inputs give equal bytes (the envelope is
 * a function of them), so it is a valid strong tag without hashing the body.
 */
export function listTag(items: readonly StoredItem[], meta: string, fields?: readonly string[]): string {
  const hash = createHash('sha1').update(`list ${meta}`);
  if (fields) hash.update(`\nfields ${fields.join(',')}`);
  for (const item of items) hash.update(`\n${item.id} ${item.etag}`);
  return `"${hash.digest('base64url')}"`;
}

/** Parses stored texts back into objects, for callers that need records rather than bytes (MCP, the console). */
export function parsedRecords<R = Record<string, unknown>>(items: readonly StoredRecord[]): R[] {
  return JSON.parse(`[${items.map((i) => textOf(i.record_json)).join(',')}]`) as R[];
}
