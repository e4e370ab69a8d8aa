import { type ParseArgsConfig, parseArgs } from 'node:util';
import { findSite } from '../accounts/account.repository.js';
import type { Config } from '../config.js';
import type { ChangeLog } from '../content/history/change-log.js';
import type { Db } from '../db/database.js';
import { NotFoundError } from '../errors.js';

/** A mistake in how the command was called: exit code 2, as usual for command-line tools. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Parsed options; an option declared `multiple: true` gives an array. */
type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface CommandContext {
  readonly json: boolean;
  readonly values: OptionValues;
  readonly positionals: readonly string[];
  /** The configuration from the environment, the same as the server's (DATABASE_URL, DATA_DIR…). */
  config(): Config;
  /**
   * The configured database, opened once and closed after the command. Migrated first unless
   * asked not to, as the server does at start, so a command works on a fresh DATA_DIR.
   */
  db(options?: { migrate?: boolean }): Promise<Db>;
  /**
   * The change log a command's writes of pages and blogs append to, with the webhook outbox, as
   * the server's: a change made by a command is delivered like one made through the API.
   */
  changeLog(): Promise<ChangeLog>;
}

/** What a command prints: `json` with --json (on one line, an object or an array), `text` otherwise. */
export interface CommandResult {
  readonly json: object;
  readonly text: string;
}

/**
 * One row of the command table. Other modules (src/cli/oauth.commands.ts) export arrays of these
 * and the table in commands.ts lists them.
 */
export interface Command {
  /** The words after `cms`, e.g. `apikey create`. */
  readonly name: string;
  readonly summary: string;
  /** Options (besides --json and --help), in node:util parseArgs form. */
  readonly options?: NonNullable<ParseArgsConfig['options']>;
  /** Names of required positional arguments, in order, e.g. ['API_ID']. */
  readonly positionals?: readonly string[];
  /** The arguments as shown in help, e.g. `--site ID [--label L]`. */
  readonly usage?: string;
  /** Resolves with what to print; `undefined` means the command keeps running (serve). */
  run(ctx: CommandContext): Promise<CommandResult | undefined>;
}

/** The arguments after the command's words, read against its options plus --json and --help. */
export function parseArguments(command: Command, args: string[]): { values: OptionValues; positionals: string[] } {
  try {
    const parsed = parseArgs({
      args,
      options: { ...command.options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return { values: parsed.values as OptionValues, positionals: parsed.positionals };
  } catch (error) {
    // parseArgs explains unknown options and missing values well; they are the caller's mistake.
    throw new UsageError((error as Error).message);
  }
}

export function requiredOption(ctx: CommandContext, name: string): string {
  const value = ctx.values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalOption(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** Every value of an option declared `multiple: true`, in the order given; none is an empty list. */
export function repeatedOption(ctx: CommandContext, name: string): string[] {
  const value = ctx.values[name];
  return Array.isArray(value) ? value : [];
}

/** A website id from --site: a positive whole number, or a usage error (not a database lookup). */
export function siteIdOption(ctx: CommandContext): number {
  return idOf('site', requiredOption(ctx, 'site'), 'a website id');
}

/** An id option's value, when given: a positive whole number within the id columns' range. */
export function optionalIdOption(ctx: CommandContext, name: string, what: string): number | undefined {
  const raw = optionalOption(ctx, name);
  return raw === undefined ? undefined : idOf(name, raw, what);
}

function idOf(name: string, raw: string, what: string): number {
  if (!/^[1-9]\d{0,9}$/.test(raw) || Number(raw) > 2147483647)
    throw new UsageError(`--${name} must be ${what} (a positive whole number), got "${raw}"`);
  return Number(raw);
}

/**
 * The website whose records a command lists, from --site: one that exists, since an empty list
 * for a mistyped id would read as "none".
 */
export async function listedSiteOption(ctx: CommandContext): Promise<number> {
  const siteId = siteIdOption(ctx);
  if (!(await findSite((await ctx.db()).kysely, siteId))) throw new NotFoundError(`There is no website ${siteId}.`);
  return siteId;
}
