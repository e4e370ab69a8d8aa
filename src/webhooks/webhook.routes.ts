import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { principalOf } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import { hasScope, readScopesOf } from '../auth/scopes.js';
import { Deleted, NoQuery, operations } from '../content/shared/envelope.js';
import { IdParams } from '../content/shared/schemas.js';
import type { DbHandle } from '../db/schema.js';
import type { OutboundGuard } from '../http/outbound.js';
import { writePreconditions } from '../http/representation.js';
import * as deliveryLog from './webhook.deliveries.js';
import { EVENTS } from './webhook.events.js';
import * as hooks from './webhook.service.js';

/** The most deliveries one answer lists. */
const MAX_DELIVERIES_PAGE = 200;

const Events = Type.Array(Type.String({ maxLength: 40 }), {
  minItems: 1,
  maxItems: EVENTS.length,
  description: `What to be told of: ${EVENTS.join(', ')} (* is every event)`,
});
const Url = Type.String({
  maxLength: 2000,
  description: 'Where deliveries are POSTed: https, to a public address (checked now and at each delivery); redirects are not followed',
});
const Description = Type.String({ maxLength: 500, description: 'A note for the owner' });
const Status = Type.Union([Type.Literal('active'), Type.Literal('disabled')]);

const Webhook = Type.Object(
  {
    id: Type.Integer(),
    url: Type.String(),
    events: Type.Array(Type.String(), { maxItems: EVENTS.length }),
    description: Type.String(),
    status: Status,
    disabledReason: Type.Union(
      [Type.Literal('owner'), Type.Literal('gone'), Type.Literal('failing'), Type.Literal('revoked'), Type.Null()],
      {
        description:
          'Why it is disabled: owner (by PATCH), gone (its receiver answered 410), failing (every attempt failed for 5 days), revoked (the API credential or OAuth connection that created or last enabled it was revoked or ended)',
      },
    ),
    failingSince: Type.Union([Type.String(), Type.Null()], {
      description: 'When the failures still going on began (YYYY-MM-DD HH:MM:SS, UTC)',
    }),
    createdAt: Type.String(),
    secret: Type.Optional(
      Type.String({ description: 'The signing secret (whsec_…): in the answers to create and rotate-secret only, never again' }),
    ),
  },
  { $id: 'Webhook', additionalProperties: false },
);
const Webhooks = Type.Object(
  { data: Type.Array(Webhook, { maxItems: hooks.MAX_HOOKS_PER_SITE }) },
  { $id: 'WebhookList', additionalProperties: false },
);

const Attempt = Type.Object(
  {
    attempt: Type.Integer(),
    statusCode: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's status, or null when there was no answer" }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why there was no answer (refused target, timeout, connection error)' }),
    durationMs: Type.Integer(),
    at: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
  },
  { $id: 'WebhookDeliveryAttempt', additionalProperties: false },
);
const Delivery = Type.Object(
  {
    id: Type.Integer(),
    messageId: Type.String({ description: 'The webhook-id header, the same on every attempt' }),
    event: Type.String(),
    state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    createdAt: Type.String(),
    attempts: Type.Array(Attempt),
  },
  { $id: 'WebhookDelivery', additionalProperties: false },
);
const Deliveries = Type.Object(
  { data: Type.Array(Delivery, { maxItems: MAX_DELIVERIES_PAGE }) },
  { $id: 'WebhookDeliveryList', additionalProperties: false },
);

const NewWebhook = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { $id: 'WebhookCreate', additionalProperties: false },
);
const WebhookPatch = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description), status: Type.Optional(Status) },
  { $id: 'WebhookUpdate', additionalProperties: false },
);
const DeliveryParams = Type.Object(
  { id: IdParams.properties.id, delivery: Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Delivery id' }) },
  { additionalProperties: false },
);
const DeliveriesQuery = Type.Object(
  {
    pageSize: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DELIVERIES_PAGE,
        default: 50,
        description: 'Deliveries per answer, newest first, 1–200 (50)',
      }),
    ),
  },
  { additionalProperties: false },
);

const DOCS = {
  create:
    "Registers a receiver for the website's changes. Deliveries follow Standard Webhooks: signed with the secret returned here, which is shown only in this answer. The hook sends under the caller's credential (API key or OAuth connection): once that is revoked or ends, the hook is disabled (disabledReason revoked). An unknown event is a 400 that lists the known ones; a target that is not a public https address is a 400 that says why.",
  list: "The website's webhooks; secrets are never shown again.",
  get: 'One webhook; its secret is never shown again. The ETag header can be sent back as If-Match on PATCH and DELETE.',
  update:
    'Changes the URL, the events, the description or the status. Enabling a disabled hook clears its failures and makes the caller’s credential the one it sends under; disabling gives up its pending deliveries. Send `If-Match: <ETag>` to change it only if nobody changed it since you read it (412 otherwise).',
  delete: 'Removes the hook and its deliveries. Honours If-Match.',
  rotate:
    'A new secret, shown in this answer only. For 24 hours the old and the new secret both sign each delivery. A rotation during those 24 hours is a 409 (it would end the overlap early): of rotations sent at once, exactly one succeeds.',
  deliveries: "The hook's latest deliveries, newest first, each with its attempts: status code or error, duration and time.",
  retry: 'Sends a delivery that is not pending once more, at once, with the same webhook-id. 409 while the hook is disabled.',
  test: 'Queues a webhook.test event to this hook alone, to check the receiver end to end.',
};

/** The credential a hook created or enabled by this caller sends under: its API key, or its OAuth connection. */
function credentialOf(principal: Principal): hooks.HookCredential {
  const kind = principal.method === 'api-key' ? 'api-key' : 'oauth';
  // A credential that reads everything is sent every event, as the hooks made before are.
  if (hasScope(principal.scopes, 'everything:read')) return { kind, id: principal.subject };
  return { kind, id: principal.subject, readScopes: readScopesOf(principal.scopes) };
}

/** The webhook management API (docs/webhooks.md), mounted at /api. */
export async function registerWebhooks(
  app: FastifyInstance,
  { db, guard, retrySteps }: { db: DbHandle; guard: OutboundGuard; retrySteps: number },
): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  // Every operation needs webhooks:manage: a hook sends the website's changes wherever it points.
  const { write } = operations('webhooks', '/api', { read: 'webhooks:manage', write: 'webhooks:manage' });

  routes.post(
    '/webhooks',
    write(
      'Create a webhook',
      DOCS.create,
      { operationId: 'createWebhook', querystring: NoQuery, body: NewWebhook, response: { 201: Webhooks } },
      { problems: [409] },
    ),
    async (request, reply) => {
      const principal = principalOf(request);
      const created = await hooks.createWebhook(db, guard, principal.siteId, request.body, credentialOf(principal));
      reply.code(201).header('location', `/api/webhooks/${created.id}`);
      return { data: [created] };
    },
  );
  routes.get(
    '/webhooks',
    write('List webhooks', DOCS.list, { operationId: 'listWebhooks', querystring: NoQuery, response: { 200: Webhooks } }),
    async (request) => ({
      data: await hooks.listWebhooks(db, principalOf(request).siteId),
    }),
  );
  routes.get(
    '/webhooks/:id',
    write('Get a webhook', DOCS.get, { operationId: 'getWebhook', params: IdParams, querystring: NoQuery, response: { 200: Webhooks } }),
    async (request, reply) => {
      const hook = await hooks.getWebhook(db, principalOf(request).siteId, request.params.id);
      // The tag If-Match on PATCH and DELETE is compared with, whatever the serializer writes.
      reply.header('etag', hooks.webhookTag(hook));
      return { data: [hook] };
    },
  );
  routes.patch(
    '/webhooks/:id',
    write(
      'Update a webhook',
      DOCS.update,
      { operationId: 'updateWebhook', params: IdParams, querystring: NoQuery, body: WebhookPatch, response: { 200: Webhooks } },
      { conditional: true },
    ),
    async (request, reply) => {
      const principal = principalOf(request);
      const hook = await hooks.updateWebhook(
        db,
        guard,
        principal.siteId,
        request.params.id,
        request.body,
        credentialOf(principal),
        writePreconditions(request),
      );
      reply.header('etag', hooks.webhookTag(hook));
      return { data: [hook] };
    },
  );
  routes.delete(
    '/webhooks/:id',
    write(
      'Delete a webhook',
      DOCS.delete,
      { operationId: 'deleteWebhook', params: IdParams, querystring: NoQuery, response: { 204: Deleted } },
      { conditional: true },
    ),
    async (request, reply) => {
      await hooks.deleteWebhook(db, principalOf(request).siteId, request.params.id, writePreconditions(request));
      return reply.code(204).send(null);
    },
  );
  routes.post(
    '/webhooks/:id/rotate-secret',
    write(
      'Rotate a webhook secret',
      DOCS.rotate,
      { operationId: 'rotateWebhookSecret', params: IdParams, querystring: NoQuery, response: { 200: Webhooks } },
      { problems: [409] },
    ),
    async (request) => ({ data: [await hooks.rotateSecret(db, principalOf(request).siteId, request.params.id)] }),
  );
  routes.get(
    '/webhooks/:id/deliveries',
    write('List webhook deliveries', DOCS.deliveries, {
      operationId: 'listWebhookDeliveries',
      params: IdParams,
      querystring: DeliveriesQuery,
      response: { 200: Deliveries },
    }),
    async (request) => ({
      data: await deliveryLog.listDeliveries(db, principalOf(request).siteId, request.params.id, request.query.pageSize ?? 50),
    }),
  );
  routes.post(
    '/webhooks/:id/deliveries/:delivery/retry',
    write(
      'Retry a webhook delivery',
      DOCS.retry,
      { operationId: 'retryWebhookDelivery', params: DeliveryParams, querystring: NoQuery, response: { 202: Deliveries } },
      { problems: [409] },
    ),
    async (request, reply) => {
      const { id, delivery } = request.params;
      reply.code(202);
      return { data: [await deliveryLog.retryDelivery(db, principalOf(request).siteId, id, delivery, retrySteps)] };
    },
  );
  routes.post(
    '/webhooks/:id/test',
    write(
      'Send a test delivery',
      DOCS.test,
      { operationId: 'testWebhook', params: IdParams, querystring: NoQuery, response: { 202: Deliveries } },
      { problems: [409] },
    ),
    async (request, reply) => {
      reply.code(202);
      return { data: [await deliveryLog.sendTest(db, principalOf(request).siteId, request.params.id)] };
    },
  );
}
