import { decodeHTML } from 'entities';
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { FOLD_FUNCTION, foldText, withoutAccents } from '../../db/text-fold.js';
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
 * The columns the text filters compare, each in a trigram index (migration 0022), by table with
 * the table's key.
 */
const TRIGRAM_INDEXED = {
  pages: { key: 'page', columns: ['page_usertitle', 'page_menuname', 'page_alias', 'page_keywords'] },
  blogs: { key: 'info_id', columns: ['info_title', 'info_filename', 'info_tags'] },
} as const;
type Indexed = typeof TRIGRAM_INDEXED;

/** A text filter's column, as `table.column`. */
export type FilterColumn = { [T in keyof Indexed]: `${T}.${Indexed[T]['columns'][number]}` }[keyof Indexed];

/** The shortest text a trigram index finds: a shorter pattern is matched by reading every row. */
export const TRIGRAM_MIN = 3;

/**
 * The literal text of a LIKE pattern (with `escape '\'`) between its wildcards, escapes resolved:
 * `%50\% of_f%` gives `50% of` and `f`. Every text the pattern matches holds each of them.
 */
export function literalRuns(pattern: string): string[] {
  const runs: string[] = [];
  let run = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === '\\' && i + 1 < pattern.length) {
      i++;
      run += pattern.charAt(i);
    } else if (c === '%' || c === '_') {
      if (run) runs.push(run);
      run = '';
    } else {
      run += c;
    }
  }
  if (run) runs.push(run);
  return runs;
}

/**
 * Whether a LIKE pattern (with `escape '\'`) is one literal text between a leading and a trailing
 * `%`, with no other wildcard: "holds this text anywhere". For such a pattern, a trigram phrase
 * query is the LIKE itself (the indexed text is folded as the pattern is), not only a narrowing.
 */
function isSubstringPattern(pattern: string): boolean {
  const wildcards: number[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === '\\') i++;
    else if (c === '%' || c === '_') wildcards.push(i);
  }
  return (
    wildcards.length === 2 &&
    wildcards[0] === 0 &&
    wildcards[1] === pattern.length - 1 &&
    pattern.charAt(0) === '%' &&
    pattern.endsWith('%')
  );
}

/**
 * The rows whose indexed columns may match: an FTS5 trigram query (SQLite) for the pieces of at
 * least TRIGRAM_MIN characters, each of which a matching text must hold in one of the columns.
 * Undefined when no piece is that long: the caller then reads every row of the website.
 */
function trigramCandidates(columns: readonly FilterColumn[], pieces: readonly string[]): RawBuilder<SqlBool> | undefined {
  const long = pieces.filter((piece) => Array.from(piece).length >= TRIGRAM_MIN);
  if (long.length === 0 || columns.length === 0) return undefined;
  const table = (columns[0] as FilterColumn).split('.')[0] as keyof Indexed;
  const names = columns.map((column) => column.split('.')[1]).join(' ');
  const match = long.map((piece) => `{${names}} : "${piece.replace(/"/g, '""')}"`).join(' AND ');
  const trgm = sql.table(`${table}_trgm`);
  return sql<SqlBool>`${sql.ref(`${table}.${TRIGRAM_INDEXED[table].key}`)} in (select rowid from ${trgm} where ${trgm} match ${match})`;
}

/**
 * Whether a filter's compiled SQL (SQLite) takes its candidates from an FTS5 table: a trigram
 * (trigramCandidates) or full-text (fullTextMatches) `in (select rowid …)` list. Every such list
 * is one of the filter's conditions joined by AND, so the rows found are among its rowids, and
 * reading them by key costs their number, where SQLite's planner, knowing no list's size, may
 * rather walk an index of the whole website testing each entry against the list.
 */
export function drivenByIndex(compiledSql: string): boolean {
  return /\bin \(select rowid from "\w+_(trgm|fts)" where "\w+_(trgm|fts)" match /.test(compiledSql);
}

/**
 * With the trigram index's candidates first where it can serve the pattern: on SQLite the FTS5
 * query, on PostgreSQL nothing, since its planner finds the GIN index of the folded column itself
 * (and reads every row when the pattern has no three characters in a row, or pg_trgm is missing).
 * The exact LIKE decides either way.
 */
function narrowed(dialect: DialectName, candidates: RawBuilder<SqlBool> | undefined, exact: RawBuilder<SqlBool>): RawBuilder<SqlBool> {
  if (dialect === 'postgres' || !candidates) return exact;
  return sql<SqlBool>`(${candidates} and ${exact})`;
}

/**
 * Pattern match ignoring case and accents on both databases: `creme%` finds "Crème" as `keywords`
 * does. With several columns, any of them may match (a page's `title` is its title or menu name).
 */
export function textMatches(
  dialect: DialectName,
  columns: FilterColumn | readonly FilterColumn[],
  value: string,
  matchType?: MatchType,
): RawBuilder<SqlBool> {
  const list: readonly FilterColumn[] = typeof columns === 'string' ? [columns] : columns;
  const pattern = likePattern(value, matchType);
  const exact = sql.join(
    list.map((column) => sql<SqlBool>`${fold(sql.ref(column))} like ${fold(pattern)} escape '\\'`),
    sql` or `,
  );
  const folded = foldText(pattern);
  const candidates = trigramCandidates(list, literalRuns(folded));
  // "Contains" a text of 3 or more characters: on SQLite the phrase query alone answers it, and no
  // row is read to fold its columns. A count of every match (a list's total) then reads only the
  // index, not each matching row.
  if (dialect === 'sqlite' && candidates && isSubstringPattern(folded)) return candidates;
  return narrowed(dialect, candidates, sql<SqlBool>`(${exact})`);
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
export function anyListItemMatches(dialect: DialectName, column: FilterColumn, value: string, matchType?: MatchType): RawBuilder<SqlBool> {
  // Normalise the list to ",a,b,c," (no spaces around commas) and look for ",<pattern>,".
  const normalised = sql`',' || replace(replace(${fold(sql.ref(column))}, ', ', ','), ' ,', ',') || ','`;
  const item = likePattern(value, matchType);
  const exact = sql<SqlBool>`${normalised} like ${fold(`%,${item},%`)} escape '\\'`;
  // The normalising drops only spaces beside commas, so each piece between commas is text of the
  // column as it is indexed.
  const pieces = literalRuns(foldText(item)).flatMap((run) => run.split(','));
  return narrowed(dialect, trigramCandidates([column], pieces), exact);
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
