import { ConflictError, type FieldError, ValidationError } from '../errors.js';

/** A unique index refused a row, on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** A foreign key refused a row (e.g. it names a row deleted meanwhile), on either database. */
function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/**
 * PostgreSQL refused a text value it cannot store: the NUL character (U+0000), which a query
 * string (`%00`) or a JSON string (`\u0000`) can carry, gets 22021; 22P05 is a character the
 * database encoding lacks. The input is at fault (a 400), whichever query met it.
 */
export function isUnstorableText(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '22021' || code === '22P05';
}

interface ConstraintRefusals {
  /** The 409 detail when a unique index refuses the write. */
  readonly unique?: string;
  /** The field error (400) when a foreign key refuses it: the row it names is gone. */
  readonly foreignKey?: FieldError;
}

/**
 * Runs a repository write and turns a constraint the database enforced into the client's error:
 * the one place where a unique violation becomes a 409, on both databases. Anything else passes.
 */
export async function refusedAs<T>(write: Promise<T>, refusals: ConstraintRefusals): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (refusals.unique !== undefined && isUniqueViolation(error)) throw new ConflictError(refusals.unique);
    if (refusals.foreignKey && isForeignKeyViolation(error)) throw new ValidationError([refusals.foreignKey]);
    throw error;
  }
}

/** What a 503 for an unavailable database tells the client to wait (Retry-After): a failover takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** Node's socket errors: the database's address does not answer, or the connection broke. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * pg's own errors for a connection that is gone or could not be had in time; they carry no code.
 * Matched by message, since pg has no other mark for them.
 */
const PG_CONNECTION_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect|Query read timeout)/;

/**
 * The database cannot answer now, though the request itself may be fine: the connection was lost
 * (restart, failover, pg_terminate_backend, a proxy's restart), none could be opened, the server
 * is shutting down or starting (57P01–57P03), it has no connection slot left (53300), a
 * connection exception (class 08), or SQLite stayed busy past its timeout. The server rolls back
 * a transaction whose connection it lost, so the request changed nothing and may be sent again:
 * a 503. (Only a COMMIT whose answer was lost on the way can have taken effect unseen.)
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  if (typeof code === 'string') {
    // A socket's own failure names its system call; a client that went away while sending its
    // request (ECONNRESET, 'aborted') names none, and is no sign of the database.
    if (NETWORK_CODES.has(code) && typeof syscall === 'string') return true;
    if (code === 'SQLITE_BUSY' || code === '53300' || code.startsWith('08')) return true;
    if (code === '57P01' || code === '57P02' || code === '57P03') return true;
  }
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true;
  return PG_CONNECTION_MESSAGES.test(error.message);
}
