import type { Command } from './command.js';

/**
 * The OAuth engineer's commands (./oauth.commands.ts) as rows of the CLI's command table. They
 * parse their own arguments and print themselves. Loaded only when one runs: they pull in
 * oidc-provider, slow to load and noisy on Node 20, which the other commands don't need.
 */
const OAUTH_ROWS: ReadonlyArray<{ name: string; summary: string; usage?: string }> = [
  {
    name: 'client create',
    summary: 'Register an OAuth client (public, PKCE); prints its client_id',
    usage: '--name NAME --redirect-uri URI [--redirect-uri URI …]',
  },
  { name: 'client list', summary: 'List the OAuth clients' },
  { name: 'connection list', summary: "List a website's OAuth connections: app, user, scopes, state", usage: '--site ID' },
  { name: 'connection revoke', summary: 'Revoke an OAuth connection: its tokens stop working at once', usage: 'ID' },
];

export const oauthCommands: readonly Command[] = OAUTH_ROWS.map((row) => ({
  ...row,
  parsesOwnArguments: true,
  async run(ctx) {
    const { OAUTH_COMMANDS } = await import('./oauth.commands.js');
    const command = OAUTH_COMMANDS[row.name];
    if (!command) throw new Error(`oauth.commands.ts has no "${row.name}"`);
    const printed: string[] = [];
    await command({ db: await ctx.db(), print: (text) => printed.push(text) }, ctx.argv);
    return { output: printed.join('\n') };
  },
}));
