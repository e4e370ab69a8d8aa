import type { Insertable, Updateable } from 'kysely';
import type { DbHandle } from '../../db/schema.js';
import type { OAuthClientsTable } from '../oauth.tables.js';

type NewClientRow = Insertable<OAuthClientsTable>;

/** One client by id, every column: read as a prepared statement (readClientMetadata). */
export function clientQuery(db: DbHandle, { clientId }: { clientId: string }) {
  return db.selectFrom('oauth_clients').selectAll().where('client_id', '=', clientId);
}

export type ClientRow = Awaited<ReturnType<ReturnType<typeof clientQuery>['executeTakeFirstOrThrow']>>;

export async function insertClient(db: DbHandle, row: NewClientRow): Promise<void> {
  await db.insertInto('oauth_clients').values(row).execute();
}

/** Inserts a client, or sets `changes` on the one that has its client_id already. */
export async function upsertClient(db: DbHandle, row: NewClientRow, changes: Updateable<OAuthClientsTable>): Promise<void> {
  await db
    .insertInto('oauth_clients')
    .values(row)
    .onConflict((oc) => oc.column('client_id').doUpdateSet(changes))
    .execute();
}

export async function findClientRow(db: DbHandle, clientId: string) {
  return db.selectFrom('oauth_clients').select(['client_id', 'name', 'source']).where('client_id', '=', clientId).executeTakeFirst();
}

export async function findRedirectUris(db: DbHandle, clientId: string) {
  return db.selectFrom('oauth_clients').select('redirect_uris').where('client_id', '=', clientId).executeTakeFirst();
}

/** `redirectUris`: the JSON array, as stored. */
export async function setRedirectUris(db: DbHandle, clientId: string, redirectUris: string): Promise<void> {
  await db.updateTable('oauth_clients').set({ redirect_uris: redirectUris }).where('client_id', '=', clientId).execute();
}

/** Oldest first. */
export async function listClientRows(db: DbHandle) {
  return db.selectFrom('oauth_clients').selectAll().orderBy('created_at').orderBy('client_id').execute();
}

/** The clients a user registered in the console, oldest first. */
export async function listOwnedClientRows(db: DbHandle, userId: number) {
  return db
    .selectFrom('oauth_clients')
    .select(['client_id', 'name', 'redirect_uris', 'created_at'])
    .where('owner_user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('client_id')
    .execute();
}

/** Only the owner's: `redirectUris` is the JSON array, as stored. */
export async function setOwnedRedirectUris(db: DbHandle, userId: number, clientId: string, redirectUris: string): Promise<void> {
  await db
    .updateTable('oauth_clients')
    .set({ redirect_uris: redirectUris })
    .where('client_id', '=', clientId)
    .where('owner_user_id', '=', userId)
    .execute();
}

/** Only the owner's; the client's connection rows go with it, by foreign key. */
export async function deleteOwnedClient(db: DbHandle, userId: number, clientId: string): Promise<void> {
  await db.deleteFrom('oauth_clients').where('client_id', '=', clientId).where('owner_user_id', '=', userId).execute();
}
