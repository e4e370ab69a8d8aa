import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyReply } from 'fastify';
import { buildTestApp, json } from '../../../test/helpers.js';
import { dialectOf } from '../../db/database.js';
import { getStoredPage } from '../pages/page.service.js';
import { type Listed, sendList } from './envelope.js';
import { type StoredItem, storedRecord } from './stored.js';

/** The body sendList hands the reply, with a reply that only records what it is given. */
function listBody(listed: Listed<StoredItem>): string {
  let sent: unknown;
  const reply = {
    header: () => reply,
    type: () => reply,
    send: (payload: unknown) => {
      sent = payload;
      return reply;
    },
  };
  sendList(reply as unknown as FastifyReply, listed);
  assert.ok(Buffer.isBuffer(sent));
  return sent.toString('utf8');
}

const RECORDS = [{ title: 'Café “quoted” ☕ 𝄞' }, { title: 'plain' }, { title: 'ünïcödé \\ "' }];

function items(bytes: (json: string) => number | undefined): StoredItem[] {
  return RECORDS.map((record, i) => {
    const stored = storedRecord(record);
    const counted = bytes(stored.record_json);
    return { id: i + 1, ...stored, ...(counted === undefined ? {} : { record_bytes: counted }) };
  });
}

const EXPECTED = JSON.stringify({ data: RECORDS, meta: { total: 3, offset: 0, pageSize: 200 } });
const window = { total: 3, offset: 0, pageSize: 200 } as const;

test('a list envelope is the records joined byte for byte, sized by the database or measured', () => {
  assert.equal(listBody({ records: items((text) => Buffer.byteLength(text)), ...window }), EXPECTED);
  assert.equal(listBody({ records: items(() => undefined), ...window }), EXPECTED);
});

test('texts read as bytes are copied as they are, beside texts read as strings', () => {
  const mixed = items((text) => Buffer.byteLength(text)).map((item, i) =>
    i % 2 === 0 ? { ...item, record_json: Buffer.from(item.record_json as string) } : item,
  );
  assert.equal(listBody({ records: mixed, ...window }), EXPECTED);
});

test('a byte count that disagrees with the text (too few, too many) is caught and the envelope measured again', () => {
  assert.equal(listBody({ records: items((text) => text.length), ...window }), EXPECTED);
  assert.equal(listBody({ records: items((text) => Buffer.byteLength(text) + 5), ...window }), EXPECTED);
});

test('a list of records with text outside ASCII reads back as JSON, on the database the suite runs', async (t) => {
  const { app, site, db } = await buildTestApp(t);
  const auth = { authorization: `Basic ${Buffer.from(`${site.apiId}:${site.apiKey}`).toString('base64')}` };
  for (const record of RECORDS) {
    const saved = await app.inject({ method: 'POST', url: '/api/page', headers: auth, payload: { page_usertitle: record.title } });
    assert.equal(saved.statusCode, 201, saved.body);
  }
  const listed = await app.inject({ method: 'GET', url: '/api/page?orderBy=id', headers: auth });
  assert.equal(listed.statusCode, 200);
  assert.deepEqual(
    json(listed).data.map((p: { page_usertitle: string }) => p.page_usertitle),
    RECORDS.map((r) => r.title),
  );
  assert.equal(Number(listed.headers['content-length']), listed.rawPayload.length);
  for (const page of json(listed).data as Array<{ page: number; page_usertitle: string }>) {
    const one = await app.inject({ method: 'GET', url: `/api/page/${page.page}`, headers: auth });
    assert.equal(one.statusCode, 200);
    assert.equal(json(one).data[0].page_usertitle, page.page_usertitle);
    assert.equal(Number(one.headers['content-length']), one.rawPayload.length);
  }
  // On SQLite a text with anything outside ASCII is read as its bytes, and one without as a string.
  if (dialectOf(db.kysely) === 'sqlite') {
    const [first, second] = json(listed).data as Array<{ page: number }>;
    assert.ok(Buffer.isBuffer((await getStoredPage(db.kysely, site.siteId, first!.page)).record_json));
    assert.equal(typeof (await getStoredPage(db.kysely, site.siteId, second!.page)).record_json, 'string');
  }
  // The write marked which texts have anything outside ASCII: those are read as bytes on SQLite.
  const flags = await db.kysely.selectFrom('pages').select(['page_usertitle', 'record_non_ascii']).orderBy('page').execute();
  assert.deepEqual(
    flags.map((f) => [f.page_usertitle, f.record_non_ascii]),
    RECORDS.map((r, i) => [r.title, [1, 0, 1][i]]),
  );
});
