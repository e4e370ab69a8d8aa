/**
 * The console's addresses under a website: the path parameters its routes declare, and the links
 * its pages write. One place, so a link and the route it leads to cannot drift apart.
 */
import { type Static, Type } from 'typebox';
import { INT32_MAX } from '../content/shared/schemas.js';
import { NotFoundError } from '../errors.js';
import { CONSOLE_PATH } from './console.http.js';

// An id as the console writes it in its links: decimal, no leading zero. `01` or `1e0` would
// otherwise be coerced to 1, another address for the same website.
export const Id = Type.String({ pattern: '^[1-9][0-9]{0,9}$' });
export const SiteParams = Type.Object({ siteId: Id });
// A client id is printable ASCII: a `cl_…` id, the demo's, or the https URL of a metadata document
// (percent-encoded in the console's links).
export const ApplicationParams = Type.Object({ siteId: Id, clientId: Type.String({ pattern: '^[!-~]{1,2048}$' }) });
export const WebhookParams = Type.Object({ siteId: Id, hookId: Id });
export const DeliveryParams = Type.Object({ siteId: Id, hookId: Id, deliveryId: Id });

export type SiteRoute = Static<typeof SiteParams>;
export type ApplicationRoute = Static<typeof ApplicationParams>;
export type WebhookRoute = Static<typeof WebhookParams>;
export type DeliveryRoute = Static<typeof DeliveryParams>;

/** An id of a route's path as a number; past the integer columns' range it names nothing. */
export function idOf(id: string): number {
  const value = Number(id);
  if (value > INT32_MAX) throw new NotFoundError('There is no such website or page.');
  return value;
}

export const sitePath = (siteId: number, rest = '') => `${CONSOLE_PATH}/sites/${siteId}${rest}`;
export const applicationPath = (siteId: number, clientId: string, rest = '') =>
  sitePath(siteId, `/applications/${encodeURIComponent(clientId)}${rest}`);
/** A page's or blog's revisions; with `revision`, that one's JSON is shown. */
export const historyPath = (siteId: number, type: 'page' | 'blog', id: number, revision?: number) =>
  sitePath(siteId, `/history/${type}/${id}${revision === undefined ? '' : `?revision=${revision}`}`);
/** The website's Webhooks tab; with `hookId`, one hook's page (its deliveries) or, with `rest`, one of its actions. */
export const webhooksPath = (siteId: number, hookId?: number, rest = '') =>
  sitePath(siteId, `/webhooks${hookId === undefined ? '' : `/${hookId}${rest}`}`);
