/** A resource's fields are declared once as a catalogue; tables, schemas and references derive from it. */
export type FieldKind = 'serial' | 'int' | 'text' | 'bool' | 'timestamp';

export interface FieldSpec {
  readonly kind: FieldKind;
  readonly description: string;
}

/** How a field of each kind is stored: integers and booleans as integers, the rest as text. */
type StoredValue<K extends FieldKind> = K extends 'serial' | 'int' | 'bool' ? number : string;

export type RowOf<F extends Record<string, FieldSpec>> = { -readonly [K in keyof F]: StoredValue<F[K]['kind']> };
