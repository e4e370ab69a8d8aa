/**
 * Keyset cursors: where the previous page of a list ended, as the sort-key values of its last
 * record. A cursor is base64url of a small JSON array, `[tag, ...key]`; the tag names the list and
 * its order, so a page cursor sent to the blog list, or a cursor of the title order sent with
 * another order, is refused instead of read as a position it is not.
 * The text is opaque to clients; only what this module wrote decodes.
 */
import { ValidationError } from '../../errors.js';

/**
 * Longest cursor accepted: the longest key this service writes fits with room to spare. That is a
 * title's sort key, SORT_KEY_MAX (64) code points of up to 4 UTF-8 bytes each, with its tag and id:
 * under 290 bytes of JSON, under 390 characters of base64url.
 */
export const CURSOR_MAX = 400;

/** How one key value is checked: a 32-bit integer (as its column), or short text. */
export type KeyPart = 'int' | 'text';
type ValueOf<P extends KeyPart> = P extends 'int' ? number : string;
type KeyOf<P extends readonly KeyPart[]> = { -readonly [I in keyof P]: ValueOf<P[I]> };

/** Text keys are dates, timestamps and sort keys (64 code points, 128 UTF-16 units at most); nothing a query could choke on. */
const TEXT_KEY_MAX = 128;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function fits(part: KeyPart, value: unknown): boolean {
  if (part === 'int') return Number.isInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX;
  // PostgreSQL refuses NUL in text and malformed UTF-16 cannot be sent: either would be a 500.
  return typeof value === 'string' && value.length <= TEXT_KEY_MAX && !value.includes('\u0000') && !/\p{Surrogate}/u.test(value);
}

/** What a tag of this service looks like (`p`, `b.title~`): anything else is no cursor of ours. */
const TAG = /^[a-z](\.[a-z]+)?~?$/;

const refused = (message: string) => new ValidationError([{ field: 'cursor', message }]);

export interface KeysetCursor<K> {
  encode(key: K): string;
  /** The key after which the page starts; null for `cursor=` (the first page). A 400 naming `cursor` otherwise. */
  decode(cursor: string): K | null;
}

export function keysetCursor<const P extends readonly KeyPart[]>(tag: string, parts: P): KeysetCursor<KeyOf<P>> {
  return {
    encode: (key) => Buffer.from(JSON.stringify([tag, ...key])).toString('base64url'),
    decode(cursor) {
      if (cursor === '') return null;
      // Node's decoder skips characters outside the alphabet; a cursor must be nothing but it.
      if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return bad();
      let value: unknown;
      try {
        value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      } catch {
        return bad();
      }
      if (!Array.isArray(value)) return bad();
      if (value[0] !== tag && typeof value[0] === 'string' && TAG.test(value[0])) {
        throw refused(
          'is a cursor of another list, or of another orderBy or orderDirection: send the orderBy and orderDirection of the request that gave it, or an empty value to start',
        );
      }
      if (value[0] !== tag || value.length !== parts.length + 1) return bad();
      const key = value.slice(1);
      if (!parts.every((part, i) => fits(part, key[i]))) return bad();
      return key as KeyOf<P>;
    },
  };
}

function bad(): never {
  throw refused('is not a cursor this list gave out (send meta.nextCursor of the previous page, or an empty value to start)');
}

/** The lists' reference text on cursor paging (page.routes.ts and blog.routes.ts). */
export const CURSOR_DOC = [
  'Paging: `offset` and `pageSize`, answering meta `{total, offset, pageSize}`; or cursor mode, opt-in, which costs the same on every page however deep.',
  'Cursor mode: send `cursor=` (empty) for the first page, then the `meta.nextCursor` of each answer as `cursor`, with the same filters and pageSize. Its meta is `{pageSize, nextCursor}`: no total and no offset; nextCursor is null on the last page. Records inserted or deleted meanwhile neither repeat nor skip the others.',
  'A cursor belongs to its order: send it with the same `orderBy` and `orderDirection`. `cursor` with `offset` is a 400 naming both; a cursor this list did not give out, or one of another order, is a 400 naming `cursor`.',
].join('\n\n');
