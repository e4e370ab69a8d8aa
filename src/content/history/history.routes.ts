import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { principalOf } from '../../auth/authenticate.js';
import { writePreconditions } from '../../http/representation.js';
import { BlogWritten } from '../blogs/blog.schemas.js';
import { PageWritten } from '../pages/page.schemas.js';
import { NoQuery, operations, sendSaved } from '../shared/envelope.js';
import { IdParams, MAX_PAGE_SIZE } from '../shared/schemas.js';
import { actorOf, type RecordType } from './change-log.js';
import { readFeed, sinceOf } from './feed.service.js';
import { FeedWatch } from './feed-watch.js';
import { getRevision, type HistoryDeps, listRevisions, restoreRevision } from './revisions.service.js';

/** Longest a long-poll is held, in seconds. */
const MAX_WAIT_SECONDS = 30;

const Actor = Type.Object(
  {
    kind: Type.Union(
      [
        Type.Literal('api-key'),
        Type.Literal('oauth'),
        Type.Literal('mcp'),
        Type.Literal('console'),
        Type.Literal('cli'),
        Type.Literal('system'),
      ],
      {
        description:
          'api-key (an API credential), oauth (an OAuth connection), mcp (an OAuth connection through /mcp), console, cli, system',
      },
    ),
    id: Type.String({ description: 'The API ID, the OAuth connection id, the console user id, the operating system user of the CLI' }),
    name: Type.String({ description: "The credential's label, the OAuth application's name, the console user's e-mail, the CLI command" }),
  },
  { $id: 'Actor', additionalProperties: false },
);

const Op = Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete'), Type.Literal('restore')]);

const ChangeEntry = Type.Object(
  {
    seq: Type.Integer({ description: "The change's number: increasing within the website" }),
    type: Type.Union([Type.Literal('page'), Type.Literal('blog')]),
    id: Type.Integer({ description: 'The page or blog id' }),
    op: Op,
    at: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    actor: Actor,
    revision: Type.Integer({ description: 'The revision of the record this change made: GET …/revisions/<revision>' }),
  },
  { $id: 'Change', additionalProperties: false },
);

const ChangesQuery = Type.Object(
  {
    since: Type.Optional(
      Type.String({ maxLength: 100, description: 'A cursor from meta.nextCursor: the changes after it. Absent: from the oldest kept.' }),
    ),
    type: Type.Optional(Type.Union([Type.Literal('page'), Type.Literal('blog')], { description: 'Only changes of pages, or of blogs' })),
    id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Only changes of this record (with type)' })),
    pageSize: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: 200, description: 'Entries per answer, 1–999 (200)' }),
    ),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WAIT_SECONDS,
        description: `Long-poll: when no change follows the cursor, hold the answer up to this many seconds (at most ${MAX_WAIT_SECONDS}) until one commits`,
      }),
    ),
  },
  { additionalProperties: false },
);

const ChangesListing = Type.Object(
  {
    data: Type.Array(ChangeEntry, { maxItems: MAX_PAGE_SIZE }),
    meta: Type.Object(
      {
        pageSize: Type.Integer(),
        nextCursor: Type.String({ description: 'Always present: send it as since to read on; store it to poll from there' }),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'ChangeList', additionalProperties: false },
);

const Revision = Type.Object(
  {
    revision: Type.Integer(),
    seq: Type.Integer(),
    op: Op,
    at: Type.String({ description: 'YYYY-MM-DD HH:MM:SS, UTC' }),
    actor: Actor,
  },
  { $id: 'Revision', additionalProperties: false },
);

const RevisionsListing = Type.Object({ data: Type.Array(Revision) }, { $id: 'RevisionList', additionalProperties: false });

const RevisionParams = Type.Object(
  {
    id: IdParams.properties.id,
    revision: Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Revision number' }),
  },
  { additionalProperties: false },
);

const DOCS = {
  changes: [
    "The website's changes to pages and blogs, oldest first: what a syncing client reads instead of polling whole lists. Each entry names the record (type, id), what happened (op: create, update, delete, restore), when, who (actor) and the revision it made.",
    '`meta.nextCursor` is always present, at the end of the feed too: store it and send it back as `since` to get what changed after. Every change that was acknowledged is seen exactly once, in seq order, whichever node committed it.',
    '`wait=N` (at most 30 s) holds an answer that would be empty until a change commits. A cursor older than the history kept (HISTORY_DAYS) is a 410: read the records again in full, then follow the feed from a cursor of a request without `since`.',
  ].join('\n\n'),
  revisions: (noun: string) =>
    `The ${noun}'s revisions, newest first: one per change, deletes included. A deleted ${noun}'s revisions stay readable and restorable under the same id.`,
  revision: (noun: string) => `The ${noun} as the API returned it after that change (for a delete, as it was before it).`,
  restore: (noun: string) =>
    `Makes that revision the ${noun}'s current content: a new revision, and a change with op restore. A deleted ${noun} comes back under its id (201). ` +
    (noun === 'page' ? 'A page whose parent is gone is a 409 that names the parent. ' : 'A blog whose page is gone is a 409. ') +
    'Send `If-Match: <ETag>` to restore only if nobody changed it since you read it (412 otherwise).',
};

const JSON_TYPE = 'application/json; charset=utf-8';

/** The feed and revisions are read with history:read; a restore needs history:restore. */
const HISTORY_SCOPES = { read: 'history:read', write: 'history:restore' } as const;

/** The change feed and the revisions of pages and blogs, mounted at `prefix` (/api, and /webapps/api kept out of the OpenAPI document). */
export async function registerHistory(app: FastifyInstance, { deps, prefix }: { deps: HistoryDeps; prefix: string }): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  const { read } = operations('changes', prefix, HISTORY_SCOPES);
  let closing = false;
  const watch = new FeedWatch(deps.db);
  // Before the server waits for requests in flight to end: a held long-poll answers now.
  app.addHook('preClose', async () => {
    closing = true;
    watch.close();
  });

  routes.get(
    '/changes',
    read(
      'List changes',
      DOCS.changes,
      { operationId: 'listChanges', querystring: ChangesQuery, response: { 200: ChangesListing } },
      { problems: [410] },
    ),
    async (request, reply) => {
      const { since, type, id, pageSize = 200, wait = 0 } = request.query;
      const { siteId } = principalOf(request);
      const query = { since: sinceOf(since, siteId), type, id, pageSize };
      const gone = () => closing || request.raw.destroyed || reply.raw.destroyed;
      const feed = await readFeed(deps.db, siteId, query, wait, gone, watch);
      // A held answer may bring changes made after its credentials were revoked (or expired)
      // while it waited: they are proved again before it is sent, and a 401 it is then.
      if (wait > 0) await request.authenticateAgain();
      return { data: feed.entries, meta: { pageSize, nextCursor: feed.nextCursor } };
    },
  );

  for (const [type, written] of [
    ['page', PageWritten],
    ['blog', BlogWritten],
  ] as const) {
    const ops = operations(type === 'page' ? 'pages' : 'blogs', prefix, HISTORY_SCOPES);
    const noun: RecordType = type;
    const Noun = type === 'page' ? 'Page' : 'Blog';
    routes.get(
      `/${type}/:id/revisions`,
      ops.read(`List a ${type}'s revisions`, DOCS.revisions(noun), {
        operationId: `list${Noun}Revisions`,
        params: IdParams,
        querystring: NoQuery,
        response: { 200: RevisionsListing },
      }),
      async (request) => {
        const entries = await listRevisions(deps.db, principalOf(request).siteId, noun, request.params.id);
        return { data: entries.map(({ revision, seq, op, at, actor }) => ({ revision, seq, op, at, actor })) };
      },
    );
    routes.get(
      `/${type}/:id/revisions/:revision`,
      ops.read(`Get a revision of a ${type}`, DOCS.revision(noun), {
        operationId: `get${Noun}Revision`,
        params: RevisionParams,
        querystring: NoQuery,
        response: { 200: written },
      }),
      async (request, reply) => {
        const { id, revision } = request.params;
        const text = await getRevision(deps.db, principalOf(request).siteId, noun, id, revision);
        return sendText(reply, `{"data":[${text}]}`);
      },
    );
    routes.post(
      `/${type}/:id/revisions/:revision/restore`,
      ops.write(
        `Restore a revision of a ${type}`,
        DOCS.restore(noun),
        { operationId: `restore${Noun}Revision`, params: RevisionParams, querystring: NoQuery, response: { 200: written, 201: written } },
        { problems: [409], conditional: true },
      ),
      async (request, reply) => {
        const principal = principalOf(request);
        const { id, revision } = request.params;
        const saved = await restoreRevision(
          deps.db,
          deps.changeLog,
          principal.siteId,
          noun,
          id,
          revision,
          actorOf(principal),
          writePreconditions(request),
        );
        return sendSaved(reply, saved as never, () => `${prefix}/${type}/${id}`);
      },
    );
  }
}

function sendText(reply: FastifyReply, body: string): FastifyReply {
  return reply.type(JSON_TYPE).send(body);
}
