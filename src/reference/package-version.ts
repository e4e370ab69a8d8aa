import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in the nearest package.json above `moduleUrl`: the API version the OpenAPI document
 * states (spec §9), kept in one place. Walking up finds the project root both from src/… and from
 * the build in dist/src/…, without counting directory levels.
 */
export function packageVersion(moduleUrl: string = import.meta.url): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
      if (typeof version !== 'string') throw new Error(`${file} has no version`);
      return version;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${moduleUrl}`);
    dir = parent;
  }
}
