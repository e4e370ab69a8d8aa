import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Db } from '../db/database.js';
import { createClient, listClients } from '../oauth/client.service.js';
import { listConnections, revokeConnection } from '../oauth/connection.service.js';
import { UsageError } from './command.js';

/** What a command needs from the CLI: an open, migrated database and somewhere to print. */
export interface CommandIo {
  readonly db: Db;
  readonly print: (text: string) => void;
}

/** A command takes the arguments after its two words (`cms client create …` → `['--name', …]`). */
export type Command = (io: CommandIo, argv: readonly string[]) => Promise<void>;

/** node:util parseArgs; a usage mistake is a UsageError (exit code 2). */
function parse<const T extends ParseArgsConfig>(config: T) {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** cms client create --name N --redirect-uri U [--redirect-uri U2 …] [--json] */
export const clientCreate: Command = async ({ db, print }, argv) => {
  const { values } = parse({
    args: [...argv],
    options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, json: { type: 'boolean' } },
  });
  if (!values.name) throw new UsageError('--name is required');
  const client = await createClient(db.kysely, { name: values.name, redirectUris: values['redirect-uri'] ?? [] });
  const result = { client_id: client.clientId, name: client.name, redirect_uris: client.redirectUris };
  print(
    values.json ? json(result) : `Created client ${result.client_id} (${result.name})\n  redirect URIs: ${result.redirect_uris.join(' ')}`,
  );
};

/** cms client list [--json] */
export const clientList: Command = async ({ db, print }, argv) => {
  const { values } = parse({ args: [...argv], options: { json: { type: 'boolean' } } });
  const clients = await listClients(db.kysely);
  if (values.json) return print(json(clients));
  print(clients.map((c) => `${c.client_id}\t${c.name}\t${c.source}\t${c.redirect_uris.join(' ')}`).join('\n') || 'No OAuth clients.');
};

/** cms connection list --site ID [--json] */
export const connectionList: Command = async ({ db, print }, argv) => {
  const { values } = parse({ args: [...argv], options: { site: { type: 'string' }, json: { type: 'boolean' } } });
  if (!values.site || !/^\d+$/.test(values.site)) throw new UsageError('--site must be a website id');
  const connections = await listConnections(db.kysely, Number(values.site));
  if (values.json) return print(json(connections));
  const lines = connections.map(
    (c) =>
      `${c.id}\t${c.status}\t${c.client_name} (${c.client_id})\t${c.user_email}\t${c.scopes.join(' ')}\tlast used ${c.last_used_at ?? 'never'}`,
  );
  print(lines.join('\n') || `No OAuth connections for website ${values.site}.`);
};

/** cms connection revoke ID [--json] */
export const connectionRevoke: Command = async ({ db, print }, argv) => {
  const { values, positionals } = parse({ args: [...argv], options: { json: { type: 'boolean' } }, allowPositionals: true });
  const [id] = positionals;
  if (!id || positionals.length > 1) throw new UsageError('give one connection id: cms connection revoke ID');
  await revokeConnection(db.kysely, id);
  print(values.json ? json({ id, status: 'revoked' }) : `Revoked connection ${id}: its access and refresh tokens no longer work.`);
};

/** Routing table for the CLI: `cms <group> <verb> …`. */
export const OAUTH_COMMANDS: Readonly<Record<string, Command>> = {
  'client create': clientCreate,
  'client list': clientList,
  'connection list': connectionList,
  'connection revoke': connectionRevoke,
};
