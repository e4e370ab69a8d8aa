// Names for the generated document types (openapi.ts), as the client's users write them.
import type { components, operations } from './openapi.js';

type Schemas = components['schemas'];
type QueryOf<Operation extends keyof operations> = NonNullable<operations[Operation]['parameters']['query']>;

export type Page = Schemas['Page'];
export type PageListItem = Schemas['PageListItem'];
export type PageInput = Schemas['PageInput'];
export type Blog = Schemas['Blog'];
export type BlogListItem = Schemas['BlogListItem'];
export type BlogInput = Schemas['BlogInput'];
export type Change = Schemas['Change'];
export type Actor = Schemas['Actor'];
export type Revision = Schemas['Revision'];
export type Webhook = Schemas['Webhook'];
export type WebhookCreate = Schemas['WebhookCreate'];
export type WebhookUpdate = Schemas['WebhookUpdate'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type ListMeta = Schemas['ListMeta'];
export type Problem = Schemas['Problem'];

export type PageQuery = QueryOf<'listPages'>;
export type BlogQuery = QueryOf<'listBlogs'>;
export type ChangeQuery = QueryOf<'listChanges'>;

/** A record with the `ETag` it was read or written with: send it back as `ifMatch`. */
export interface Versioned<T> {
  data: T;
  etag: string;
}

/** One page of a list, as the API answers it. */
export interface ListPage<T> {
  data: T[];
  meta: ListMeta;
}

export type { components, operations, paths } from './openapi.js';
