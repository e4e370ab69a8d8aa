import type { Generated } from 'kysely';
import type { Timestamp } from '../db/time.js';

export interface SitesTable {
  id: Generated<number>;
  name: string;
  created_at: Timestamp;
}

export interface UsersTable {
  id: Generated<number>;
  /** Lower-cased; unique. */
  email: string;
  password_hash: string;
  created_at: Timestamp;
}

export interface SiteUsersTable {
  site_id: number;
  user_id: number;
  role: 'owner' | 'admin';
}

export interface ApiCredentialsTable {
  /** The public half, sent as the Basic user name or X-Api-Id. */
  api_id: string;
  site_id: number;
  label: string;
  /** SHA-256 of the key: the key is 256 random bits, so a fast hash is enough. */
  key_hash: string;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
  /** Where a blog posted with this credential and without `page` goes; null: nowhere (a 400). */
  default_page: number | null;
  /** The scopes it is limited to, space-separated; null: everything:write, every permission of its website. */
  scopes: string | null;
}
