import type { RequestOptions, Transport } from './http.js';
import type { WriteOptions } from './records.js';
import type { Actor, Versioned, Webhook, WebhookCreate, WebhookDelivery, WebhookUpdate } from './types.js';

export type RecordEventType =
  | 'page.created'
  | 'page.updated'
  | 'page.deleted'
  | 'page.restored'
  | 'blog.created'
  | 'blog.updated'
  | 'blog.deleted'
  | 'blog.restored';

/** A delivery about a changed page or blog: which one and how. Fetch the record for the rest. */
export interface RecordEvent {
  type: RecordEventType;
  /** When the delivery was made, ISO 8601. */
  timestamp: string;
  data: {
    type: 'page' | 'blog';
    id: number;
    /** The website's change number (the feed's `seq`): order by it, or notice a gap. */
    seq: number;
    op: 'create' | 'update' | 'delete' | 'restore';
    actor: Actor;
    revision: number;
  };
}

/** "Send a test": names the hook, not a record. */
export interface TestEvent {
  type: 'webhook.test';
  timestamp: string;
  data: { webhookId: number };
}

export type WebhookEvent = RecordEvent | TestEvent;

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, in seconds (default 300): an older delivery may be a replay. */
  toleranceSeconds?: number;
  /** The time now, in milliseconds (for tests). */
  now?: number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * Checks a delivery as Standard Webhooks defines it and returns its event: an HMAC-SHA256 with
 * the hook's secret (`whsec_…`) over `webhook-id.webhook-timestamp.body` must match one of the
 * `v1,` signatures (during a secret rotation there are two), and the timestamp must be recent.
 * `body` must be the raw text as received: parsed and re-serialised JSON no longer matches.
 * Uses Web Crypto, so it runs in Node, Deno, workers and browsers alike; the comparison is
 * `crypto.subtle.verify`'s, which takes the same time whatever bytes differ.
 */
export async function verifyWebhook(
  secret: string,
  body: string,
  headers: HeaderSource,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  const now = (options.now ?? Date.now()) / 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > (options.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError('webhook-timestamp is too old or too new');
  }
  const key = await crypto.subtle.importKey('raw', base64ToBytes(secret.replace(/^whsec_/, '')), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  for (const signature of signatures.split(' ')) {
    const [version, value] = signature.split(',');
    if (version !== 'v1' || !value) continue;
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = base64ToBytes(value);
    } catch {
      continue;
    }
    if (await crypto.subtle.verify('HMAC', key, bytes, signed)) return JSON.parse(body) as WebhookEvent;
  }
  throw new WebhookVerificationError('no signature matches');
}

/** The website's webhooks (`/api/webhooks`): a write credential's. */
export class Webhooks {
  constructor(private readonly transport: Transport) {}

  /** Registers a hook; `data.secret` (`whsec_…`) is shown in this answer only: keep it to verify deliveries. */
  async create(input: WebhookCreate, options: RequestOptions = {}): Promise<Webhook & { secret: string }> {
    const { body } = await this.transport.json<{ data: Webhook[] }>({ method: 'POST', path: '/api/webhooks', json: input, ...options });
    return body.data[0] as Webhook & { secret: string };
  }

  async list(options: RequestOptions = {}): Promise<Webhook[]> {
    return (await this.transport.json<{ data: Webhook[] }>({ method: 'GET', path: '/api/webhooks', ...options })).body.data;
  }

  async get(id: number, options: RequestOptions = {}): Promise<Versioned<Webhook>> {
    const { body, response } = await this.transport.json<{ data: Webhook[] }>({ method: 'GET', path: `/api/webhooks/${id}`, ...options });
    return { data: body.data[0]!, etag: response.headers.get('etag') ?? '' };
  }

  async update(id: number, changes: WebhookUpdate, options: WriteOptions = {}): Promise<Webhook> {
    const { ifMatch, ...rest } = options;
    const call = { method: 'PATCH' as const, path: `/api/webhooks/${id}`, json: changes, headers: { 'if-match': ifMatch }, ...rest };
    return (await this.transport.json<{ data: Webhook[] }>(call)).body.data[0]!;
  }

  async delete(id: number, options: WriteOptions = {}): Promise<void> {
    const { ifMatch, ...rest } = options;
    await this.transport.send({ method: 'DELETE', path: `/api/webhooks/${id}`, headers: { 'if-match': ifMatch }, ...rest });
  }

  /** A new secret; the old one keeps signing beside it for 24 hours. */
  async rotateSecret(id: number, options: RequestOptions = {}): Promise<Webhook & { secret: string }> {
    const { body } = await this.transport.json<{ data: Webhook[] }>({
      method: 'POST',
      path: `/api/webhooks/${id}/rotate-secret`,
      ...options,
    });
    return body.data[0] as Webhook & { secret: string };
  }

  /** Queues a `webhook.test` delivery to the hook. */
  async test(id: number, options: RequestOptions = {}): Promise<WebhookDelivery> {
    const { body } = await this.transport.json<{ data: WebhookDelivery[] }>({
      method: 'POST',
      path: `/api/webhooks/${id}/test`,
      ...options,
    });
    return body.data[0]!;
  }

  async deliveries(id: number, options: RequestOptions = {}): Promise<WebhookDelivery[]> {
    return (await this.transport.json<{ data: WebhookDelivery[] }>({ method: 'GET', path: `/api/webhooks/${id}/deliveries`, ...options }))
      .body.data;
  }
}
