import { type Command, listedSiteOption, optionalOption, requiredOption, UsageError } from './command.js';
import { table } from './output.js';

const webhooks = () => import('../webhooks/webhook.service.js');

const webhookList: Command = {
  name: 'webhook list',
  summary: "List a website's webhooks (never their secrets)",
  usage: '--site ID',
  options: { site: { type: 'string' } },
  async run(ctx) {
    const siteId = await listedSiteOption(ctx);
    const { listWebhooks } = await webhooks();
    const hooks = await listWebhooks((await ctx.db()).kysely, siteId);
    return {
      json: { webhooks: hooks },
      text: table(
        ['ID', 'URL', 'EVENTS', 'STATUS', 'CREATED (UTC)'],
        hooks.map((h) => [
          String(h.id),
          h.url,
          h.events.join(','),
          h.disabledReason ? `${h.status} (${h.disabledReason})` : h.status,
          h.createdAt,
        ]),
      ),
    };
  },
};

const webhookCreate: Command = {
  name: 'webhook create',
  summary: 'Register a webhook; its signing secret is shown this once',
  usage: '--site ID --url URL --events page.created,blog.deleted|* [--description TEXT]',
  options: { site: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, description: { type: 'string' } },
  async run(ctx) {
    const siteId = await listedSiteOption(ctx);
    const url = requiredOption(ctx, 'url');
    const events = requiredOption(ctx, 'events')
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    const [{ createWebhook }, { deliveryGuard }] = await Promise.all([webhooks(), import('../webhooks/webhook.guard.js')]);
    const hook = await createWebhook((await ctx.db()).kysely, deliveryGuard(ctx.config().webhooks), siteId, {
      url,
      events,
      description: optionalOption(ctx, 'description'),
    });
    return {
      json: hook,
      text: [
        `Created webhook ${hook.id} for ${hook.url} (${hook.events.join(', ')}).`,
        `Signing secret (shown only now): ${hook.secret}`,
      ].join('\n'),
    };
  },
};

const webhookDelete: Command = {
  name: 'webhook delete',
  summary: 'Remove a webhook and its deliveries',
  usage: 'ID --site ID',
  positionals: ['ID'],
  options: { site: { type: 'string' } },
  async run(ctx) {
    const siteId = await listedSiteOption(ctx);
    const raw = ctx.positionals[0]!;
    if (!/^[1-9]\d{0,9}$/.test(raw)) throw new UsageError(`ID must be a webhook id (a positive whole number), got "${raw}"`);
    const { deleteWebhook } = await webhooks();
    await deleteWebhook((await ctx.db()).kysely, siteId, Number(raw));
    return { json: { deleted: Number(raw) }, text: `Deleted webhook ${raw}.` };
  },
};

/** The webhook commands, listed in the command table of ./commands.ts. */
export const webhookCommands: readonly Command[] = [webhookList, webhookCreate, webhookDelete];
