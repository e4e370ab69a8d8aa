import { isProblem } from './errors.js';
import type { Call, RequestOptions, Transport } from './http.js';
import type { ListPage, Versioned } from './types.js';

export interface WriteOptions extends RequestOptions {
  /** Write only if the record still has this ETag (from a read or an earlier write); 412 otherwise. */
  ifMatch?: string | undefined;
}

export interface ModifyOptions extends RequestOptions {
  /** How many times a change lost to a concurrent writer (412) is read and tried again (default 5). */
  attempts?: number;
}

type Query = Call['query'];

/** A record's ETag header; every successful read and write of a record carries one. */
function etagOf(response: Response): string {
  return response.headers.get('etag') ?? '';
}

/**
 * The operations pages and blogs share: list (a page at a time or as an async iterator over
 * cursor pages), read, create, update, delete, and `modify`, a read-change-write that re-reads
 * and tries again when another writer got there first.
 */
export class Records<Item, Full, Input extends object, Q extends object> {
  constructor(
    protected readonly transport: Transport,
    protected readonly path: string,
  ) {}

  /** One page of the list, with `meta` (`total` and `offset`, or `nextCursor` in cursor mode). */
  async list(query?: Q, options: RequestOptions = {}): Promise<ListPage<Item>> {
    const { body } = await this.transport.json<ListPage<Item>>({ method: 'GET', path: this.path, query: query as Query, ...options });
    return body;
  }

  /**
   * Every record that matches, in list order, fetched a page at a time in cursor mode (the same
   * cost on every page; records added or removed meanwhile neither repeat nor skip the others).
   * Stop early with `break`; `signal` ends the request in flight.
   */
  async *all(query?: Omit<Q, 'cursor' | 'offset'>, options: RequestOptions = {}): AsyncGenerator<Item, void, undefined> {
    let cursor = '';
    for (;;) {
      const page = await this.list({ ...query, cursor } as Q, options);
      yield* page.data;
      if (!page.meta.nextCursor) return;
      cursor = page.meta.nextCursor;
    }
  }

  /** One record and its ETag; a ProblemError `not-found` when there is none. */
  async get(id: number, options: RequestOptions = {}): Promise<Versioned<Full>> {
    const { body, response } = await this.transport.json<{ data: Full[] }>({ method: 'GET', path: `${this.path}/${id}`, ...options });
    return { data: body.data[0]!, etag: etagOf(response) };
  }

  /** Inserts a record (201): the record as stored, its ETag and its address (`Location`). */
  async create(input: Input, options: RequestOptions = {}): Promise<Versioned<Full> & { location: string }> {
    const { body, response } = await this.transport.json<{ data: Full[] }>({ method: 'POST', path: this.path, json: input, ...options });
    return { data: body.data[0]!, etag: etagOf(response), location: response.headers.get('location') ?? '' };
  }

  /** Changes the fields given, leaving the others as they are. */
  async update(id: number, changes: Input, options: WriteOptions = {}): Promise<Versioned<Full>> {
    const { ifMatch, ...rest } = options;
    const { body, response } = await this.transport.json<{ data: Full[] }>({
      method: 'PATCH',
      path: `${this.path}/${id}`,
      json: changes,
      headers: { 'if-match': ifMatch },
      ...rest,
    });
    return { data: body.data[0]!, etag: etagOf(response) };
  }

  async delete(id: number, options: WriteOptions = {}): Promise<void> {
    const { ifMatch, ...rest } = options;
    await this.transport.send({ method: 'DELETE', path: `${this.path}/${id}`, headers: { 'if-match': ifMatch }, ...rest });
  }

  /**
   * Read, change, write, safely: reads the record, asks `change` for the fields to write, and
   * writes them with `If-Match` set to the ETag read. When another writer changed the record in
   * between (412), it reads again and asks `change` again, up to `attempts` times; then the 412
   * is thrown. `change` may return undefined to write nothing.
   */
  async modify(
    id: number,
    change: (current: Full) => Input | undefined | Promise<Input | undefined>,
    options: ModifyOptions = {},
  ): Promise<Versioned<Full>> {
    const { attempts = 5, ...request } = options;
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(id, request);
      const changes = await change(current.data);
      if (changes === undefined) return current;
      try {
        return await this.update(id, changes, { ...request, ifMatch: current.etag });
      } catch (error) {
        if (!isProblem(error, 'precondition-failed') || attempt >= attempts) throw error;
      }
    }
  }
}
