import type { Adapter, AdapterPayload } from 'oidc-provider';
import { errors } from 'oidc-provider';
import { sha256 } from '../../accounts/secrets.js';
import { preparedLookup } from '../../db/prepared-lookup.js';
import { keepRequestWrites, readHandle, writeHandle } from '../../db/request-transaction.js';
import type { DbHandle } from '../../db/schema.js';
import { formatTimestamp, parseTimestamp, secondsFromNow } from '../../db/time.js';
import { insertRegisteredClient, readClientMetadata } from '../clients/client.service.js';
import { lockGrant, lockGrantOfPayload } from '../connections/connection.repository.js';
import { revokeGrant } from '../connections/connection.service.js';

/** Models whose second use is an attack: losing the race to consume one revokes its grant (RFC 9700 §4.14.2). */
const SINGLE_USE = new Set(['AuthorizationCode', 'RefreshToken']);

function liveQuery(db: DbHandle, model: string, now: string) {
  return db
    .selectFrom('oauth_payloads')
    .select(['payload', 'consumed_at'])
    .where('model', '=', model)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
}

type PayloadRow = { payload: string; consumed_at: string | null };

/**
 * A live payload by the SHA-256 of its id. Every token request (RefreshToken, Grant) reads one: a
 * prepared lookup (preparedLookup). Bearer requests read their AccessToken with its connection instead
 * (readLiveAccess, connection.repository.ts).
 */
function liveByIdQuery(db: DbHandle, { model, now, hashedId }: { model: string; now: string; hashedId: string }) {
  return liveQuery(db, model, now).where('id', '=', hashedId);
}

async function readLive(db: DbHandle, model: string, hashedId: string): Promise<PayloadRow | undefined> {
  return preparedLookup(db, liveByIdQuery, { model, now: formatTimestamp(new Date()), hashedId });
}

/**
 * oidc-provider's storage over Kysely: one table for every model, keyed by SHA-256 of the id
 * (codes and tokens are their own ids, so a database dump holds none). Clients come from the
 * oauth_clients table instead. Within a token or revocation request every write goes into the
 * request's one transaction (request-transaction.ts), and reads after the first write too.
 */
export class KyselyAdapter implements Adapter {
  constructor(
    private readonly db: DbHandle,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const db = await writeHandle(this.db);
    if (this.model === 'Client') {
      await insertRegisteredClient(db, payload);
      return;
    }
    // The id is the token itself: the payload is stored without it, and find() puts it back.
    const { jti: _jti, ...rest } = withoutSessionId(this.model, payload);
    const row = {
      payload: JSON.stringify(rest),
      grant_id: payload.grantId ?? null,
      uid: payload.uid ?? null,
      expires_at: expiresIn ? secondsFromNow(expiresIn) : null,
    };
    await db
      .insertInto('oauth_payloads')
      .values({ model: this.model, id: sha256(id), consumed_at: null, ...row })
      .onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet(row))
      .execute();
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const db = await readHandle(this.db);
    if (this.model === 'Client') return readClientMetadata(db, id);
    const row = await readLive(db, this.model, sha256(id));
    return row ? this.toPayload(row, id) : undefined;
  }

  /**
   * Sessions only. The session's own id (its cookie value) is not stored, so the payload comes
   * back without it; oidc-provider 9 reads such a session (accountId) and never saves it.
   */
  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const row = await liveQuery(await readHandle(this.db), this.model, formatTimestamp(new Date()))
      .where('uid', '=', uid)
      .executeTakeFirst();
    return row ? this.toPayload(row, undefined) : undefined;
  }

  async findByUserCode(): Promise<undefined> {
    return undefined; // the device flow is off
  }

  /**
   * Atomic: of two concurrent redemptions exactly one changes the row. oidc-provider ignores
   * consume()'s result, so the loser must throw; for codes and refresh tokens a lost race is
   * a replay, and the whole grant goes, as for a sequential reuse. The revocation is kept although
   * the request then fails.
   */
  async consume(id: string): Promise<void> {
    const db = await writeHandle(this.db);
    const hashedId = sha256(id);
    await lockGrantOfPayload(db, this.model, hashedId);
    const result = await db
      .updateTable('oauth_payloads')
      .set({ consumed_at: formatTimestamp(new Date()) })
      .where('model', '=', this.model)
      .where('id', '=', hashedId)
      .where('consumed_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) > 0) return;
    if (SINGLE_USE.has(this.model)) {
      const row = await db
        .selectFrom('oauth_payloads')
        .select('grant_id')
        .where('model', '=', this.model)
        .where('id', '=', hashedId)
        .executeTakeFirst();
      if (row?.grant_id) {
        keepRequestWrites(this.db);
        await revokeGrant(db, row.grant_id, 'revoked');
      }
    }
    throw new errors.InvalidGrant();
  }

  /**
   * Within a token or revocation request, oidc-provider destroys only to revoke (a replay, RFC
   * 7009), so what is destroyed stays destroyed even when the request then answers an error.
   */
  async destroy(id: string): Promise<void> {
    if (this.model === 'Client') return;
    const db = await writeHandle(this.db);
    keepRequestWrites(this.db);
    // oidc-provider destroys a Grant only to revoke it (refresh or code replay, RFC 7009). Marking
    // the connection here, awaited, means the token endpoint's answer comes after the status is
    // written; the grant.revoked event would run detached.
    if (this.model === 'Grant') {
      await revokeGrant(db, id, 'revoked');
      return;
    }
    const hashedId = sha256(id);
    await lockGrantOfPayload(db, this.model, hashedId);
    await db.deleteFrom('oauth_payloads').where('model', '=', this.model).where('id', '=', hashedId).execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    const db = await writeHandle(this.db);
    keepRequestWrites(this.db);
    await lockGrant(db, grantId);
    await db.deleteFrom('oauth_payloads').where('model', '=', this.model).where('grant_id', '=', grantId).execute();
  }

  private toPayload(row: PayloadRow, id: string | undefined): AdapterPayload {
    const payload = JSON.parse(row.payload) as AdapterPayload;
    if (id !== undefined) payload.jti = id;
    if (row.consumed_at) payload.consumed = Math.floor(parseTimestamp(row.consumed_at) / 1000);
    return payload;
  }
}

/**
 * An Interaction names the session it began in by `uid` and also by `cookie`, the session's id:
 * the `_session` cookie's value, which the Session row is stored under the hash of so that no
 * database copy holds one. Nothing reads `cookie` back (oidc-provider matches sessions by uid), so
 * it is not stored.
 */
function withoutSessionId(model: string, payload: AdapterPayload): AdapterPayload {
  if (model !== 'Interaction' || !payload.session?.cookie) return payload;
  const { cookie: _cookie, ...session } = payload.session;
  return { ...payload, session };
}

/** Removes rows past their expiry; run now and then by every process (it is idempotent). */
export async function purgeExpiredPayloads(db: DbHandle): Promise<number> {
  const result = await db.deleteFrom('oauth_payloads').where('expires_at', '<=', formatTimestamp(new Date())).executeTakeFirst();
  return Number(result.numDeletedRows);
}
