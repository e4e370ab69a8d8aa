import { ConfigError } from '../config-error.js';
import { AppError } from '../errors.js';
import { type CommandResult, UsageError } from './command.js';

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Where a run of the command line writes: the process's own streams, or a test's. */
export interface Output {
  write(text: string): unknown;
}

export function printResult(result: CommandResult, json: boolean, stdout: Output = process.stdout): void {
  stdout.write(json ? `${JSON.stringify(camelCased(result.json))}\n` : `${result.text}\n`);
}

/**
 * Every --json answer in one casing: keys are camelCase whatever the service's rows call them
 * (`client_id` → `clientId`), at any depth. Values are left alone.
 */
export function camelCased(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()), camelCased(inner)]),
  );
}

/** Prints the error on stderr (as {"error": …} with --json) and returns the exit code. */
export function printError(error: unknown, json: boolean, stderr: Output = process.stderr): number {
  const usage = error instanceof UsageError;
  const message = describe(error);
  if (json) stderr.write(`${JSON.stringify({ error: message })}\n`);
  else stderr.write(`cms: ${message}\n${usage ? "Run 'cms help' for usage.\n" : ''}`);
  return usage ? EXIT_USAGE : EXIT_FAILURE;
}

function describe(error: unknown): string {
  // These messages are written for the person at the terminal; a stack trace would only hide them.
  if (error instanceof UsageError || error instanceof AppError) return error.message;
  if (error instanceof ConfigError) return `configuration error: ${error.message}`;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string') return (error as Error).message || code;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** Rows as aligned columns under a header, for the human-readable lists. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '(none)';
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
