/** Each website's change numbers (migration 0016): the last handed out, and the highest pruned. */
export interface ChangeCountersTable {
  site_id: number;
  last_seq: number;
  pruned_seq: number;
}

/** One change of a page or blog: the change log, append-only (migration 0016). */
export interface ContentChangesTable {
  site_id: number;
  seq: number;
  type: 'page' | 'blog';
  record_id: number;
  op: 'create' | 'update' | 'delete' | 'restore';
  /** `YYYY-MM-DD HH:MM:SS`, UTC, as every stored time. */
  at: string;
  revision: number;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
  /** The OAuth application behind an `oauth` or `mcp` actor; null for the others. */
  client_id: string | null;
  /** The record as the API returned it after the change; for a delete, as it was before. */
  record_json: string;
}
