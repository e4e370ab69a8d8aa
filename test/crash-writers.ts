/**
 * Concurrent writers for the SIGKILL test (crash.process.test.ts): each owns its pages and blogs
 * and writes them one request at a time, so what it expects of each record follows from the
 * answers it got. A write whose answer (status and whole body) arrived is acknowledged; the one
 * in flight when the process died is pending: after the restart it may or may not have happened.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { type FormPart, form } from './blog-fixtures.js';

export const sha256 = (bytes: Buffer | Uint8Array) => createHash('sha256').update(bytes).digest('hex');

// biome-ignore lint/suspicious/noExplicitAny: records are compared as JSON
type Row = Record<string, any>;

export interface Tracked {
  readonly kind: 'page' | 'blog';
  id: number;
  /** The record as the last acknowledged write returned it. */
  acked: Row;
}

interface Uploads {
  primary?: Buffer;
  additional: Buffer[];
}

interface Pending {
  readonly kind: 'page' | 'blog';
  /** Undefined for an insert. */
  readonly record: Tracked | undefined;
  readonly title: string;
  readonly uploads: Uploads;
}

export interface Shared {
  base: string;
  authorization: string;
  blogPage: number;
  images: readonly Buffer[];
  /** SHA-256 of the bytes each stored path was uploaded with, for every path a write was seen to create. */
  shaByPath: Map<string, string>;
  acknowledged: number;
  /** Told after each acknowledged write. */
  onAcknowledged?: () => void;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** Records the bytes of the paths a blog write created: a new info_img, and new list entries in upload order. */
export function learnPaths(before: Row | undefined, after: Row, uploads: Uploads, shaByPath: Map<string, string>): void {
  if (uploads.primary && after.info_img !== before?.info_img) shaByPath.set(after.info_img, sha256(uploads.primary));
  const added = (after.info_more_images as string[]).filter((p) => !(before?.info_more_images ?? []).includes(p));
  assert.equal(added.length, uploads.additional.length, 'each additional upload is listed once');
  for (const [i, p] of added.entries()) shaByPath.set(p, sha256(uploads.additional[i] as Buffer));
}

export class Writer {
  readonly records: Tracked[] = [];
  pending: Pending | undefined;
  private serial = 0;

  constructor(
    private readonly name: string,
    private readonly shared: Shared,
  ) {}

  /** Writes until a request fails to get an answer (the process was killed). */
  async run(): Promise<void> {
    for (;;) {
      const step = this.next();
      this.pending = step;
      let response: Response;
      let body: { data: Row[] };
      try {
        response = await this.send(step);
        body = (await response.json()) as { data: Row[] };
      } catch {
        return;
      }
      assert.ok(response.ok, `${response.status} ${JSON.stringify(body)}`);
      const record = body.data[0] as Row;
      this.accept(step, record);
      this.pending = undefined;
      this.shared.acknowledged++;
      this.shared.onAcknowledged?.();
    }
  }

  /** After a restart: the pending write happened or it did not, and nothing else changed. */
  async verify(get: (url: string) => Promise<Response>): Promise<void> {
    for (const tracked of this.records) {
      const response = await get(`/api/${tracked.kind}/${tracked.id}`);
      assert.equal(response.status, 200, `${this.name}: ${tracked.kind} ${tracked.id} is there`);
      const actual = ((await response.json()) as { data: Row[] }).data[0] as Row;
      if (this.pending?.record === tracked && !isDeepEqual(actual, tracked.acked)) {
        // The pending update was committed but its answer was lost: it is there whole.
        assert.equal(
          titleOf(actual),
          this.pending.title,
          `${this.name}: ${tracked.kind} ${tracked.id} is the acknowledged or the pending version`,
        );
        this.accept(this.pending, actual);
        continue;
      }
      assert.deepEqual(actual, tracked.acked, `${this.name}: ${tracked.kind} ${tracked.id} is exactly as acknowledged`);
    }
    this.pending = undefined;
  }

  private accept(step: Pending, record: Row): void {
    if (step.kind === 'blog') learnPaths(step.record?.acked, record, step.uploads, this.shared.shaByPath);
    if (step.record) step.record.acked = record;
    else this.records.push({ kind: step.kind, id: step.kind === 'page' ? record.page : record.info_id, acked: record });
  }

  private next(): Pending {
    const title = `${this.name} ${++this.serial} ${'x'.repeat(this.serial % 7)}`;
    const kind = Math.random() < 0.35 ? 'page' : 'blog';
    const own = this.records.filter((r) => r.kind === kind);
    const record = own.length > 0 && Math.random() < 0.5 ? pick(own) : undefined;
    if (kind === 'page') return { kind, record, title, uploads: { additional: [] } };
    const { images } = this.shared;
    const additional = Array.from({ length: Math.floor(Math.random() * 3) }, () => pick(images));
    return { kind, record, title, uploads: { ...(Math.random() < 0.7 ? { primary: pick(images) } : {}), additional } };
  }

  private async send(step: Pending): Promise<Response> {
    const { base, authorization, blogPage } = this.shared;
    const id = step.record ? { id: step.record.id } : {};
    if (step.kind === 'page') {
      const payload = { ...id, page_usertitle: step.title, page_html_content: `<p>${step.title}</p>` };
      return fetch(`${base}/api/page`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
    }
    // Updates sometimes empty the list: the images it held are dropped and removed after the commit.
    const dropList = step.record && Math.random() < 0.2 ? { info_more_images: [] } : {};
    const data = { ...id, ...(step.record ? {} : { page: blogPage }), ...dropList, info_title: step.title };
    const parts: [string, FormPart][] = [['data', JSON.stringify(data)]];
    if (step.uploads.primary) parts.push(['uploadPrimaryImage', { file: step.uploads.primary, filename: 'p.jpg' }]);
    for (const [i, file] of step.uploads.additional.entries()) parts.push(['uploadAdditionalImage', { file, filename: `a${i}.jpg` }]);
    const body = await form(parts);
    return fetch(`${base}/api/blog`, { method: 'POST', headers: { authorization, ...body.headers }, body: body.payload });
  }
}

function titleOf(record: Row): string {
  return record.page_usertitle ?? record.info_title;
}

function isDeepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}
