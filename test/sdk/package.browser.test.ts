// The client as a new user gets it: `npm pack` of client/, installed from the tarball into a new
// project without the network (its one dependency packed from the repository's own install: npm's
// cache holds that package's tarball but not the registry's index of its versions),
// then the README's integrator quick start run from that project in Node.js and in headless
// Chromium, against a server process. The browser loads the package's own files through an import
// map, with no bundler: the browser entry must import nothing of Node.js.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { launchChromium, SCREENSHOTS } from '../browser.js';
import { tempDir } from '../helpers.js';
import { startOAuthProcess } from '../oauth.helpers.js';
import { feedEnd, freePort } from '../server-process.js';
import { examplesOf, fillIn, ROOT } from './examples.js';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The modules a module imports (static and dynamic), by specifier. */
function importsOf(code: string): string[] {
  return [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

test('the packed client: installed in a new project, the quick start runs in Node.js and in Chromium', async (t) => {
  const server = await startOAuthProcess(t, { twoSites: false });
  const values = { base: server.base, apiId: server.site.apiId, apiKey: server.site.apiKey };
  const basic = `Basic ${btoa(`${values.apiId}:${values.apiKey}`)}`;
  const quickstart = examplesOf('README.md').get('quickstart')!;
  const project = await tempDir(t);
  const { version } = JSON.parse(await readFile(path.join(ROOT, 'client/package.json'), 'utf8')) as { version: string };
  const tarball = path.join(project, `cms-content-api-client-${version}.tgz`);

  await t.test('npm pack builds the package; it holds its compiled entries and no sources or tests', async () => {
    const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', project], { cwd: path.join(ROOT, 'client') });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
    assert.equal(path.join(project, packed.filename), tarball);
    const files = packed.files.map((f) => f.path);
    for (const entry of ['package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/node.js', 'dist/node.d.ts'])
      assert.ok(files.includes(entry), entry);
    assert.deepEqual(
      files.filter((file) => !/^(package\.json|README\.md|dist\/[\w.-]+\.(js|d\.ts))$/.test(file)),
      [],
      'only the compiled entries',
    );
  });

  await t.test('it installs into a new project without the network', async () => {
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'new-project', private: true, type: 'module' }));
    const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', project, path.join(ROOT, 'node_modules/oauth4webapi')]);
    const [dependency] = JSON.parse(stdout.slice(stdout.indexOf('['))) as [{ filename: string }];
    await run(
      npm,
      ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', tarball, path.join(project, dependency.filename)],
      {
        cwd: project,
      },
    );
    const installed = JSON.parse(await readFile(path.join(project, 'node_modules/cms-content-api-client/package.json'), 'utf8'));
    assert.equal(installed.version, version);
  });

  await t.test('the browser entry imports nothing of Node.js', async () => {
    const dist = path.join(project, 'node_modules/cms-content-api-client/dist');
    const seen = new Set<string>();
    const visit = async (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const specifier of importsOf(await readFile(path.join(dist, file), 'utf8'))) {
        assert.ok(!specifier.startsWith('node:'), `${file} imports ${specifier}`);
        if (specifier.startsWith('.')) await visit(path.normalize(path.join(path.dirname(file), specifier)));
        else assert.equal(specifier, 'oauth4webapi', `${file} imports ${specifier}`);
      }
    };
    await visit('index.js');
  });

  await t.test('Node.js: the quick start', async () => {
    const since = await feedEnd(server.base, basic);
    await writeFile(path.join(project, 'quickstart.mjs'), fillIn(quickstart, values));
    const { stdout } = await run(process.execPath, ['quickstart.mjs'], { cwd: project });
    assert.match(stdout, /Hello from the SDK/);
    const changes = (await (await fetch(`${server.base}/api/changes?since=${since}`, { headers: { authorization: basic } })).json()) as {
      data: { op: string }[];
    };
    assert.deepEqual(
      changes.data.map((c: { op: string }) => c.op),
      ['create', 'update', 'delete'],
    );
  });

  await t.test('Chromium: the quick start in a page, the package loaded through an import map', async (t) => {
    const browser = await launchChromium(t);
    if (!browser) return;
    const since = await feedEnd(server.base, basic);
    const imports = {
      'cms-content-api-client': '/node_modules/cms-content-api-client/dist/index.js',
      oauth4webapi: '/node_modules/oauth4webapi/build/index.js',
    };
    const page = `<!doctype html><meta charset="utf-8"><title>Quick start</title><pre id="result">working</pre>
<script type="importmap">${JSON.stringify({ imports })}</script>
<script type="module">
const logs = [];
const log = console.log;
console.log = (...args) => { logs.push(args.join(' ')); log(...args); };
try {
  await import('/quickstart.mjs');
  document.getElementById('result').textContent = JSON.stringify({ logs });
} catch (error) {
  document.getElementById('result').textContent = JSON.stringify({ error: String(error) });
}
</script>`;
    // The project's folder over HTTP, as a static host serves an app (another origin than the API's).
    const port = await freePort();
    const files = createServer(async (request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (url.pathname === '/') return response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
      const file = path.join(project, path.normalize(url.pathname));
      if (!file.startsWith(project)) return response.writeHead(404).end();
      const body = await readFile(file).catch(() => undefined);
      if (body === undefined) return response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(body);
    });
    await new Promise<void>((resolve) => files.listen(port, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => files.close(() => resolve())));

    const tab = await browser.newPage();
    const failures: string[] = [];
    tab.on('pageerror', (error) => failures.push(String(error)));
    await tab.goto(`http://localhost:${port}/`);
    await tab.locator('#result').filter({ hasNotText: 'working' }).waitFor();
    const result = JSON.parse(String(await tab.locator('#result').textContent())) as { logs?: string[]; error?: string };
    await tab.screenshot({ path: path.join(SCREENSHOTS, 'sdk-quickstart.png') });
    assert.equal(result.error, undefined, `${result.error} ${failures.join(' ')}`);
    assert.ok(result.logs!.some((line) => line.includes('Hello from the SDK')));
    const changes = (await (await fetch(`${server.base}/api/changes?since=${since}`, { headers: { authorization: basic } })).json()) as {
      data: { op: string }[];
    };
    assert.deepEqual(
      changes.data.map((c: { op: string }) => c.op),
      ['create', 'update', 'delete'],
    );
  });
});
