import { listCredentials, readCredential, sitesOfUser } from '../accounts/account.repository.js';
import { revokeCredential } from '../accounts/account.service.js';
import type { RecordType } from '../content/history/change-log.js';
import type { ChangeEntry } from '../content/history/feed.service.js';
import { getRevision, type HistoryDeps, listRevisions } from '../content/history/revisions.service.js';
import { changesBy, type UndoResult, undoChanges } from '../content/history/undo.service.js';
import type { DbHandle } from '../db/schema.js';
import { NotFoundError } from '../errors.js';
import { type Application, findApplication, revokeApplication } from '../oauth/connections/connection.service.js';

/**
 * What the console may do for a signed-in user. Every id a URL names is checked against the
 * user's websites: another website's id, or a record of another website, is a 404 as if it did
 * not exist, so ids cannot be probed.
 */
export async function requireUserSite(db: DbHandle, userId: number, siteId: number) {
  const site = (await sitesOfUser(db, userId)).find((s) => s.id === siteId);
  if (!site) throw new NotFoundError(`You have no website ${siteId}.`);
  return site;
}

/** An application that has connected to one of the user's websites, with its connections there. */
export async function siteApplication(db: DbHandle, userId: number, siteId: number, clientId: string): Promise<Application> {
  await requireUserSite(db, userId, siteId);
  const app = await findApplication(db, siteId, clientId);
  if (!app) throw new NotFoundError(`No application ${clientId} has connected to website ${siteId}.`);
  return app;
}

/** Ends every connection an application has to one of the user's websites; its connections elsewhere stay. */
export async function revokeSiteApplication(db: DbHandle, userId: number, siteId: number, clientId: string) {
  const app = await siteApplication(db, userId, siteId, clientId);
  await revokeApplication(db, siteId, clientId);
  return app;
}

export async function siteCredentials(db: DbHandle, userId: number, siteId: number) {
  await requireUserSite(db, userId, siteId);
  return listCredentials(db, siteId);
}

export async function revokeSiteCredential(db: DbHandle, userId: number, siteId: number, apiId: string): Promise<void> {
  await requireUserSite(db, userId, siteId);
  const credential = await readCredential(db, apiId);
  if (credential?.site_id !== siteId) throw new NotFoundError(`Website ${siteId} has no API credential ${apiId}.`);
  await revokeCredential(db, apiId);
}

/**
 * An application's changes to the website's pages and blogs through any of its connections, newest
 * first, at most `limit` (since `since`, when given). `app` is one siteApplication gave, or one of
 * listApplications for a website requireUserSite allowed.
 */
export function applicationChanges(db: DbHandle, app: Application, limit: number, since?: string): Promise<ChangeEntry[]> {
  return changesBy(db, app.site_id, app.connection_ids, since, limit);
}

/**
 * Takes back what an application changed on one of the user's websites since `since`, through
 * every connection it has there (REST API and MCP, live or ended), as the signed-in user.
 */
export async function undoSiteApplication(
  deps: HistoryDeps,
  user: { id: number; email: string },
  siteId: number,
  clientId: string,
  since: string,
): Promise<{ app: Application; result: UndoResult }> {
  const app = await siteApplication(deps.db, user.id, siteId, clientId);
  const result = await undoChanges(
    deps,
    { siteId, connectionIds: app.connection_ids, since },
    { kind: 'console', userId: user.id, email: user.email },
  );
  return { app, result };
}

/** A record's revisions on one of the user's websites, newest first, and the JSON of one of them (the newest unless `revision`). */
export async function siteRevisions(db: DbHandle, userId: number, siteId: number, type: RecordType, id: number, revision?: number) {
  const site = await requireUserSite(db, userId, siteId);
  const revisions = await listRevisions(db, siteId, type, id);
  const chosen = revision ?? revisions[0]!.revision;
  return { site, revisions, chosen, recordJson: await getRevision(db, siteId, type, id, chosen) };
}
