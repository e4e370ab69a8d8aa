import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { errors, type InteractionResults } from 'oidc-provider';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { findClientRow } from './client.service.js';
import { consentStep, loginStep, siteStep } from './interaction.steps.js';
import { AUTH_PATH } from './provider.js';
import type { RateLimitStore } from './rate-limit.js';
import { csrfToken, csrfValid, renderPage } from './views.js';

export type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;
export type Form = Record<string, string | string[] | undefined>;

export interface InteractionDeps {
  readonly provider: Provider;
  readonly db: Db;
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

function parseForm(body: string): Form {
  const form: Form = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const seen = form[key];
    form[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return form;
}

function sendPage(reply: FastifyReply, status: number, template: string, data: Record<string, unknown>): FastifyReply {
  const page = renderPage(template, data);
  return reply.code(status).headers(page.headers).send(page.html);
}

function expired(reply: FastifyReply): FastifyReply {
  return sendPage(reply, 400, 'error', {
    title: 'This sign-in has expired',
    message: 'The authorization request is no longer valid, or was already completed. Go back to the application and start again.',
  });
}

async function stepContext(deps: InteractionDeps, request: FastifyRequest, reply: FastifyReply): Promise<StepContext | undefined> {
  const { uid } = request.params as { uid: string };
  let interaction: Interaction;
  try {
    interaction = await deps.provider.interactionDetails(request.raw, reply.raw);
  } catch (error) {
    if (error instanceof errors.SessionNotFound) return undefined;
    throw error;
  }
  // The interaction cookie names one interaction; a URL naming another is stale or forged.
  if (interaction.uid !== uid) return undefined;
  const client = await findClientRow(deps.db.kysely, String(interaction.params.client_id));
  const view = {
    clientName: client?.name ?? String(interaction.params.client_id),
    unverified: client?.source === 'dynamic',
    csrf: csrfToken(deps.config.cookieSecrets, uid),
    action: `${AUTH_PATH}/interaction/${uid}/${interaction.prompt.name}`,
  };
  return {
    ...deps,
    request,
    reply,
    interaction,
    form: (request.body as Form | undefined) ?? {},
    view,
    page: (status, template, data = {}) => sendPage(reply, status, template, { ...view, ...data }),
    async finish(result, merge = true) {
      const returnTo = await deps.provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge });
      return reply.code(303).header('location', returnTo).send();
    },
  };
}

const STEPS = { login: loginStep, select_site: siteStep, consent: consentStep } as const;
type StepName = keyof typeof STEPS;

export async function registerInteractions(app: FastifyInstance, deps: InteractionDeps): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) =>
      done(null, parseForm(String(body))),
    );
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('referrer-policy', 'no-referrer').header('cache-control', 'no-store');
    });

    scope.get(`${AUTH_PATH}/interaction/:uid`, { schema: { hide: true } }, async (request, reply) => {
      const step = await stepContext(deps, request, reply);
      if (!step) return expired(reply);
      const handler = STEPS[step.interaction.prompt.name as StepName];
      if (!handler) return expired(reply);
      return handler.show(step);
    });

    for (const name of Object.keys(STEPS) as StepName[]) {
      scope.post(`${AUTH_PATH}/interaction/:uid/${name}`, { schema: { hide: true } }, async (request, reply) => {
        const step = await stepContext(deps, request, reply);
        if (!step) return expired(reply);
        if (!csrfValid(deps.config.cookieSecrets, step.interaction.uid, step.form.csrf)) {
          return sendPage(reply, 403, 'error', {
            title: 'This form has expired',
            message: 'The page was not sent by this sign-in. Go back to the application and start again.',
          });
        }
        // A form of an earlier step (the back button): show the step the interaction is at now.
        if (step.interaction.prompt.name !== name)
          return reply.code(303).header('location', `${AUTH_PATH}/interaction/${step.interaction.uid}`).send();
        if (formValue(step.form, 'decision') !== 'approve') {
          return step.finish({ error: 'access_denied', error_description: 'the owner denied the request' }, false);
        }
        return STEPS[name].submit(step);
      });
    }
  });
}
