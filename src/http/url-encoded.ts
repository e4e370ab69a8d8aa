/** An application/x-www-form-urlencoded body's fields as sent: a field given more than once keeps every value, in order. */
export type Form = Record<string, string | string[] | undefined>;

/**
 * A field's later values are appended in place, never copied: a copy per value makes a body that
 * repeats one name cost the square of its length, and anyone may send one (a form is read before
 * the credentials in it are checked). Without a prototype, so that a field named `__proto__` or
 * `constructor` is a field like any other.
 */
export function parseForm(body: string): Form {
  const form: Form = Object.create(null);
  for (const [key, value] of new URLSearchParams(body)) {
    const seen = form[key];
    if (seen === undefined) form[key] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else form[key] = [seen, value];
  }
  return form;
}

const FORM_TYPE = /^\s*(?:application\/(x-www-form-urlencoded)|multipart\/form-data)\s*(?:;|$)/i;

/** Which kind of form a Content-Type names, if it names one. */
export function formTypeOf(contentType: string | undefined): 'urlencoded' | 'multipart' | undefined {
  const match = FORM_TYPE.exec(contentType ?? '');
  return match ? (match[1] ? 'urlencoded' : 'multipart') : undefined;
}
