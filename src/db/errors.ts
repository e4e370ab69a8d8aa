import { ConflictError, type FieldError, ValidationError } from '../errors.js';

/** A unique index refused a row, on either database. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** A foreign key refused a row (e.g. it names a row deleted meanwhile), on either database. */
export function isForeignKeyViolation(error: unknown): boolean {
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

export interface ConstraintRefusals {
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
