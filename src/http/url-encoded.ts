/** An application/x-www-form-urlencoded body's fields as sent: a field given more than once keeps every value, in order. */
export type Form = Record<string, string | string[] | undefined>;

export function parseForm(body: string): Form {
  const form: Form = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const seen = form[key];
    form[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return form;
}

const FORM_TYPE = /^\s*(?:application\/(x-www-form-urlencoded)|multipart\/form-data)\s*(?:;|$)/i;

/** Which kind of form a Content-Type names, if it names one. */
export function formTypeOf(contentType: string | undefined): 'urlencoded' | 'multipart' | undefined {
  const match = FORM_TYPE.exec(contentType ?? '');
  return match ? (match[1] ? 'urlencoded' : 'multipart') : undefined;
}
