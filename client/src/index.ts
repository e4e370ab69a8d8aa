// The browser-safe entry: fetch and Web APIs only. Node-only helpers are in ./node.ts.
export { apiKey, bearer, type Credentials } from './auth.js';
export { type BlogImages, Blogs, type BlogWriteOptions, blogForm, type ImageSource } from './blogs.js';
export { type ClientOptions, CmsClient, Revisions } from './client.js';
export { type FieldError, isProblem, ProblemError } from './errors.js';
export { Changes, type FollowOptions } from './feed.js';
export { type RequestOptions, type RetryOptions, retryAfterMs, Transport, type TransportOptions } from './http.js';
export { type AuthorizationRequest, OAuthClient, type OAuthOptions, OAuthSession, type SessionOptions, type TokenSet } from './oauth.js';
export { type ModifyOptions, Records, type WriteOptions } from './records.js';
export type * from './types.js';
export {
  type RecordEvent,
  type RecordEventType,
  type TestEvent,
  type VerifyOptions,
  verifyWebhook,
  type WebhookEvent,
  Webhooks,
  WebhookVerificationError,
} from './webhooks.js';
