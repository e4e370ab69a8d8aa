import type { FastifyInstance } from 'fastify';
import { type Form, parseForm } from '../http/url-encoded.js';

export type { Form };

/** A field's first value, or '' when the form lacks it. */
export function formValue(form: Form, name: string): string {
  const value = form[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** Every value of a field, in the order sent (checkboxes, repeated fields). */
export function formValues(form: Form, name: string): string[] {
  const value = form[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/**
 * HTML forms only, in this plugin scope: a JSON or any other body is a 415, so a handler's body
 * is always what parseForm made. Pages that a person sees never cache or send a Referer.
 */
export function acceptFormsOnly(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) =>
    done(null, parseForm(String(body))),
  );
  scope.addHook('onSend', async (_request, reply) => {
    reply.header('referrer-policy', 'no-referrer').header('cache-control', 'no-store');
  });
}
