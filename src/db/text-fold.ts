/**
 * Text with its combining diacritical marks removed: decomposed, stripped of U+0300–U+036F
 * (é → e, ï → i, ё → е, ά → α) and composed again.
 */
export function withoutAccents(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .normalize('NFC');
}

/**
 * The SQL function `cms_fold(text)`: lower case, accents removed. Text filters compare
 * `cms_fold(column) like cms_fold(pattern)`, so `creme%` finds "Crème" on both databases, and the
 * pattern's wildcards and escapes (ASCII) pass through unchanged. SQLite runs this one, registered
 * on its connection; PostgreSQL runs the same steps in SQL (migration 0021), its lower case by the
 * database's LC_CTYPE (a UTF-8 locale folds every letter; the C locale only A–Z).
 */
export const FOLD_FUNCTION = 'cms_fold';

export function foldText(text: string): string {
  return withoutAccents(text).toLowerCase();
}

/** Where `cms_fold` is registered: a better-sqlite3 connection, or anything with its `function`. */
interface FunctionHost {
  function(name: string, options: { deterministic: boolean }, fn: (text: unknown) => unknown): unknown;
}

/**
 * Registers `cms_fold` on a SQLite connection: null in, null out, as PostgreSQL's strict function.
 * Every connection that writes pages or blogs needs it, since the trigram index's triggers call it
 * (migration 0022); the bench's seeders, which write through better-sqlite3 directly, too.
 */
export function registerFold(sqlite: FunctionHost): void {
  sqlite.function(FOLD_FUNCTION, { deterministic: true }, (text: unknown) => (typeof text === 'string' ? foldText(text) : text));
}
