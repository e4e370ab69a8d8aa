import { randomBytes } from 'node:crypto';
import type { DbHandle } from '../db/schema.js';
import { now } from '../db/time.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import * as repo from './account.repository.js';
import { hashPassword, randomToken, sha256 } from './secrets.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export async function createSite(db: DbHandle, name: string): Promise<{ id: number; name: string }> {
  const trimmed = name.trim();
  if (!trimmed) throw new BadRequestError('A website needs a name.');
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
  if (input.password.length < 8) throw new BadRequestError('A password needs at least 8 characters.');
  await requireSite(db, input.siteId);
  const existing = await repo.findUserByEmail(db, email);
  if (existing) throw new ConflictError(`A user with the e-mail ${email} exists already.`);
  const id = await repo.insertUser(db, email, await hashPassword(input.password), now());
  await repo.addSiteUser(db, input.siteId, id, input.role ?? 'owner');
  return { id, email };
}

export async function grantSiteAccess(db: DbHandle, email: string, siteId: number, role: 'owner' | 'admin' = 'admin') {
  await requireSite(db, siteId);
  const user = await repo.findUserByEmail(db, email.trim().toLowerCase());
  if (!user) throw new NotFoundError(`There is no user ${email}.`);
  await repo.addSiteUser(db, siteId, user.id, role);
}

export interface NewCredential {
  apiId: string;
  /** Shown once; only its hash is kept. */
  apiKey: string;
  siteId: number;
  label: string;
}

export async function createCredential(db: DbHandle, siteId: number, label = ''): Promise<NewCredential> {
  await requireSite(db, siteId);
  const apiId = `ak_${randomBytes(9).toString('base64url')}`;
  const apiKey = `sk_${randomToken(32)}`;
  await repo.insertCredential(db, { api_id: apiId, site_id: siteId, label, key_hash: sha256(apiKey), created_at: now() });
  return { apiId, apiKey, siteId, label };
}

export async function revokeCredential(db: DbHandle, apiId: string): Promise<void> {
  if (!(await repo.revokeCredential(db, apiId, now()))) {
    const found = await repo.readCredential(db, apiId);
    if (!found) throw new NotFoundError(`There is no API credential ${apiId}.`);
  }
}
