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
