#!/usr/bin/env node
// First: on an unsupported Node.js it stops before anything else loads.
import '../node-version.js';
import { type Config, loadConfig } from '../config.js';
import { createDatabase, type Db } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { isEntryPoint } from '../entry-point.js';
import { type Command, type CommandContext, type CommandResult, parseArguments, UsageError } from './command.js';
import { COMMANDS } from './commands.js';
import { type Output, printError, printResult } from './output.js';

const help: Command = {
  name: 'help',
  summary: 'Show this help',
  async run() {
    return helpResult();
  },
};

const ALL: readonly Command[] = [...COMMANDS, help];

function usageLine(command: Command): string {
  return ['cms', command.name, command.usage, '[--json]'].filter(Boolean).join(' ');
}

function helpResult(): CommandResult {
  const width = Math.max(...ALL.map((c) => `${c.name} ${c.usage ?? ''}`.length));
  return {
    json: { commands: ALL.map((c) => ({ name: c.name, usage: usageLine(c), summary: c.summary })) },
    text: [
      'cms: command line of the content API. It reads the same environment as the server',
      '(DATABASE_URL, DATA_DIR, …) and applies pending migrations before it runs.',
      '',
      'Usage: cms <command> [options] [--json]',
      '',
      ...ALL.map((c) => `  ${`${c.name} ${c.usage ?? ''}`.padEnd(width)}  ${c.summary}`),
      '',
      '--json prints one JSON object on stdout; errors go to stderr, as {"error": "…"} with --json.',
      'Exit codes: 0 done, 1 failed, 2 wrong usage.',
    ].join('\n'),
  };
}

/** The command named by the leading words of argv (`apikey create --site 1` → apikey create). */
function findCommand(argv: readonly string[]): { command: Command; rest: string[] } {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-') || words.length === 2) break;
    words.push(arg);
  }
  if (words.length === 0) return { command: help, rest: [] };
  for (let n = words.length; n > 0; n--) {
    const command = ALL.find((c) => c.name === words.slice(0, n).join(' '));
    if (command) return { command, rest: argv.slice(n) };
  }
  const group = ALL.filter((c) => c.name.startsWith(`${words[0]} `)).map((c) => c.name.split(' ')[1]);
  if (group.length > 0) throw new UsageError(`"${words.join(' ')}": use cms ${words[0]} ${group.join('|')}`);
  throw new UsageError(`unknown command "${words[0]}"`);
}

/** What one run reads and writes besides its arguments: the process's own, unless a test gives its own. */
interface CliIo {
  readonly env: NodeJS.ProcessEnv;
  readonly stdout: Output;
  readonly stderr: Output;
}

/** Runs one command; resolves with the exit code, or undefined while a command keeps running (serve). */
export async function main(
  argv: readonly string[],
  io: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr },
): Promise<number | undefined> {
  const json = argv.includes('--json');
  let db: Db | undefined;
  let config: Config | undefined;
  try {
    const { command, rest } = findCommand(argv);
    const { values, positionals } = parseArguments(command, rest);
    if (values.help) {
      printResult(
        { json: { usage: usageLine(command), summary: command.summary }, text: `Usage: ${usageLine(command)}\n${command.summary}` },
        json,
        io.stdout,
      );
      return 0;
    }
    const wanted = command.positionals ?? [];
    if (positionals.length !== wanted.length) {
      throw new UsageError(
        `usage: ${usageLine(command)}${positionals.length > wanted.length ? ` (unexpected "${positionals[wanted.length]}")` : ''}`,
      );
    }
    const ctx: CommandContext = {
      json,
      values,
      positionals,
      config: () => {
        config ??= loadConfig(io.env);
        return config;
      },
      async db({ migrate = true } = {}) {
        if (!db) {
          db = createDatabase(ctx.config().databaseUrl, { synchronous: ctx.config().sqliteSynchronous, mmapMB: ctx.config().sqliteMmapMB });
          if (migrate) await migrateToLatest(db);
        }
        return db;
      },
      async changeLog() {
        // Loaded only by the commands that write records, as every command's modules are.
        const { changeLogWithWebhooks } = await import('../webhooks/webhook.outbox.js');
        return changeLogWithWebhooks();
      },
    };
    const result = await command.run(ctx);
    if (result === undefined) return undefined;
    printResult(result, json, io.stdout);
    return 0;
  } catch (error) {
    return printError(error, json, io.stderr);
  } finally {
    await db?.close();
  }
}

if (isEntryPoint(import.meta.url)) {
  const code = await main(process.argv.slice(2));
  // exitCode rather than exit(): stdout may still be draining into a pipe.
  if (code !== undefined) process.exitCode = code;
}
