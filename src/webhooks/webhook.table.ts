import type { Generated } from 'kysely';

/** A website's webhook (migration 0018). */
export interface WebhooksTable {
  id: Generated<number>;
  site_id: number;
  url: string;
  /** The events it wants, comma-separated (`page.created,blog.deleted` or `*`). */
  events: string;
  description: Generated<string>;
  status: Generated<'active' | 'disabled'>;
  /**
   * Why it is disabled: `owner` (PATCH), `gone` (the receiver answered 410), `failing` (failed
   * without a break for too long), `revoked` (the credential it sends under ended).
   */
  disabled_reason: DisabledReason | null;
  /** `whsec_` and the base64 key. */
  secret: string;
  /** The secret before the last rotation, still signing until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: string | null;
  /** When the current unbroken run of failed attempts began; null after a success. */
  failing_since: string | null;
  created_at: string;
  /**
   * The credential it sends under (migration 0019): `api-key` (credential_id the API ID) or `oauth`
   * (the connection's id), the one that created or last enabled it. Null for the console's and the
   * CLI's hooks, which send for as long as the website has them.
   */
  credential_kind: 'api-key' | 'oauth' | null;
  credential_id: string | null;
  /**
   * That credential's read scopes, space-separated (migration 0024): the hook is sent only the
   * events of what they read. Null: every event (no credential, or one that reads everything).
   */
  read_scopes: string | null;
}

export type DisabledReason = 'owner' | 'gone' | 'failing' | 'revoked';

/** One event for one hook: the outbox row, kept afterwards as the delivery's record (migration 0018). */
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  webhook_id: number;
  site_id: number;
  /** The `webhook-id` header: the same on every attempt, so receivers can drop repeats. */
  message_id: string;
  event: string;
  /** The JSON body sent, as signed. */
  payload: string;
  state: Generated<'pending' | 'delivered' | 'failed'>;
  /** Milliseconds since the epoch when it may next be claimed. */
  due_ms: number;
  /** How far along the retry schedule the next failure moves it. */
  step: Generated<number>;
  attempts: Generated<number>;
  /** The node that claimed it last. */
  claimed_by: string | null;
  created_at: string;
}

/** One attempt of a delivery (migration 0018). */
export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  at: string;
}
