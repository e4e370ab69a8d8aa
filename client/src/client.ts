import { apiKey, bearer, type Credentials } from './auth.js';
import { Blogs } from './blogs.js';
import { Changes } from './feed.js';
import { type RequestOptions, Transport, type TransportOptions } from './http.js';
import { Records, type WriteOptions } from './records.js';
import type { Blog, Page, PageInput, PageListItem, PageQuery, Revision, Versioned } from './types.js';
import { Webhooks } from './webhooks.js';

export interface ClientOptions extends Omit<TransportOptions, 'credentials'> {
  /** `apiKey(id, key)`, `bearer(token)`, an OAuth session (`OAuthClient#session`), or your own Credentials. */
  auth?: Credentials | { apiId: string; apiKey: string } | { token: string };
}

/** A record's revisions: list, read one, restore one (a restore is a new change, revertible in turn). */
export class Revisions<Full> {
  constructor(
    private readonly transport: Transport,
    private readonly path: string,
  ) {}

  async list(id: number, options: RequestOptions = {}): Promise<Revision[]> {
    return (await this.transport.json<{ data: Revision[] }>({ method: 'GET', path: `${this.path}/${id}/revisions`, ...options })).body.data;
  }

  /** The record as that revision left it. */
  async get(id: number, revision: number, options: RequestOptions = {}): Promise<Revision & { record?: Full }> {
    const call = { method: 'GET' as const, path: `${this.path}/${id}/revisions/${revision}`, ...options };
    return (await this.transport.json<{ data: (Revision & { record?: Full })[] }>(call)).body.data[0]!;
  }

  async restore(id: number, revision: number, options: WriteOptions = {}): Promise<Versioned<Full>> {
    const { ifMatch, ...rest } = options;
    const call = {
      method: 'POST' as const,
      path: `${this.path}/${id}/revisions/${revision}/restore`,
      headers: { 'if-match': ifMatch },
      ...rest,
    };
    const { body, response } = await this.transport.json<{ data: Full[] }>(call);
    return { data: body.data[0]!, etag: response.headers.get('etag') ?? '' };
  }
}

function credentialsOf(auth: ClientOptions['auth']): Credentials | undefined {
  if (!auth) return undefined;
  if ('authorize' in auth) return auth;
  if ('token' in auth) return bearer(auth.token);
  return apiKey(auth.apiId, auth.apiKey);
}

/**
 * The content API's client. Every method takes `signal` and `timeoutMs`; errors are
 * ProblemErrors; reads (and deletes) are retried on 429 and 503 as `Retry-After` asks.
 */
export class CmsClient {
  readonly pages: Records<PageListItem, Page, PageInput, PageQuery> & { revisions: Revisions<Page> };
  readonly blogs: Blogs & { revisions: Revisions<Blog> };
  readonly changes: Changes;
  readonly webhooks: Webhooks;
  readonly transport: Transport;

  constructor(options: ClientOptions) {
    const { auth, ...rest } = options;
    this.transport = new Transport({ ...rest, credentials: credentialsOf(auth) });
    this.pages = Object.assign(new Records<PageListItem, Page, PageInput, PageQuery>(this.transport, '/api/page'), {
      revisions: new Revisions<Page>(this.transport, '/api/page'),
    });
    this.blogs = Object.assign(new Blogs(this.transport, '/api/blog'), { revisions: new Revisions<Blog>(this.transport, '/api/blog') });
    this.changes = new Changes(this.transport);
    this.webhooks = new Webhooks(this.transport);
  }
}
