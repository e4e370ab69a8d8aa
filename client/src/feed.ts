import type { RequestOptions, Transport } from './http.js';
import type { Change, ChangeQuery } from './types.js';

export interface FollowOptions {
  /** Where to start: a cursor stored from an earlier run (`onCursor`); absent, the oldest change kept. */
  since?: string | undefined;
  /** Only changes of `page`s or of `blog`s. */
  type?: 'page' | 'blog';
  /** How long each request waits for a change when there is none, in seconds (0–30, default 30). */
  wait?: number;
  pageSize?: number;
  /**
   * Called with the cursor after every change of an answer has been handed out (and after each
   * empty long-poll): store it, and pass it as `since` to resume after a restart. Changes are
   * handed out at least once: one given out before a crash whose cursor was not stored comes again.
   */
  onCursor?: (cursor: string) => void | Promise<void>;
  /** Ends the feed: the request in flight is aborted and the iterator finishes without an error. */
  signal?: AbortSignal;
}

/** The change feed (`GET /api/changes`): what was created, changed or deleted, in order. */
export class Changes {
  constructor(private readonly transport: Transport) {}

  /** One answer of the feed: its changes and the cursor to read on from. */
  async list(
    query: ChangeQuery = {},
    options: RequestOptions = {},
  ): Promise<{ data: Change[]; meta: { pageSize: number; nextCursor: string } }> {
    const wait = Number(query.wait ?? 0);
    const { body } = await this.transport.json<{ data: Change[]; meta: { pageSize: number; nextCursor: string } }>({
      method: 'GET',
      path: '/api/changes',
      query: query as Record<string, string | number | undefined>,
      ...options,
      // A long-poll is held up to `wait` seconds: the request's limit starts after it.
      timeoutMs: (options.timeoutMs ?? this.transport.timeoutMs) + wait * 1000,
    });
    return body;
  }

  /**
   * Every change from `since` on, for as long as you iterate: reads what is there, then
   * long-polls for what comes next, resuming each request from the last cursor. A
   * `cursor-expired` problem (410) means changes were lost to the history's retention: read your
   * records in full again and follow from a fresh start.
   */
  async *follow(options: FollowOptions = {}): AsyncGenerator<Change, void, undefined> {
    const { signal, onCursor, wait = 30, pageSize, type } = options;
    let since = options.since;
    while (!signal?.aborted) {
      let page: Awaited<ReturnType<Changes['list']>>;
      try {
        page = await this.list({ since, wait, pageSize, type }, { signal });
      } catch (error) {
        if (signal?.aborted) return;
        throw error;
      }
      for (const change of page.data) {
        yield change;
        if (signal?.aborted) return;
      }
      since = page.meta.nextCursor;
      await onCursor?.(since);
    }
  }
}
