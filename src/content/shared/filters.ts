import { decodeHTML } from 'entities';
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { FOLD_FUNCTION, withoutAccents } from '../../db/text-fold.js';
import type { MatchType } from './schemas.js';

/** `value` as a LIKE pattern (with `escape '\'`) that matches it literally: %, _ and \ escaped. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * A client's `like` pattern as the databases read it. A backslash escapes %, _ and itself; before
 * any other character, or at the end, it is doubled so that it stands for itself. Both databases
 * would otherwise drop it (`back\slash` found `backslash`, not itself) or, at the end, match nothing.
 */
function likeAsWritten(value: string): string {
  return value.replace(/\\([\\%_]?)/g, (_, next: string) => (next ? `\\${next}` : '\\\\'));
}

/**
 * The LIKE pattern for a text filter. `like` takes the client's pattern as written (% and _ are
 * wildcards, backslash escapes them); the other match types treat the value literally.
 */
export function likePattern(value: string, matchType: MatchType = 'like'): string {
  switch (matchType) {
    case 'like':
      return likeAsWritten(value);
    case 'exact':
      return escapeLike(value);
    case 'contains':
      return `%${escapeLike(value)}%`;
    case 'startsWith':
      return `${escapeLike(value)}%`;
    case 'endsWith':
      return `%${escapeLike(value)}`;
  }
}

/** The SQL that folds case and accents (db/text-fold.ts), the same function on both databases. */
const fold = (text: unknown) => sql`${sql.raw(FOLD_FUNCTION)}(${text})`;

/**
 * Pattern match ignoring case and accents on both databases: `creme%` finds "Crème" as `keywords`
 * does. The dialect is not needed for it, and kept so the callers read alike.
 */
export function textMatches(_dialect: DialectName, column: Expression<string>, value: string, matchType?: MatchType): RawBuilder<SqlBool> {
  return sql<SqlBool>`${fold(column)} like ${fold(likePattern(value, matchType))} escape '\\'`;
}

/**
 * Text as the full-text index and its queries see it: without its combining diacritical marks
 * (db/text-fold.ts). The stored search text (search-text.ts) and every query go through it, so
 * accents never decide a match and both databases agree: PostgreSQL's `simple` configuration keeps
 * accents, and SQLite's unicode61 removes only those of Latin letters.
 */
export const foldForSearch = withoutAccents;

/**
 * Words of a full-text query: letters, digits and underscores, as both tokenizers split them,
 * folded like the indexed text (a decomposed `naïve` is then one word, not `nai` and `ve`).
 */
function searchWords(query: string): string[] {
  return foldForSearch(query).match(/[\p{L}\p{N}_]+/gu) ?? [];
}

/**
 * Full-text condition: every word must occur. SQLite uses the FTS5 table `<table>_fts`, kept in step
 * by triggers; PostgreSQL the generated `search_tsv` column with its GIN index.
 */
export function fullTextMatches(dialect: DialectName, table: string, key: string, query: string): RawBuilder<SqlBool> {
  const words = searchWords(query);
  if (words.length === 0) return sql<SqlBool>`1 = 0`;
  if (dialect === 'postgres') {
    return sql<SqlBool>`${sql.ref(`${table}.search_tsv`)} @@ plainto_tsquery('simple', ${words.join(' ')})`;
  }
  const match = words.map((w) => `"${w.replace(/"/g, '""')}"`).join(' ');
  return sql<SqlBool>`${sql.ref(`${table}.${key}`)} in (select rowid from ${sql.table(`${table}_fts`)} where ${sql.table(`${table}_fts`)} match ${match})`;
}

/** Any of a comma-separated list matches: `a, b,c` is split and each item compared. */
export function anyListItemMatches(
  _dialect: DialectName,
  column: Expression<string>,
  value: string,
  matchType?: MatchType,
): RawBuilder<SqlBool> {
  // Normalise the list to ",a,b,c," (no spaces around commas) and look for ",<pattern>,".
  const normalised = sql`',' || replace(replace(${fold(column)}, ', ', ','), ' ,', ',') || ','`;
  const pattern = `%,${likePattern(value, matchType)},%`;
  return sql<SqlBool>`${normalised} like ${fold(pattern)} escape '\\'`;
}

/**
 * Plain text of HTML for the search index: script and style blocks and tags out, every named and
 * numeric character reference decoded as a browser would, whitespace (with `&nbsp;`) folded.
 * Decoding comes after the tags are gone, so an escaped `&lt;b&gt;` stays text.
 */
export function htmlToText(html: string): string {
  const text = html.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]*>/g, ' ');
  return decodeHTML(text).replace(/\s+/g, ' ').trim();
}
