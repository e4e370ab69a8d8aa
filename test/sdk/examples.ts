// The code examples of docs/sdk.md and README.md, as the tests run them: each ```js block follows
// an `<!-- example: NAME -->` line, and runs as an ES module once its placeholders are replaced.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The named examples of a Markdown file; fails when a ```js block has no name, so none goes untested. */
export function examplesOf(file: string): Map<string, string> {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const found = new Map<string, string>();
  for (const match of text.matchAll(/<!-- example: ([\w-]+) -->\n```js\n([\s\S]*?)\n```/g)) found.set(match[1]!, `${match[2]!}\n`);
  assert.equal(
    found.size,
    text.split('```js\n').length - 1,
    `${file}: every \`\`\`js block needs an <!-- example: NAME --> line before it`,
  );
  return found;
}

/** The placeholders the examples use, and what stands for them in a test. */
export interface Placeholders {
  base: string;
  apiId: string;
  apiKey: string;
  clientId?: string;
}

export function fillIn(code: string, values: Placeholders, more: Record<string, string> = {}): string {
  let text = code
    .replaceAll("'http://localhost:8080'", JSON.stringify(values.base))
    .replaceAll("'API_ID'", JSON.stringify(values.apiId))
    .replaceAll("'API_KEY'", JSON.stringify(values.apiKey))
    .replaceAll("'CLIENT_ID'", JSON.stringify(values.clientId ?? ''));
  for (const [from, to] of Object.entries(more)) text = text.replaceAll(from, to);
  return text;
}

/** Runs an example as a module (importing the SDK as built into dist/), with console.log captured. */
export async function runExample(dir: string, name: string, code: string): Promise<{ exports: Record<string, unknown>; logs: string[] }> {
  const sdk = (entry: string) => JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/client/src', entry)).href);
  const text = code.replaceAll("'cms-content-api-client/node'", sdk('node.js')).replaceAll("'cms-content-api-client'", sdk('index.js'));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.mjs`);
  await writeFile(file, text);
  const logs: string[] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => void logs.push(args.map(String).join(' '));
  try {
    return { exports: (await import(pathToFileURL(file).href)) as Record<string, unknown>, logs };
  } finally {
    console.log = log;
  }
}
