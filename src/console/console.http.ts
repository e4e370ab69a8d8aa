import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { Config } from '../config.js';
import type { ChangeLog } from '../content/history/change-log.js';
import type { DbHandle } from '../db/schema.js';
import { AppError, BadRequestError } from '../errors.js';
import { withoutSecretParams } from '../http/logging.js';
import type { OutboundGuard } from '../http/outbound.js';
import type { RateLimitStore } from '../http/rate-limit.js';
import type { ImageStorage } from '../storage/image-storage.js';
import { csrfToken, csrfValid } from '../web/csrf.js';
import { type Flash, setFlash, takeFlash } from '../web/flash.js';
import type { Form } from '../web/forms.js';
import { sendPage } from '../web/views.js';
import { type ConsoleUser, currentUser } from './console.session.js';

export const CONSOLE_PATH = '/console';

export interface ConsoleDeps {
  readonly provider: Provider;
  readonly db: DbHandle;
  readonly config: Config;
  readonly limits: RateLimitStore;
  /** The image storage the blogs use: undoing an application's changes may delete a blog. */
  readonly images: ImageStorage;
  /** The change log undo's writes append to, with the webhook outbox. */
  readonly changeLog: ChangeLog;
  /** Checks a webhook's URL as its deliveries will be checked (the Webhooks tab's forms). */
  readonly webhookGuard: OutboundGuard;
}

/** Which top-bar entry a page belongs to. */
type Section = 'sites' | 'clients' | 'account';

/** A signed-in request: who, and how to answer it. */
export interface ConsoleContext<Params = unknown, Query = unknown> {
  readonly user: ConsoleUser;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  /** The route's path parameters, as its schema declared and checked them. */
  readonly params: FastifyRequest<{ Params: Params }>['params'];
  /** The route's query string, as its schema declared and checked it. */
  readonly query: FastifyRequest<{ Querystring: Query }>['query'];
  /** The form fields of a POST (empty for a GET). */
  readonly form: Form;
  /** Renders a console page: the top bar, the CSRF token, the flash of the last POST. */
  page(status: number, template: string, section: Section, data?: Record<string, unknown>): FastifyReply;
  /** Answers a POST: 303 to `location`, with a message for the next page (RFC 9110 §15.4.4). */
  seeOther(location: string, flash?: Flash): FastifyReply;
}

/**
 * A name a client chose, inside a sentence of ours: FSI … PDI (the plain-text form of `<bdi>`) keep
 * its text direction to itself, so a name stored before names were checked cannot reorder the rest.
 */
export function isolated(name: string): string {
  return `\u2068${name}\u2069`;
}

/** The form token of a signed-in session: bound to the session's uid, which never leaves the server. */
function sessionCsrf(config: Config, user: ConsoleUser): string {
  return csrfToken(config.cookieSecrets, `console:${user.sessionUid}`);
}

export function errorPage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(reply, status, 'error', { title, message, back: CONSOLE_PATH });
}

/**
 * Signed out: to the sign-in page, and back to this address after it when it was a GET, without
 * the credentials its query may hold (an API key sent as `apiKey` would be copied into the
 * redirect, the sign-in page's address and its log line).
 */
function toSignIn(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const next = request.method === 'GET' ? `?next=${encodeURIComponent(withoutSecretParams(request.url))}` : '';
  return reply.code(303).header('location', `${CONSOLE_PATH}/login${next}`).send();
}

/**
 * A console route: signed out, the browser goes to the sign-in page (and comes back); on a POST,
 * a form without this session's CSRF token is refused with 403 before anything is done.
 */
export function consoleHandler<Params = unknown, Query = unknown>(
  deps: ConsoleDeps,
  method: 'GET' | 'POST',
  handler: (ctx: ConsoleContext<Params, Query>) => Promise<FastifyReply>,
) {
  // The form parser (registerConsole) gives a POST's fields; a GET has no body.
  return async (request: FastifyRequest<{ Params: Params; Querystring: Query; Body: Form | undefined }>, reply: FastifyReply) => {
    const user = await currentUser(deps.provider, deps.db, request, reply);
    if (!user) return toSignIn(request, reply);
    const form = request.body ?? {};
    const csrf = sessionCsrf(deps.config, user);
    if (method === 'POST' && !csrfValid(deps.config.cookieSecrets, `console:${user.sessionUid}`, form.csrf)) {
      return errorPage(
        reply,
        403,
        'This form has expired',
        'The form was not sent from this signed-in console. Reload the page and try again.',
      );
    }
    return handler({
      user,
      request,
      reply,
      params: request.params,
      query: request.query,
      form,
      page(status, template, section, data = {}) {
        const flash = takeFlash(deps.provider, deps.config.cookieSecrets, request, reply);
        return sendPage(reply, status, template, { ...data, flash, user, csrf, section, wide: true }, { script: true });
      },
      seeOther(location, flash) {
        if (flash) setFlash(deps.provider, deps.config.cookieSecrets, request, reply, flash);
        return reply.code(303).header('location', location).send();
      },
    });
  };
}

/**
 * Runs a form's change and gives its result. A refused value (a BadRequestError) shows the form
 * again with the error and what was typed (`again`), not a 303 that loses it; then this gives
 * undefined and the handler sends nothing more. Never the 400 reply itself: a FastifyReply is
 * thenable, so a promise of one resolves to undefined once it is sent, and the caller would take
 * the refusal for a success (and answer twice).
 */
export async function changeOrFormAgain<T>(
  again: (error: string) => Promise<unknown>,
  change: () => Promise<T>,
): Promise<{ result: T } | undefined> {
  try {
    return { result: await change() };
  } catch (error) {
    if (!(error instanceof BadRequestError)) throw error;
    await again(error.message);
    return undefined;
  }
}

/**
 * Errors of console routes as pages: a malformed id in a URL, or one that is not the user's, is
 * the same 404 as a missing one; a refused form value reads as what it is.
 */
export function installConsoleErrors(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error.validation && error.validationContext === 'params') {
      // Checked before the handler's sign-in: signed out, the answer is the sign-in page, as for
      // any console address, so that nothing about the address shows before signing in.
      if (!(await currentUser(deps.provider, deps.db, request, reply))) return toSignIn(request, reply);
      return errorPage(reply, 404, 'Not found', 'There is nothing here, or it is not yours to see.');
    }
    if (error instanceof AppError && error.status === 404) {
      return errorPage(reply, 404, 'Not found', 'There is nothing here, or it is not yours to see.');
    }
    if (error instanceof AppError || (error.statusCode && error.statusCode < 500)) {
      const status = error instanceof AppError ? error.status : (error.statusCode ?? 400);
      return errorPage(reply, status, 'This request cannot be done', error.message);
    }
    request.log.error({ err: error }, 'console error');
    return errorPage(reply, 500, 'Something went wrong', 'The console could not finish this request. Try again in a moment.');
  });
}
