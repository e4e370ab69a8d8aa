import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import type { RateLimitStore } from '../../http/rate-limit.store.js';

/** What the login, website and consent steps share: the interaction, the form, how to answer. */
export type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;
export type Form = Record<string, string | string[] | undefined>;

export interface InteractionDeps {
  readonly provider: Provider;
  readonly db: DbHandle;
  readonly config: Config;
  readonly limits: RateLimitStore;
}

/** What every step needs: the interaction, who asks, and how to answer. */
export interface StepContext extends InteractionDeps {
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly interaction: Interaction;
  readonly form: Form;
  /** Shared template data: client name, CSRF token, form action. */
  readonly view: Record<string, unknown>;
  page(status: number, template: string, data?: Record<string, unknown>): FastifyReply;
  /** Records the step's result and sends the browser back to the provider (303, RFC 9700 §4.12). */
  finish(result: InteractionResults, merge?: boolean): Promise<FastifyReply>;
}

export function formValue(form: Form, name: string): string {
  const value = form[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

export function formValues(form: Form, name: string): string[] {
  const value = form[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

export function parseForm(body: string): Form {
  const form: Form = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const seen = form[key];
    form[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return form;
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
