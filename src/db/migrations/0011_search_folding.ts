import type { Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import { rebuildSearchText } from './0004_search_text.js';

/**
 * Rebuilds every page's and blog's `search_text` with accents folded (`foldForSearch`), as the
 * service now writes it and queries it. Before this, PostgreSQL's `simple` tsvector kept the
 * accents, so `cafe` did not find `Café` there while SQLite's unicode61 tokenizer did. The walk is
 * 0004's: by primary key in batches, with today's rules; SQLite's FTS tables follow through their
 * update triggers and PostgreSQL's `search_tsv` is generated from the column.
 */
export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await rebuildSearchText(db);
}
