/**
 * Standard Webhooks signatures (standardwebhooks.com): the reference library signs, so what a
 * receiver verifies with the same library is what was sent, byte for byte.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret: `whsec_` and 32 random bytes in base64, the form the library and receivers expect. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A message id for the `webhook-id` header, unique per delivery and kept across its retries. */
export function newMessageId(): string {
  return `msg_${randomBytes(16).toString('base64url')}`;
}

/**
 * The three Standard Webhooks headers for one attempt. Each secret given signs (the current one and,
 * during a rotation, the previous): the signatures are space-separated, and a receiver with either
 * secret accepts the message.
 */
export function signedHeaders(messageId: string, at: Date, body: string, secrets: readonly string[]): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' '),
  };
}
