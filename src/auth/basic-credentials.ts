/**
 * The text of an HTTP Basic credential. Standard base64 of ASCII text, what every client sends,
 * is read with atob: Buffer.from makes a Buffer on every request, a measurable part of a GET by id
 * under load (bench/README.md). Since the principal cache holds principals, an API-key request
 * decodes only when its credentials are not kept; the token endpoint's client limit decodes on
 * every token request. Anything else (base64url letters, stray characters, UTF-8 text) is read by
 * Buffer.from's lenient decoding, as every header always was.
 */
export function basicText(encoded: string): string {
  try {
    const text = atob(encoded);
    if (!NOT_ASCII.test(text)) return text;
  } catch {
    // Not standard base64: Buffer.from below reads it as it always did.
  }
  return Buffer.from(encoded, 'base64').toString('utf8');
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range, written out
const NOT_ASCII = /[^\x00-\x7f]/;
