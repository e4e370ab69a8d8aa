import { readTypedTime } from '../db/time.js';
import { type Command, type CommandContext, optionalOption, requiredOption, UsageError } from './command.js';

const undo = () => import('../content/history/undo.service.js');

/** --since as stored times are written: `YYYY-MM-DD HH:MM:SS`, UTC. */
function sinceOption(ctx: CommandContext, required: boolean): string | undefined {
  const raw = required ? requiredOption(ctx, 'since') : optionalOption(ctx, 'since');
  if (raw === undefined) return undefined;
  const typed = readTypedTime(raw);
  if ('at' in typed) return typed.at;
  if (typed.invalid === 'date') throw new UsageError(`--since "${raw}" is not a date: there is no such day or time`);
  throw new UsageError(`--since must be "YYYY-MM-DD HH:MM:SS" (UTC), got "${raw}"`);
}

/** The website of connection `id`, and the id itself; a connection never made is an error (exit 1). */
async function connectionOf(ctx: CommandContext) {
  const id = ctx.positionals[0]!;
  const db = (await ctx.db()).kysely;
  const { connectionSite } = await undo();
  return { id, db, siteId: await connectionSite(db, id) };
}

const connectionChanges: Command = {
  name: 'connection changes',
  summary: 'What an OAuth connection changed (pages and blogs), newest first',
  usage: 'ID [--since "YYYY-MM-DD HH:MM:SS"]',
  positionals: ['ID'],
  options: { since: { type: 'string' } },
  async run(ctx) {
    const since = sinceOption(ctx, false);
    const { id, db, siteId } = await connectionOf(ctx);
    const { changesBy } = await undo();
    const changes = await changesBy(db, siteId, [id], since);
    const lines = changes.map((c) => `${c.at}\t${c.op}\t${c.type} ${c.id}\trevision ${c.revision}\tseq ${c.seq}`);
    return { json: { changes }, text: lines.join('\n') || `Connection ${id} changed nothing${since ? ` since ${since}` : ''}.` };
  },
};

const connectionUndo: Command = {
  name: 'connection undo',
  summary: 'Take back what an OAuth connection changed since a time; records others changed after it are left and listed',
  usage: 'ID --since "YYYY-MM-DD HH:MM:SS"',
  positionals: ['ID'],
  options: { since: { type: 'string' } },
  async run(ctx) {
    const since = sinceOption(ctx, true)!;
    const { id, db, siteId } = await connectionOf(ctx);
    const [{ undoChanges }, { cliActor }, { configuredStorage }] = await Promise.all([
      undo(),
      import('../content/history/change-log.js'),
      import('../storage/configured-storage.js'),
    ]);
    const images = configuredStorage(ctx.config(), db);
    const result = await undoChanges(
      { db, changeLog: await ctx.changeLog(), images },
      { siteId, connectionIds: [id], since },
      cliActor('connection undo'),
    );
    const named = (list: readonly { type: string; id: number }[]) => list.map((r) => `${r.type} ${r.id}`).join(', ') || 'none';
    const text = [
      `Restored: ${named(result.restored)}`,
      `Deleted: ${named(result.deleted)}`,
      `Already as it was: ${named(result.unchanged)}`,
      ...result.skipped.map((s) => `Left as it is: ${s.type} ${s.id}: ${s.reason}`),
    ].join('\n');
    return { json: result, text };
  },
};

/** The change history's commands, listed in the command table of ./commands.ts. */
export const historyCommands: readonly Command[] = [connectionChanges, connectionUndo];
