import { randomBytes } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';
import { errors } from 'oidc-provider';
import { isUniqueViolation } from '../../db/errors.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import type { DbHandle } from '../../db/schema.js';
import { now } from '../../db/time.js';
import { BadRequestError, NotFoundError } from '../../errors.js';
import { revokeClientConnections } from '../connections/connection.service.js';
import type { OAuthClientSource } from '../oauth.tables.js';
import * as repo from './client.repository.js';
import { type ClientRow, clientQuery } from './client.repository.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:']);

export type ApplicationType = 'web' | 'native';

/**
 * Why a redirect URI is not acceptable, or undefined. Web clients: https, or http on a loopback
 * host for development. Native clients (RFC 8252): http loopback, claimed https, or a private-use
 * scheme in reverse-domain form. Never a fragment or a wildcard (RFC 9700 §4.1.3: exact match).
 */
export function redirectUriProblem(uri: string, type: ApplicationType): string | undefined {
  const url = URL.parse(uri);
  if (!url) return `"${uri}" is not an absolute URI`;
  if (uri.includes('#')) return `"${uri}" must not have a fragment`;
  if (uri.includes('*')) return `"${uri}" must not contain a wildcard`;
  if (url.username || url.password) return `"${uri}" must not carry user information`;
  if (url.protocol === 'https:') return type === 'native' && LOOPBACK.has(url.hostname) ? `"${uri}": use http for loopback` : undefined;
  if (url.protocol === 'http:') return LOOPBACK.has(url.hostname) ? undefined : `"${uri}" must use https (http only for localhost)`;
  if (type === 'web') return `"${uri}" must use https`;
  if (FORBIDDEN_SCHEMES.has(url.protocol)) return `"${uri}" uses a forbidden scheme`;
  return url.protocol.slice(0, -1).includes('.') ? undefined : `"${uri}": a private-use scheme must be a reverse domain name`;
}

/** The longest client name, as in the console's form: the pages show it inside a sentence. */
export const CLIENT_NAME_MAX = 100;

/**
 * Characters that change how the text around them reads without showing themselves: controls,
 * format characters (the bidi embeddings, overrides, isolates and marks among them: U+202A–U+202E,
 * U+2066–U+2069, U+200E, U+200F, U+061C), line and paragraph separators, lone surrogates. A name
 * with U+202E could reverse the rest of the consent sentence. The zero-width non-joiner and joiner
 * (U+200C, U+200D) stay allowed: Persian and Indic words and emoji need them, and they move nothing.
 */
const HIDDEN_CHARACTERS = /(?![\u200C\u200D])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** Why a client name (trimmed) may not be shown to owners, or undefined. */
export function clientNameProblem(name: string): string | undefined {
  if (!name) return 'A client needs a name.';
  if (name.length > CLIENT_NAME_MAX) return `A client name has at most ${CLIENT_NAME_MAX} characters.`;
  if (HIDDEN_CHARACTERS.test(name)) return 'A client name must not contain control or formatting characters, such as text direction marks.';
  return undefined;
}

/**
 * Whether an owner may trust the name a client shows: a client the operator registered (CLI, demo)
 * or a signed-in owner registered in the console is accountable to an account; one registered
 * anonymously (RFC 7591) or described by a document anyone can publish names itself.
 */
export function isVerifiedClient(source: OAuthClientSource | undefined): boolean {
  return source === 'cli' || source === 'console';
}

export function newClientId(): string {
  return `cl_${randomBytes(16).toString('base64url')}`;
}

/** What every client is, whatever it registered: public, code + PKCE, refresh tokens. */
const FIXED_METADATA = {
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
} as const;

/** Every token and authorization request reads its client: a prepared statement on SQLite. */
export async function readClientMetadata(db: DbHandle, clientId: string): Promise<AdapterPayload | undefined> {
  // No stored client_id holds a NUL character (PostgreSQL cannot store one): such an id names no
  // client, as on SQLite, instead of a database error that oidc-provider answers with a 500.
  if (clientId.includes('\u0000')) return undefined;
  return toMetadata(await preparedLookup(db, clientQuery, { clientId }));
}

function toMetadata(row: ClientRow | undefined): AdapterPayload | undefined {
  // A metadata document client is described by its document, fetched again when the cache lapses;
  // its row only names it for the connection list.
  if (!row || row.source === 'metadata_document') return undefined;
  return {
    ...(JSON.parse(row.metadata) as AdapterPayload),
    client_id: row.client_id,
    client_name: row.name,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    application_type: row.application_type,
    ...FIXED_METADATA,
  };
}

interface NewClient {
  name: string;
  redirectUris: readonly string[];
  /** Fixed id (the demo client); generated otherwise. */
  clientId?: string;
  /** The console user registering it: they own it, and it is theirs alone to change. */
  ownerUserId?: number;
}

/** Refuses a client without a name or with a redirect URI a web client may not have. */
function checkedRedirectUris(uris: readonly string[]): string[] {
  const trimmed = uris.map((uri) => uri.trim()).filter(Boolean);
  if (!trimmed.length) throw new BadRequestError('A client needs at least one redirect URI.');
  const problems = trimmed.map((uri) => redirectUriProblem(uri, 'web')).filter(Boolean);
  if (problems.length) throw new BadRequestError(`Redirect URI ${problems.join('; ')}.`);
  return [...new Set(trimmed)];
}

export async function createClient(db: DbHandle, input: NewClient): Promise<{ clientId: string; name: string; redirectUris: string[] }> {
  const name = input.name.trim();
  const nameProblem = clientNameProblem(name);
  if (nameProblem) throw new BadRequestError(nameProblem);
  const redirectUris = checkedRedirectUris(input.redirectUris);
  const clientId = input.clientId ?? newClientId();
  await repo.insertClient(db, {
    client_id: clientId,
    name,
    redirect_uris: JSON.stringify(redirectUris),
    application_type: 'web',
    source: input.ownerUserId === undefined ? 'cli' : 'console',
    metadata: '{}',
    created_at: now(),
    owner_user_id: input.ownerUserId ?? null,
  });
  return { clientId, name, redirectUris };
}

export const DEMO_CLIENT_ID = 'demo-client';
/** A local script's callback and Postman's, so the demo can be tried without writing a client. */
export const DEMO_REDIRECT_URIS = ['http://127.0.0.1:8976/callback', 'https://oauth.pstmn.io/v1/callback'];
/** swagger-ui's callback page under /docs, which its Authorize button names as the redirect URI. */
export const DOCS_REDIRECT_PATH = '/docs/static/oauth2-redirect.html';

/**
 * The demo client's redirect URIs on this server: the fixed ones, the /try page, which runs the
 * whole flow in the browser, and the callback of /docs's Authorize. The pages are left out where
 * a web client may not use them (plain http on a host other than localhost).
 */
export function demoRedirectUris(publicUrl: string): string[] {
  const pages = [`${publicUrl}/try`, `${publicUrl}${DOCS_REDIRECT_PATH}`].filter((uri) => !redirectUriProblem(uri, 'web'));
  return [...DEMO_REDIRECT_URIS, ...pages];
}

/**
 * At start-up with demo data on: a demo client seeded earlier, by an older version or under another
 * PUBLIC_URL, gains this server's page redirect URIs (/try, /docs). Nothing happens without a demo
 * client, and nothing is removed.
 */
export async function addDemoRedirects(db: DbHandle, publicUrl: string): Promise<void> {
  const existing = await repo.findRedirectUris(db, DEMO_CLIENT_ID);
  if (!existing) return;
  const uris = JSON.parse(existing.redirect_uris) as string[];
  const wanted = demoRedirectUris(publicUrl).filter((uri) => !uris.includes(uri));
  if (!wanted.length) return;
  await repo.setRedirectUris(db, DEMO_CLIENT_ID, JSON.stringify([...uris, ...wanted]));
}

/** For the demo seeder: the demo client, created once (calling it again changes nothing). */
export async function createDemoClient(
  db: DbHandle,
  redirectUris: readonly string[] = DEMO_REDIRECT_URIS,
): Promise<{ clientId: string; redirectUris: string[] }> {
  try {
    const created = await createClient(db, { name: 'Demo app', redirectUris, clientId: DEMO_CLIENT_ID });
    return { clientId: created.clientId, redirectUris: created.redirectUris };
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    const existing = await readClientMetadata(db, DEMO_CLIENT_ID);
    return { clientId: DEMO_CLIENT_ID, redirectUris: (existing?.redirect_uris as string[]) ?? [] };
  }
}

export async function listClients(db: DbHandle) {
  const rows = await repo.listClientRows(db);
  return rows.map((row) => ({
    client_id: row.client_id,
    name: row.name,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    application_type: row.application_type,
    source: row.source,
    created_at: row.created_at,
  }));
}

/** RFC 7591 registration, called by the provider after it validated the metadata. Clients are public: a secret is never kept. */
export async function insertRegisteredClient(db: DbHandle, payload: AdapterPayload): Promise<void> {
  const type: ApplicationType = payload.application_type === 'native' ? 'native' : 'web';
  const redirectUris = payload.redirect_uris ?? [];
  const problem = redirectUris.map((uri) => redirectUriProblem(uri, type)).find(Boolean);
  // RFC 7591 §3.2.2 names this error; its stock description is about authorization requests.
  if (problem) throw Object.assign(new errors.InvalidRedirectUri(), { error_description: problem });
  const { client_id, client_name, redirect_uris, application_type, client_id_issued_at, client_secret, client_secret_expires_at, ...rest } =
    payload;
  // No name is fine (the client id stands in for it); a name must pass what every client's does.
  const nameProblem = client_name?.trim() ? clientNameProblem(client_name.trim()) : undefined;
  if (nameProblem) throw new errors.InvalidClientMetadata(`client_name: ${nameProblem}`);
  for (const key of Object.keys(FIXED_METADATA)) delete (rest as Record<string, unknown>)[key];
  await repo.insertClient(db, {
    client_id: String(client_id),
    name: client_name?.trim() || String(client_id),
    redirect_uris: JSON.stringify(redirect_uris),
    application_type: type,
    source: 'dynamic',
    metadata: JSON.stringify(rest),
    created_at: now(),
  });
}

/** The clients a user registered in the console, oldest first. */
export async function listOwnedClients(db: DbHandle, userId: number) {
  const rows = await repo.listOwnedClientRows(db, userId);
  return rows.map((row) => ({ ...row, redirect_uris: JSON.parse(row.redirect_uris) as string[] }));
}

/** One of the user's clients; another user's (or the operator's) is a 404, as if it did not exist. */
export async function findOwnedClient(db: DbHandle, userId: number, clientId: string) {
  const owned = (await listOwnedClients(db, userId)).find((client) => client.client_id === clientId);
  if (!owned) throw new NotFoundError(`You have no OAuth client ${clientId}.`);
  return owned;
}

/** Replaces the redirect URIs; the next authorization request is checked against the new ones. */
export async function updateOwnedRedirectUris(db: DbHandle, userId: number, clientId: string, uris: readonly string[]): Promise<string[]> {
  await findOwnedClient(db, userId, clientId);
  const redirectUris = checkedRedirectUris(uris);
  await repo.setOwnedRedirectUris(db, userId, clientId, JSON.stringify(redirectUris));
  return redirectUris;
}

/**
 * Deletes the client after ending every connection made with it: their tokens go with their
 * grants (the connection rows themselves go with the client, by foreign key).
 */
export async function deleteOwnedClient(db: DbHandle, userId: number, clientId: string): Promise<void> {
  await findOwnedClient(db, userId, clientId);
  await revokeClientConnections(db, clientId);
  await repo.deleteOwnedClient(db, userId, clientId);
}

/**
 * A Client ID Metadata Document client, as the owner approved it: recorded so that its
 * connections are listed (and revoked) like any other, under the name its document gave.
 */
export async function recordMetadataDocumentClient(db: DbHandle, metadata: AdapterPayload): Promise<void> {
  const row = {
    name: String(metadata.client_name ?? metadata.client_id),
    redirect_uris: JSON.stringify(metadata.redirect_uris ?? []),
    application_type: (metadata.application_type === 'native' ? 'native' : 'web') as ApplicationType,
    metadata: '{}',
  };
  await repo.upsertClient(db, { client_id: String(metadata.client_id), source: 'metadata_document', created_at: now(), ...row }, row);
}
