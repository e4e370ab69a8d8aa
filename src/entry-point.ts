import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * Whether the module at `moduleUrl` is the script node was started with, so that importing it
 * (tests do) doesn't start anything. Through a symlink too: npm links `cms` into node_modules/.bin.
 */
export function isEntryPoint(moduleUrl: string): boolean {
  const script = process.argv[1];
  return script !== undefined && moduleUrl === pathToFileURL(realpathSync(script)).href;
}
