import { listCredentials, readCredential, sitesOfUser } from '../accounts/account.repository.js';
import { revokeCredential } from '../accounts/account.service.js';
import type { DbHandle } from '../db/schema.js';
import { NotFoundError } from '../errors.js';
import { findConnection, revokeConnection } from '../oauth/connections/connection.service.js';

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

export async function revokeSiteConnection(db: DbHandle, userId: number, siteId: number, connectionId: string): Promise<void> {
  await requireUserSite(db, userId, siteId);
  const connection = await findConnection(db, connectionId);
  if (connection?.site_id !== siteId) throw new NotFoundError(`Website ${siteId} has no connection ${connectionId}.`);
  await revokeConnection(db, connectionId);
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
