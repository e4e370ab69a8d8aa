import slugifyWords from '@sindresorhus/slugify';

/**
 * The library's default replacements spell `&`, `♥` and `🦄` as English words; a title in any
 * language should only give the words it has, so they separate words instead.
 */
const NO_ADDED_WORDS: ReadonlyArray<[string, string]> = [
  ['&', ' '],
  ['♥', ' '],
  ['🦄', ' '],
];

const MAX_LENGTH = 80;

/**
 * A URL-safe filename from a title: lower case, ASCII letters and digits joined by single dashes,
 * at most 80 characters; `fallback` when nothing is left. Other scripts are transliterated
 * (`Straße Øl` → `strasse-ol`, `Привет мир` → `privet-mir`).
 */
export function slugify(text: string, fallback: string): string {
  // NFKC first: the transliteration tables do not cover compatibility forms (fullwidth letters,
  // ligatures, superscripts), which NFKC maps to the plain letters and digits they stand for.
  // No decamelizing: titles are prose, and `iPhone` is one word (`iphone`, not `i-phone`).
  const slug = slugifyWords(text.normalize('NFKC'), { decamelize: false, customReplacements: NO_ADDED_WORDS })
    .slice(0, MAX_LENGTH)
    .replace(/-+$/, '');
  return slug || fallback;
}

/** `base`, or `base-2`, `base-3`, … : the first one not in `taken`. */
export function firstFree(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!used.has(candidate)) return candidate;
  }
}
