/**
 * What an application changed, from its card: a record's revisions (read-only), and undoing the
 * application's changes since a time, with a confirmation page first, as revoking has.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { Actor } from '../content/history/change-log.js';
import type { UndoResult } from '../content/history/undo.service.js';
import { readTypedTime, timestampBefore } from '../db/time.js';
import type { Application } from '../oauth/connections/connection.service.js';
import { formValue } from '../web/forms.js';
import { CONSOLE_PATH, type ConsoleContext, type ConsoleDeps, consoleHandler, isolated } from './console.http.js';
import { ApplicationParams, type ApplicationRoute, applicationPath, historyPath, Id, idOf, sitePath } from './console.paths.js';
import { applicationChanges, requireUserSite, siteApplication, siteRevisions, undoSiteApplication } from './console.service.js';

const RecordParams = Type.Object({ siteId: Id, type: Type.Union([Type.Literal('page'), Type.Literal('blog')]), recordId: Id });
const RevisionQuery = Type.Object({ revision: Type.Optional(Id) });
const UndoQuery = Type.Object({ since: Type.Optional(Type.String()) });

type RecordRoute = Static<typeof RecordParams>;

/** Who made a change, as the console names each kind of actor. */
const ACTOR_TITLES: Record<Actor['kind'], string> = {
  'api-key': 'API credential',
  oauth: 'REST API',
  mcp: 'MCP',
  console: 'console',
  cli: 'cms command',
  system: 'system',
};

/** How far back the undo form starts: a day, the usual "what did it do since yesterday". */
const DEFAULT_WINDOW_MS = 86_400_000;
/** The confirmation page counts the changes up to this; past it, it says "more than". */
const COUNT_LIMIT = 1000;
/** The notice after an undo names at most this many records left as they were; the rest are counted. */
const SKIPPED_NAMED = 10;

/** The undo form's default: 24 hours ago, UTC, as stored times are written. */
export function defaultUndoSince(): string {
  return timestampBefore(new Date(), DEFAULT_WINDOW_MS);
}

const SINCE_FORMAT = 'Give the time as YYYY-MM-DD HH:MM:SS, in UTC (for example 2026-11-27 09:00:00).';

/** Why a time typed into the undo form is none, in words (readTypedTime). */
function sinceProblem(raw: string, invalid: 'format' | 'date'): string {
  return invalid === 'date' ? `${raw.trim()} is not a date: there is no such day or time. ${SINCE_FORMAT}` : SINCE_FORMAT;
}

/** One line of an application's card: when, what, which record (linked), its revision, through what. */
export function changeLine(
  siteId: number,
  c: { at: string; op: string; type: 'page' | 'blog'; id: number; revision: number; actor: Actor },
) {
  return {
    at: c.at,
    op: c.op,
    record: `${c.type} ${c.id}`,
    recordHref: historyPath(siteId, c.type, c.id),
    revision: c.revision,
    revisionHref: historyPath(siteId, c.type, c.id, c.revision),
    via: ACTOR_TITLES[c.actor.kind],
  };
}

/** The notice after an undo: what came back, what went, and what was left as it is and why. */
function undoNotice(app: Application, since: string, { restored, deleted, unchanged, skipped }: UndoResult): string {
  const name = isolated(app.client_name);
  if (restored.length + deleted.length + unchanged.length + skipped.length === 0) {
    return `${name} changed nothing since ${since} UTC: nothing to undo.`;
  }
  const named = skipped.slice(0, SKIPPED_NAMED).map((s) => `${s.type} ${s.id} (${s.reason})`);
  if (skipped.length > SKIPPED_NAMED) named.push(`and ${skipped.length - SKIPPED_NAMED} more`);
  const left = skipped.length ? `; left ${skipped.length} as they are: ${named.join(', ')}` : '';
  const already = unchanged.length ? `, ${unchanged.length} already as they were` : '';
  return `Undid ${name}’s changes since ${since} UTC. Restored ${restored.length}, deleted ${deleted.length}${already}${left}.`;
}

export async function registerHistoryPages(app: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/history/:type/:recordId`,
    { schema: { hide: true, params: RecordParams, querystring: RevisionQuery } },
    consoleHandler<RecordRoute, Static<typeof RevisionQuery>>(deps, 'GET', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const { type } = ctx.params;
      const id = idOf(ctx.params.recordId);
      const { revision } = ctx.query;
      const history = await siteRevisions(db, ctx.user.id, siteId, type, id, revision === undefined ? undefined : idOf(revision));
      const chosen = history.revisions.find((r) => r.revision === history.chosen)!;
      return ctx.page(200, 'console-history', 'sites', {
        site: history.site,
        tab: 'connections',
        record: `${type} ${id}`,
        gone: history.revisions[0]!.op === 'delete',
        chosen: { ...chosen, json: JSON.stringify(JSON.parse(history.recordJson), null, 2) },
        revisions: history.revisions.map((r) => ({
          ...r,
          href: historyPath(siteId, type, id, r.revision),
          via: ACTOR_TITLES[r.actor.kind],
        })),
      });
    }),
  );

  /**
   * The undo page: without a time, the form; with a malformed one, the form again with the message
   * (400); with a time, what the undo would take back and the button that does it.
   */
  const undoPage = async (ctx: ConsoleContext<ApplicationRoute>, raw: string | undefined) => {
    const siteId = idOf(ctx.params.siteId);
    const site = await requireUserSite(db, ctx.user.id, siteId);
    const application = await siteApplication(db, ctx.user.id, siteId, ctx.params.clientId);
    const data = {
      site,
      name: isolated(application.client_name),
      action: applicationPath(siteId, application.client_id, '/undo'),
      cancel: sitePath(siteId),
      since: raw ?? defaultUndoSince(),
    };
    if (raw === undefined) return ctx.page(200, 'console-undo', 'sites', data);
    const typed = readTypedTime(raw);
    if ('invalid' in typed) return ctx.page(400, 'console-undo', 'sites', { ...data, error: sinceProblem(raw, typed.invalid) });
    const since = typed.at;
    const changes = await applicationChanges(db, application, COUNT_LIMIT + 1, since);
    const records = new Set(changes.map((c) => `${c.type} ${c.id}`)).size;
    const many = changes.length > COUNT_LIMIT;
    return ctx.page(200, 'console-undo', 'sites', {
      ...data,
      since,
      preview: {
        none: changes.length === 0,
        changes: many ? `more than ${COUNT_LIMIT} changes` : `${changes.length} change${changes.length === 1 ? '' : 's'}`,
        records: `${many ? 'at least ' : ''}${records} record${records === 1 ? '' : 's'}`,
      },
    });
  };

  scope.get(
    `${CONSOLE_PATH}/sites/:siteId/applications/:clientId/undo`,
    { schema: { hide: true, params: ApplicationParams, querystring: UndoQuery } },
    consoleHandler<ApplicationRoute, Static<typeof UndoQuery>>(deps, 'GET', (ctx) => undoPage(ctx, ctx.query.since)),
  );

  scope.post(
    `${CONSOLE_PATH}/sites/:siteId/applications/:clientId/undo`,
    { schema: { hide: true, params: ApplicationParams } },
    consoleHandler<ApplicationRoute>(deps, 'POST', async (ctx) => {
      const siteId = idOf(ctx.params.siteId);
      const raw = formValue(ctx.form, 'since');
      const typed = readTypedTime(raw);
      if ('invalid' in typed) return undoPage(ctx, raw);
      const since = typed.at;
      const undone = await undoSiteApplication(
        { db, changeLog: deps.changeLog, images: deps.images },
        ctx.user,
        siteId,
        ctx.params.clientId,
        since,
      );
      return ctx.seeOther(sitePath(siteId), { notice: undoNotice(undone.app, since, undone.result) });
    }),
  );
}
