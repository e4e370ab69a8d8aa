import { preparedLookup } from '../db/prepared-lookup.js';
import type { DbHandle } from '../db/schema.js';
import type { MaybePromise } from '../maybe-async.js';

export async function insertSite(db: DbHandle, name: string, createdAt: string): Promise<number> {
  const row = await db.insertInto('sites').values({ name, created_at: createdAt }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function findSite(db: DbHandle, siteId: number) {
  return db.selectFrom('sites').selectAll().where('id', '=', siteId).executeTakeFirst();
}

export async function listSites(db: DbHandle) {
  return db.selectFrom('sites').selectAll().orderBy('id').execute();
}

export async function insertUser(db: DbHandle, email: string, passwordHash: string, createdAt: string): Promise<number> {
  const row = await db
    .insertInto('users')
    .values({ email, password_hash: passwordHash, created_at: createdAt })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function findUserByEmail(db: DbHandle, email: string) {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findUser(db: DbHandle, userId: number) {
  return db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
}

export async function updatePasswordHash(db: DbHandle, userId: number, passwordHash: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
}

export async function addSiteUser(db: DbHandle, siteId: number, userId: number, role: 'owner' | 'admin'): Promise<void> {
  await db
    .insertInto('site_users')
    .values({ site_id: siteId, user_id: userId, role })
    .onConflict((oc) => oc.columns(['site_id', 'user_id']).doUpdateSet({ role }))
    .execute();
}

/** Returns whether the user had the website. */
export async function removeSiteUser(db: DbHandle, siteId: number, userId: number): Promise<boolean> {
  const result = await db.deleteFrom('site_users').where('site_id', '=', siteId).where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Users with their websites, by e-mail; only the users of `siteId` when it is given. */
export async function listUsersWithSites(db: DbHandle, siteId?: number) {
  let query = db
    .selectFrom('users')
    .leftJoin('site_users', 'site_users.user_id', 'users.id')
    .leftJoin('sites', 'sites.id', 'site_users.site_id')
    .select(['users.id', 'users.email', 'users.created_at', 'sites.id as site_id', 'sites.name as site_name', 'site_users.role'])
    .orderBy('users.email')
    .orderBy('sites.id');
  if (siteId !== undefined) {
    query = query.where('users.id', 'in', db.selectFrom('site_users').select('user_id').where('site_id', '=', siteId));
  }
  return query.execute();
}

/** The websites a user may act for, in id order. */
export async function sitesOfUser(db: DbHandle, userId: number) {
  return db
    .selectFrom('site_users')
    .innerJoin('sites', 'sites.id', 'site_users.site_id')
    .select(['sites.id', 'sites.name', 'site_users.role'])
    .where('site_users.user_id', '=', userId)
    .orderBy('sites.id')
    .execute();
}

export async function insertCredential(
  db: DbHandle,
  credential: {
    api_id: string;
    site_id: number;
    label: string;
    key_hash: string;
    created_at: string;
    default_page: number | null;
    scopes: string | null;
  },
): Promise<void> {
  await db.insertInto('api_credentials').values(credential).execute();
}

function credentialQuery(db: DbHandle, { apiId }: { apiId: string }) {
  return db
    .selectFrom('api_credentials')
    .select(['api_id', 'site_id', 'key_hash', 'revoked_at', 'last_used_at', 'default_page', 'scopes'])
    .where('api_id', '=', apiId);
}

export type CredentialRow = Awaited<ReturnType<ReturnType<typeof credentialQuery>['executeTakeFirstOrThrow']>>;

/** Runs on every API-key request: a prepared statement on SQLite. */
export function readCredential(db: DbHandle, apiId: string): MaybePromise<CredentialRow | undefined> {
  return preparedLookup(db, credentialQuery, { apiId });
}

export async function listCredentials(db: DbHandle, siteId: number) {
  return db
    .selectFrom('api_credentials')
    .select(['api_id', 'site_id', 'label', 'created_at', 'last_used_at', 'revoked_at', 'default_page', 'scopes'])
    .where('site_id', '=', siteId)
    .orderBy('created_at')
    .orderBy('api_id')
    .execute();
}

/** Returns whether a live credential was revoked. */
export async function revokeCredential(db: DbHandle, apiId: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('api_credentials')
    .set({ revoked_at: at })
    .where('api_id', '=', apiId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function touchCredential(db: DbHandle, apiId: string, at: string): Promise<void> {
  await db.updateTable('api_credentials').set({ last_used_at: at }).where('api_id', '=', apiId).execute();
}

/** Whether the website has this page: a credential's default page must be one of its own. */
export async function siteHasPage(db: DbHandle, siteId: number, page: number): Promise<boolean> {
  const found = await db.selectFrom('pages').select('page').where('site_id', '=', siteId).where('page', '=', page).executeTakeFirst();
  return found !== undefined;
}
