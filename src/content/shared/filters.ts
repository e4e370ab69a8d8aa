import { decodeHTML } from 'entities';
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { DialectName } from '../../db/database.js';
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

/** Case-insensitive pattern match on both databases (SQLite's LIKE already ignores ASCII case). */
export function textMatches(dialect: DialectName, column: Expression<string>, value: string, matchType?: MatchType): RawBuilder<SqlBool> {
  const op = dialect === 'postgres' ? sql`ilike` : sql`like`;
  return sql<SqlBool>`${column} ${op} ${likePattern(value, matchType)} escape '\\'`;
}

/**
 * Text as the full-text index and its queries see it: decomposed, stripped of its combining
 * diacritical marks (U+0300–U+036F: é → e, ï → i, ё → е, ά → α) and composed again. The stored
 * search text (search-text.ts) and every query go through it, so accents never decide a match and
 * both databases agree: PostgreSQL's `simple` configuration keeps accents, and SQLite's unicode61
 * removes only those of Latin letters.
 */
export function foldForSearch(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .normalize('NFC');
}

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
  dialect: DialectName,
  column: Expression<string>,
  value: string,
  matchType?: MatchType,
): RawBuilder<SqlBool> {
  // Normalise the list to ",a,b,c," (no spaces around commas) and look for ",<pattern>,".
  const normalised = sql`',' || replace(replace(${column}, ', ', ','), ' ,', ',') || ','`;
  const pattern = `%,${likePattern(value, matchType)},%`;
  const op = dialect === 'postgres' ? sql`ilike` : sql`like`;
  return sql<SqlBool>`${normalised} ${op} ${pattern} escape '\\'`;
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
