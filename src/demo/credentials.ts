/**
 * The demo's credentials file and its one-time print. Kept apart from the seeder so that the
 * server can print them without loading the services the seeder needs.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-files.js';

/** What a person (or a test) needs to try the demo; written to DATA_DIR/demo-credentials.json. */
export interface DemoCredentials {
  url: string;
  siteId: number;
  siteName: string;
  owner: { email: string; password: string };
  apiId: string;
  apiKey: string;
  curl: string;
  /** The demo OAuth client: public, PKCE, with these exact redirect URIs. */
  oauthClient: { clientId: string; redirectUris: string[] };
}

export function demoCredentialsFile(config: Pick<Config, 'dataDir'>): string {
  return path.join(config.dataDir, 'demo-credentials.json');
}

export async function writeCredentialsFile(config: Pick<Config, 'dataDir'>, credentials: DemoCredentials): Promise<void> {
  const file = demoCredentialsFile(config);
  await mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
  // Written under a temporary name and renamed, so a reader never sees half a file; 0600 because
  // it holds a password and an API key.
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
  await rename(temporary, file);
}

export async function readDemoCredentials(config: Pick<Config, 'dataDir'>): Promise<DemoCredentials | undefined> {
  try {
    return JSON.parse(await readFile(demoCredentialsFile(config), 'utf8')) as DemoCredentials;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The one-time print of a first start: the only place the password and key are ever shown. */
export function demoBanner(credentials: DemoCredentials, file: string): string {
  return [
    '',
    '==================================================================',
    ` Demo website "${credentials.siteName}" created (site ${credentials.siteId})`,
    ` Service:      ${credentials.url}`,
    ` Owner login:  ${credentials.owner.email} / ${credentials.owner.password}`,
    ` API ID:       ${credentials.apiId}`,
    ` API key:      ${credentials.apiKey}`,
    ' List the pages:',
    `   ${credentials.curl}`,
    ` OAuth client: ${credentials.oauthClient.clientId} (redirect URIs: ${credentials.oauthClient.redirectUris.join(' ')})`,
    ` Saved in ${file} (readable only by you).`,
    '==================================================================',
    '',
  ].join('\n');
}
