// Other generators work on the OpenAPI document too: the checked-in code of openapi-typescript
// (the SDK's types), @hey-api/openapi-ts and orval is what the served document generates today,
// the hey-api and orval clients typecheck with 0 errors, and each does create, read, list,
// update, delete and a multipart blog write against a real server process.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { image } from '../blog-fixtures.js';
import { startOAuthProcess } from '../oauth.helpers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const GENERATE = pathToFileURL(path.join(ROOT, 'client/scripts/generate.mjs')).href;

interface Generator {
  OUTPUTS: { types: string; heyApi: string; orval: string };
  DOCUMENT_ORIGIN: string;
  generate(document: unknown, root: string): Promise<void>;
}

/** Every file under dir, relative to it, sorted. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

test('generated clients', async (t) => {
  const server = await startOAuthProcess(t, { twoSites: false });
  const scratch = await mkdtemp(path.join(tmpdir(), 'cms-generated-'));
  t.after(() => rm(scratch, { recursive: true, force: true }));
  const { OUTPUTS, DOCUMENT_ORIGIN, generate } = (await import(GENERATE)) as Generator;

  await t.test('the checked-in code is what the served document generates (else: node client/scripts/generate.mjs)', async () => {
    const served = await (await fetch(`${server.base}/api/openapi.json`)).text();
    // The checked-in code is made for scripts/openapi-document.mjs's address; this server's is its own.
    const document = JSON.parse(served.replaceAll(server.base, DOCUMENT_ORIGIN));
    await generate(document, scratch);
    assert.equal(
      await readFile(path.join(scratch, OUTPUTS.types), 'utf8'),
      await readFile(path.join(ROOT, OUTPUTS.types), 'utf8'),
      `${OUTPUTS.types} differs`,
    );
    for (const folder of [OUTPUTS.heyApi, OUTPUTS.orval]) {
      const files = await filesUnder(path.join(ROOT, folder));
      assert.deepEqual(await filesUnder(path.join(scratch, folder)), files, `${folder}: other files`);
      for (const file of files) {
        const [fresh, kept] = await Promise.all([
          readFile(path.join(scratch, folder, file), 'utf8'),
          readFile(path.join(ROOT, folder, file), 'utf8'),
        ]);
        assert.equal(fresh, kept, `${folder}/${file} differs`);
      }
    }
  });

  const out = path.join(scratch, 'js');
  await t.test('the hey-api and orval clients, and the code using them, typecheck with 0 errors', async () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', path.join(ROOT, 'generated-clients'), '--outDir', out]).catch(
      (error: { stdout: string; code: number }) => error,
    );
    assert.equal('code' in result ? result.code : 0, 0, `tsc -p generated-clients:\n${result.stdout}`);
  });

  for (const generator of ['hey-api', 'orval']) {
    await t.test(
      `${generator}: create, read, list, update with If-Match, delete, and a blog with an image in one multipart request`,
      async () => {
        const { run } = (await import(pathToFileURL(path.join(out, `${generator}.scenario.js`)).href)) as {
          run(target: unknown): Promise<{
            created: { id: number; title: string; etag: string };
            read: string;
            listed: boolean;
            updated: string;
            staleUpdateStatus: number;
            deleteStatus: number;
            afterDeleteStatus: number;
            blog: { id: number; image: string; width: number };
          }>;
        };
        const seen = await run({
          baseUrl: server.base,
          apiId: server.site.apiId,
          apiKey: server.site.apiKey,
          png: await image('png', 40, 30),
        });
        assert.equal(seen.created.title, `Made by ${generator}`);
        assert.match(seen.created.etag, /^"/);
        assert.equal(seen.read, `Made by ${generator}`);
        assert.ok(seen.listed, 'the new page is in the list');
        assert.equal(seen.updated, `Changed by ${generator}`);
        assert.equal(seen.staleUpdateStatus, 412);
        assert.equal(seen.deleteStatus, 204);
        assert.equal(seen.afterDeleteStatus, 404);
        assert.match(seen.blog.image, /^\/images\/[0-9a-f]{32}\.png$/);
        assert.equal(seen.blog.width, 40);
        const served = await fetch(`${server.base}${seen.blog.image}`);
        assert.equal(served.headers.get('content-type'), 'image/png');
      },
    );
  }
});
