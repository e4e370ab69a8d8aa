import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The nearest package.json above `moduleUrl`. Walking up finds the project root both from src/…
 * and from the build in dist/src/…, without counting directory levels.
 */
export function packageFileAbove(moduleUrl: string): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return file;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${moduleUrl}`);
    dir = parent;
  }
}

/** The version in that package.json: the API version the OpenAPI document states (spec §9), kept in one place. */
export function packageVersion(moduleUrl: string = import.meta.url): string {
  const file = packageFileAbove(moduleUrl);
  const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
  if (typeof version !== 'string') throw new Error(`${file} has no version`);
  return version;
}
