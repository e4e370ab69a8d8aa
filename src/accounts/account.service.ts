import { randomBytes } from 'node:crypto';
import { GRANTING_SCOPES, type Scope } from '../auth/scopes.js';
import { refusedAs } from '../db/errors.js';
import type { DbHandle } from '../db/schema.js';
import { now } from '../db/time.js';
import { inTransaction } from '../db/transaction.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { credentialLabel, siteName } from './account.names.js';
import * as repo from './account.repository.js';
import { hashPassword, randomToken, sha256, verifyPassword } from './secrets.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MIN_PASSWORD_LENGTH = 8;

export async function createSite(db: DbHandle, name: string): Promise<{ id: number; name: string }> {
  const trimmed = siteName(name);
  return { id: await repo.insertSite(db, trimmed, now()), name: trimmed };
}

async function requireSite(db: DbHandle, siteId: number) {
  const site = await repo.findSite(db, siteId);
  if (!site) throw new NotFoundError(`There is no website ${siteId}.`);
  return site;
}

/** Creates the user, or adds an existing user (same password) to another website. */
export async function createUser(
  db: DbHandle,
  input: { email: string; password: string; siteId: number; role?: 'owner' | 'admin' },
): Promise<{ id: number; email: string }> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new BadRequestError(`"${input.email}" is not an e-mail address.`);
  if (input.password.length < MIN_PASSWORD_LENGTH)
    throw new BadRequestError(`A password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
  await requireSite(db, input.siteId);
  const taken = `A user with the e-mail ${email} exists already; give them another website with: cms user add-site --email ${email} --site ${input.siteId}`;
  if (await repo.findUserByEmail(db, email)) throw new ConflictError(taken);
  // Hashed before the transaction, which then holds nothing while scrypt runs.
  const passwordHash = await hashPassword(input.password);
  // The user and their website in one transaction, so a failure leaves no user without a website;
  // two creates of one e-mail at once are decided by the unique index, the second a 409 like the check's.
  return inTransaction(db, async (trx) => {
    const id = await refusedAs(repo.insertUser(trx, email, passwordHash, now()), { unique: taken });
    await repo.addSiteUser(trx, input.siteId, id, input.role ?? 'owner');
    return { id, email };
  });
}

export async function requireUser(db: DbHandle, email: string) {
  const user = await repo.findUserByEmail(db, email.trim().toLowerCase());
  if (!user) throw new NotFoundError(`There is no user ${email}.`);
  return user;
}

export type SiteRole = 'owner' | 'admin';

/** Gives an existing user another website (or a new role on one they have). */
export async function addSiteToUser(db: DbHandle, email: string, siteId: number, role: SiteRole = 'owner') {
  const site = await requireSite(db, siteId);
  const user = await requireUser(db, email);
  await repo.addSiteUser(db, siteId, user.id, role);
  return { userId: user.id, email: user.email, siteId, siteName: site.name, role };
}

/**
 * Takes a website away from a user. The caller ends the user's OAuth connections to it first
 * (src/oauth/connections/connection.service.ts: revokeUserConnections), so nothing they approved outlives it.
 */
export async function removeSiteFromUser(db: DbHandle, email: string, siteId: number) {
  const user = await requireUser(db, email);
  if (!(await repo.removeSiteUser(db, siteId, user.id))) {
    throw new NotFoundError(`The user ${user.email} does not have website ${siteId}.`);
  }
  return { userId: user.id, email: user.email, siteId };
}

interface UserView {
  id: number;
  email: string;
  createdAt: string;
  sites: { id: number; name: string; role: SiteRole }[];
}

/** Users and their websites; with `siteId`, only that website's users (with all their websites). */
export async function listUsers(db: DbHandle, siteId?: number): Promise<UserView[]> {
  if (siteId !== undefined) await requireSite(db, siteId);
  const users = new Map<number, UserView>();
  for (const row of await repo.listUsersWithSites(db, siteId)) {
    const user = users.get(row.id) ?? { id: row.id, email: row.email, createdAt: row.created_at, sites: [] };
    users.set(row.id, user);
    if (row.site_id !== null && row.site_name !== null && row.role !== null)
      user.sites.push({ id: row.site_id, name: row.site_name, role: row.role });
  }
  return [...users.values()];
}

interface NewCredential {
  apiId: string;
  /** Shown once; only its hash is kept. */
  apiKey: string;
  siteId: number;
  label: string;
  /** Where a blog posted with it and without `page` goes; null: nowhere (such a blog is a 400). */
  defaultPage: number | null;
  /** The scopes it is limited to; null: every permission of its website (everything:write). */
  scopes: Scope[] | null;
}

/**
 * A new API ID and key for the website. `defaultPage`, a page of that website, receives the blogs
 * posted with the credential without `page`; it is fixed for the credential's life, like its key.
 * `scopes` limits what it may do (src/auth/scopes.ts); none: every permission of the website, as
 * the hosted platform's keys have. Fixed for its life too: a key with other scopes is a new key.
 */
export async function createCredential(
  db: DbHandle,
  siteId: number,
  rawLabel: string,
  defaultPage: number | null = null,
  requestedScopes: readonly string[] = [],
): Promise<NewCredential> {
  const label = credentialLabel(rawLabel);
  const scopes = credentialScopes(requestedScopes);
  await requireSite(db, siteId);
  if (defaultPage !== null && !(await repo.siteHasPage(db, siteId, defaultPage))) {
    throw new BadRequestError(`Website ${siteId} has no page ${defaultPage}: a default page must be one of the website's own pages.`);
  }
  const apiId = `ak_${randomBytes(9).toString('base64url')}`;
  const apiKey = `sk_${randomToken(32)}`;
  await repo.insertCredential(db, {
    api_id: apiId,
    site_id: siteId,
    label,
    key_hash: sha256(apiKey),
    created_at: now(),
    default_page: defaultPage,
    scopes: scopes === null ? null : scopes.join(' '),
  });
  return { apiId, apiKey, siteId, label, defaultPage, scopes };
}

/** The scopes a credential is limited to, each once, in SCOPES order; null for none. An unknown one is a 400 naming the known ones. */
function credentialScopes(requested: readonly string[]): Scope[] | null {
  if (requested.length === 0) return null;
  const unknown = requested.filter((s) => !(GRANTING_SCOPES as readonly string[]).includes(s));
  if (unknown.length) {
    throw new BadRequestError(`Unknown scope ${unknown.join(', ')}: an API credential may be limited to ${GRANTING_SCOPES.join(', ')}.`);
  }
  return GRANTING_SCOPES.filter((s) => requested.includes(s));
}

export async function revokeCredential(db: DbHandle, apiId: string): Promise<void> {
  if (!(await repo.revokeCredential(db, apiId, now()))) {
    const found = await repo.readCredential(db, apiId);
    if (!found) throw new NotFoundError(`There is no API credential ${apiId}.`);
  }
}

/** Changes a password after checking the current one (the owner console); hashed like every other. */
export async function changePassword(
  db: DbHandle,
  userId: number,
  input: { current: string; next: string; repeat: string },
): Promise<void> {
  const user = await repo.findUser(db, userId);
  if (!user) throw new NotFoundError('This account no longer exists.');
  if (!(await verifyPassword(input.current, user.password_hash))) throw new BadRequestError('The current password is not correct.');
  if (input.next.length < MIN_PASSWORD_LENGTH) throw new BadRequestError(`A password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
  if (input.next !== input.repeat) throw new BadRequestError('The new password and its repetition differ.');
  await repo.updatePasswordHash(db, userId, await hashPassword(input.next));
}
