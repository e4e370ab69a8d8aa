/**
 * A website's Webhooks tab: its hooks, each with why it is disabled when it is; add one (its
 * secret shown once), enable or disable, rotate the secret, delete, send a test, and one hook's
 * deliveries with their attempts and a retry for the failed ones. Everything goes through
 * webhook.service.ts and webhook.deliveries.ts, as the API's routes do, after the website is
 * checked to be the user's.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { ConflictError } from '../errors.js';
import { formValue } from '../web/forms.js';
import * as deliveryLog from '../webhooks/webhook.deliveries.js';
import * as hooks from '../webhooks/webhook.service.js';
import { CONSOLE_PATH, type ConsoleContext, type ConsoleDeps, changeOrFormAgain, consoleHandler } from './console.http.js';
import {
  DeliveryParams,
  type DeliveryRoute,
  idOf,
  SiteParams,
  type SiteRoute,
  WebhookParams,
  type WebhookRoute,
  webhooksPath,
} from './console.paths.js';
import { requireUserSite } from './console.service.js';
import { FAILING_DAYS, hookCard } from './console.webhook-card.js';
import { fieldsData, type HookFields, saveFields, typedFields } from './console.webhook-form.js';

/** A hook's page lists this many of its latest deliveries, as the API's default page does. */
const DELIVERIES_SHOWN = 50;

export async function registerWebhookPages(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db, webhookGuard: guard } = deps;
  const retrySteps = deps.config.webhooks.retrySchedule.length;
  const base = `${CONSOLE_PATH}/sites/:siteId/webhooks`;

  /** The website's id from the address, once the website is checked to be the user's. */
  const userSite = async (ctx: ConsoleContext<{ siteId: string }>) => {
    const siteId = idOf(ctx.params.siteId);
    return { siteId, site: await requireUserSite(db, ctx.user.id, siteId) };
  };

  const listPage = async (ctx: ConsoleContext<SiteRoute>, status: number, data: Record<string, unknown> = {}) => {
    const { siteId, site } = await userSite(ctx);
    const list = await hooks.listWebhooks(db, siteId);
    return ctx.page(status, 'console-webhooks', 'sites', {
      site,
      tab: 'webhooks',
      hooks: list.map((hook) => hookCard(siteId, hook)),
      ...fieldsData({ url: '', events: [], description: '' }),
      failingDays: FAILING_DAYS,
      full: list.length >= hooks.MAX_HOOKS_PER_SITE,
      ...data,
    });
  };

  /**
   * A change to one hook from a button: done, back to where the button was with `notice`; refused
   * for the hook's state (a 409: disabled, still pending), back with the reason. Not found is the 404.
   */
  const hookAction = async (
    ctx: ConsoleContext<WebhookRoute>,
    change: (siteId: number, hookId: number) => Promise<string>,
    back: (siteId: number, hookId: number) => string,
  ) => {
    const { siteId } = await userSite(ctx);
    const hookId = idOf(ctx.params.hookId);
    try {
      return ctx.seeOther(back(siteId, hookId), { notice: await change(siteId, hookId) });
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
      return ctx.seeOther(back(siteId, hookId), { error: error.message });
    }
  };
  /** The list, or the hook's own page when the form came from there. */
  const backTo = (ctx: ConsoleContext) => (siteId: number, hookId: number) =>
    formValue(ctx.form, 'back') === 'hook' ? webhooksPath(siteId, hookId) : webhooksPath(siteId);

  scope.get(
    base,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'GET', (ctx) => listPage(ctx, 200)),
  );

  scope.post(
    base,
    { schema: { hide: true, params: SiteParams } },
    consoleHandler<SiteRoute>(deps, 'POST', async (ctx) => {
      const { siteId } = await userSite(ctx);
      const form = typedFields(ctx.form);
      const created = await changeOrFormAgain(
        (error) => listPage(ctx, 400, { form, error }),
        () => saveFields(form, (hook) => hooks.createWebhook(db, guard, siteId, hook)),
      );
      if (!created) return ctx.reply;
      const { id, secret = '' } = created.result;
      return ctx.seeOther(webhooksPath(siteId), { webhookSecret: { hookId: id, secret, rotated: false } });
    }),
  );

  scope.get(
    `${base}/:hookId`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'GET', async (ctx) => {
      const { siteId, site } = await userSite(ctx);
      const hookId = idOf(ctx.params.hookId);
      const hook = await hooks.getWebhook(db, siteId, hookId);
      const deliveries = await deliveryLog.listDeliveries(db, siteId, hookId, DELIVERIES_SHOWN);
      return ctx.page(200, 'console-webhook', 'sites', {
        site,
        tab: 'webhooks',
        hook: hookCard(siteId, hook),
        listPath: webhooksPath(siteId),
        shown: DELIVERIES_SHOWN,
        deliveries: deliveries.map((d) => ({
          ...d,
          retryPath: webhooksPath(siteId, hookId, `/deliveries/${d.id}/retry`),
          canRetry: d.state === 'failed' && hook.status === 'active',
        })),
      });
    }),
  );

  /** The edit form: `form` is the hook's fields, or what was typed when a save was refused. */
  const editPage = async (ctx: ConsoleContext<WebhookRoute>, status: number, form?: HookFields, error?: string) => {
    const { siteId, site } = await userSite(ctx);
    const hook = await hooks.getWebhook(db, siteId, idOf(ctx.params.hookId));
    return ctx.page(status, 'console-webhook-edit', 'sites', {
      site,
      tab: 'webhooks',
      hookId: hook.id,
      listPath: webhooksPath(siteId),
      hookPath: webhooksPath(siteId, hook.id),
      editPath: webhooksPath(siteId, hook.id, '/edit'),
      ...fieldsData(form ?? { url: hook.url, events: hook.events, description: hook.description }),
      ...(error ? { error } : {}),
    });
  };

  scope.get(
    `${base}/:hookId/edit`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'GET', (ctx) => editPage(ctx, 200)),
  );

  // The URL, events and description; the secret and the state stay (enable, disable and rotate are their own buttons).
  scope.post(
    `${base}/:hookId/edit`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'POST', async (ctx) => {
      const { siteId } = await userSite(ctx);
      const hookId = idOf(ctx.params.hookId);
      await hooks.getWebhook(db, siteId, hookId); // another website's hook: the 404 before any refusal of the form
      const form = typedFields(ctx.form);
      const saved = await changeOrFormAgain(
        (error) => editPage(ctx, 400, form, error),
        () => saveFields(form, (hook) => hooks.updateWebhook(db, guard, siteId, hookId, hook)),
      );
      if (!saved) return ctx.reply;
      return ctx.seeOther(webhooksPath(siteId, hookId), { notice: 'The hook is saved.' });
    }),
  );

  for (const [action, status] of [
    ['enable', 'active'],
    ['disable', 'disabled'],
  ] as const) {
    scope.post(
      `${base}/:hookId/${action}`,
      { schema: { hide: true, params: WebhookParams } },
      consoleHandler<WebhookRoute>(deps, 'POST', (ctx) =>
        hookAction(
          ctx,
          async (siteId, hookId) => {
            const hook = await hooks.updateWebhook(db, guard, siteId, hookId, { status });
            return status === 'active'
              ? `The hook to ${hook.url} is enabled: its failures are forgotten, and the next change is sent to it.`
              : `The hook to ${hook.url} is disabled: nothing is sent to it, and its pending deliveries are given up.`;
          },
          backTo(ctx),
        ),
      ),
    );
  }

  scope.post(
    `${base}/:hookId/test`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'POST', (ctx) =>
      hookAction(
        ctx,
        async (siteId, hookId) => {
          await deliveryLog.sendTest(db, siteId, hookId);
          return 'A webhook.test event is on its way to this hook. Reload this page in a moment to see the attempt.';
        },
        (siteId, hookId) => webhooksPath(siteId, hookId),
      ),
    ),
  );

  scope.post(
    `${base}/:hookId/deliveries/:deliveryId/retry`,
    { schema: { hide: true, params: DeliveryParams } },
    consoleHandler<DeliveryRoute>(deps, 'POST', (ctx) =>
      hookAction(
        ctx,
        async (siteId, hookId) => {
          const delivery = await deliveryLog.retryDelivery(db, siteId, hookId, idOf(ctx.params.deliveryId), retrySteps);
          return `Delivery ${delivery.id} (${delivery.event}) is sent once more, now. Reload this page in a moment to see the attempt.`;
        },
        (siteId, hookId) => webhooksPath(siteId, hookId),
      ),
    ),
  );

  // Rotating and deleting each have a confirmation page first, as revoking a credential has.
  scope.get(
    `${base}/:hookId/rotate`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'GET', async (ctx) => {
      const { siteId } = await userSite(ctx);
      const hook = await hooks.getWebhook(db, siteId, idOf(ctx.params.hookId));
      return ctx.page(200, 'console-confirm', 'sites', {
        heading: `Rotate the secret of the hook to ${hook.url}?`,
        message: `A new secret is made and shown once. For ${hooks.ROTATION_OVERLAP_MS / 3_600_000} hours every delivery is signed with both the old and the new secret, so the receiver can switch over; after that only the new one.`,
        action: webhooksPath(siteId, hook.id, '/rotate'),
        confirm: 'Rotate secret',
        cancel: webhooksPath(siteId),
      });
    }),
  );

  scope.post(
    `${base}/:hookId/rotate`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'POST', async (ctx) => {
      const { siteId } = await userSite(ctx);
      const { id, secret = '' } = await hooks.rotateSecret(db, siteId, idOf(ctx.params.hookId));
      return ctx.seeOther(webhooksPath(siteId), { webhookSecret: { hookId: id, secret, rotated: true } });
    }),
  );

  scope.get(
    `${base}/:hookId/delete`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'GET', async (ctx) => {
      const { siteId, site } = await userSite(ctx);
      const hook = await hooks.getWebhook(db, siteId, idOf(ctx.params.hookId));
      return ctx.page(200, 'console-confirm', 'sites', {
        heading: `Delete the hook to ${hook.url}?`,
        message: `Nothing more is sent to it from ${site.name}, and its deliveries and their attempts are deleted with it. This cannot be undone; add the hook again to receive changes there, with a new secret.`,
        action: webhooksPath(siteId, hook.id, '/delete'),
        confirm: 'Delete hook',
        cancel: webhooksPath(siteId),
      });
    }),
  );

  scope.post(
    `${base}/:hookId/delete`,
    { schema: { hide: true, params: WebhookParams } },
    consoleHandler<WebhookRoute>(deps, 'POST', async (ctx) => {
      const { siteId } = await userSite(ctx);
      const hook = await hooks.getWebhook(db, siteId, idOf(ctx.params.hookId));
      await hooks.deleteWebhook(db, siteId, hook.id);
      return ctx.seeOther(webhooksPath(siteId), { notice: `The hook to ${hook.url} is deleted.` });
    }),
  );
}
