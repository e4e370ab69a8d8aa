/**
 * Query plans for tests that hold a query to an index: the SQL a repository function sends, and
 * what the database plans for it (SQLite's EXPLAIN QUERY PLAN details, PostgreSQL's EXPLAIN lines).
 */
import { type CompiledQuery, type KyselyPlugin, type RootOperationNode, sql } from 'kysely';
import type { Db } from '../src/db/database.js';
import type { DbHandle } from '../src/db/schema.js';

/** A handle that records every query sent through it, compiled as the database receives it. */
export function recording(db: Db): { handle: DbHandle; queries: CompiledQuery[] } {
  const queries: CompiledQuery[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => {
      queries.push(db.kysely.getExecutor().compileQuery(node as RootOperationNode, queryId));
      return node;
    },
    transformResult: async ({ result }) => result,
  };
  return { handle: db.kysely.withPlugin(plugin), queries };
}

/**
 * The plan's lines. On PostgreSQL sequential scans and sorts are switched off for the query (a
 * sort still happens where no index gives the order, only costed high): a test table is so small
 * that a scan, or another index and a sort, may win, depending on what the planner last learnt of
 * the table's size (an emptied test schema's tables, autovacuum), and the question is whether the
 * index can serve the query in its order.
 */
export async function planOf(db: Db, query: CompiledQuery): Promise<string[]> {
  if (db.dialect === 'sqlite') {
    const plan = await db.kysely.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` });
    return plan.rows.map((r) => r.detail);
  }
  return db.kysely.transaction().execute(async (tx) => {
    await sql`set local enable_seqscan = off`.execute(tx);
    await sql`set local enable_sort = off`.execute(tx);
    const plan = await tx.executeQuery<{ 'QUERY PLAN': string }>({ ...query, sql: `explain ${query.sql}` });
    return plan.rows.map((r) => r['QUERY PLAN'].trim());
  });
}
