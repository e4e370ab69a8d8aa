import { randomBytes } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sitesOfUser } from '../accounts/account.repository.js';
import { changePassword } from '../accounts/account.service.js';
import { attemptLogin, LOGIN_WINDOW_SECONDS } from '../accounts/sign-in.js';
import { BadRequestError } from '../errors.js';
import { withoutSecretParams } from '../http/logging.js';
import { cookieJar } from '../web/cookies.js';
import { csrfToken, csrfValid } from '../web/csrf.js';
import { setFlash, takeFlash } from '../web/flash.js';
import { acceptFormsOnly, type Form, formValue } from '../web/forms.js';
import { sendPage } from '../web/views.js';
import { registerClientPages } from './console.clients.js';
import { registerHistoryPages } from './console.history.js';
import { CONSOLE_PATH, type ConsoleDeps, consoleHandler, errorPage, installConsoleErrors } from './console.http.js';
import { currentUser, endSession, startSession } from './console.session.js';
import { registerSitePages } from './console.sites.js';
import { registerWebhookPages } from './console.webhooks.js';

/** The sign-in form's CSRF nonce, before there is a session to bind a token to. */
const LOGIN_COOKIE = '_console_login';

/** Only a path inside the console: `next` must not send the browser anywhere else, nor carry credentials on (withoutSecretParams). */
function safeNext(next: unknown): string {
  if (typeof next !== 'string' || !next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return CONSOLE_PATH;
  // Checked as the browser will read it: `/console/../api/page` is /api/page.
  const url = new URL(next, 'http://console.invalid');
  if (url.origin !== 'http://console.invalid' || !url.pathname.startsWith(`${CONSOLE_PATH}/`)) return CONSOLE_PATH;
  return withoutSecretParams(`${url.pathname}${url.search}`);
}

const LoginQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false });

export async function registerConsole(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    acceptFormsOnly(scope);
    installConsoleErrors(scope, deps);
    const secrets = deps.config.cookieSecrets;

    function loginPage(request: FastifyRequest, reply: FastifyReply, status: number, data: Record<string, unknown>) {
      const nonce = randomBytes(16).toString('base64url');
      cookieJar(deps.provider, request, reply).set(LOGIN_COOKIE, nonce, { httpOnly: true, sameSite: 'lax', path: CONSOLE_PATH });
      const flash = takeFlash(deps.provider, secrets, request, reply);
      return sendPage(reply, status, 'console-login', { ...data, flash, csrf: csrfToken(secrets, `console-login:${nonce}`) });
    }

    scope.get(
      CONSOLE_PATH,
      { schema: { hide: true } },
      consoleHandler(deps, 'GET', async (ctx) =>
        ctx.page(200, 'console-sites', 'sites', { sites: await sitesOfUser(deps.db, ctx.user.id) }),
      ),
    );

    scope.get(`${CONSOLE_PATH}/login`, { schema: { hide: true, querystring: LoginQuery } }, async (request, reply) => {
      const next = safeNext(request.query.next);
      if (await currentUser(deps.provider, deps.db, request, reply)) return reply.code(303).header('location', next).send();
      return loginPage(request, reply, 200, { email: '', next });
    });

    scope.post<{ Body: Form | undefined }>(`${CONSOLE_PATH}/login`, { schema: { hide: true } }, async (request, reply) => {
      const form = request.body ?? {};
      const email = formValue(form, 'email').trim().toLowerCase();
      const next = safeNext(formValue(form, 'next'));
      const nonce = cookieJar(deps.provider, request, reply).get(LOGIN_COOKIE);
      if (!nonce || !csrfValid(secrets, `console-login:${nonce}`, form.csrf)) {
        return loginPage(request, reply, 403, { email, next, error: 'The sign-in form expired. Please try again.' });
      }
      const outcome = await attemptLogin(deps.db, deps.limits, { email, password: formValue(form, 'password'), ip: request.ip });
      if (!outcome.ok) {
        if (outcome.retryAfter) reply.header('retry-after', String(outcome.retryAfter));
        return loginPage(request, reply, outcome.status, { email, next, error: outcome.error });
      }
      await startSession(deps.provider, request, reply, outcome.userId);
      cookieJar(deps.provider, request, reply).set(LOGIN_COOKIE, null, { httpOnly: true, sameSite: 'lax', path: CONSOLE_PATH });
      return reply.code(303).header('location', next).send();
    });

    scope.post(
      `${CONSOLE_PATH}/logout`,
      { schema: { hide: true } },
      consoleHandler(deps, 'POST', async (ctx) => {
        await endSession(deps.provider, ctx.request, ctx.reply);
        setFlash(deps.provider, secrets, ctx.request, ctx.reply, { notice: 'You are signed out.' });
        return ctx.reply.code(303).header('location', `${CONSOLE_PATH}/login`).send();
      }),
    );

    scope.get(
      `${CONSOLE_PATH}/account`,
      { schema: { hide: true } },
      consoleHandler(deps, 'GET', async (ctx) => ctx.page(200, 'console-account', 'account')),
    );

    scope.post(
      `${CONSOLE_PATH}/account/password`,
      { schema: { hide: true } },
      consoleHandler(deps, 'POST', async (ctx) => {
        const current = formValue(ctx.form, 'current');
        // The current password is checked as a sign-in is, against the same counters: a session
        // left open (or stolen) is no way to guess the password past the sign-in limits.
        const check = await attemptLogin(deps.db, deps.limits, { email: ctx.user.email, password: current, ip: ctx.request.ip });
        if (!check.ok && check.status === 429) {
          const retryAfter = check.retryAfter ?? LOGIN_WINDOW_SECONDS;
          const minutes = Math.ceil(retryAfter / 60);
          ctx.reply.header('retry-after', String(retryAfter));
          return ctx.page(429, 'console-account', 'account', {
            error: `Too many wrong passwords. The current password is not checked again for ${minutes} minute${minutes === 1 ? '' : 's'}.`,
          });
        }
        if (!check.ok) return ctx.page(400, 'console-account', 'account', { error: 'The current password is not correct.' });
        try {
          await changePassword(deps.db, ctx.user.id, {
            current,
            next: formValue(ctx.form, 'password'),
            repeat: formValue(ctx.form, 'repeat'),
          });
        } catch (error) {
          if (!(error instanceof BadRequestError)) throw error;
          return ctx.page(400, 'console-account', 'account', { error: error.message });
        }
        return ctx.seeOther(`${CONSOLE_PATH}/account`, { notice: 'Your password is changed.' });
      }),
    );

    await registerSitePages(scope, deps);
    await registerHistoryPages(scope, deps);
    await registerClientPages(scope, deps);
    await registerWebhookPages(scope, deps);

    // Anything else under /console: the console's own 404 page, not the API's problem+json.
    // Signed out, the sign-in page first, as for every console address.
    scope.get(
      `${CONSOLE_PATH}/*`,
      { schema: { hide: true } },
      consoleHandler(deps, 'GET', async (ctx) =>
        errorPage(ctx.reply, 404, 'Not found', 'There is nothing here, or it is not yours to see.'),
      ),
    );
  });
}
