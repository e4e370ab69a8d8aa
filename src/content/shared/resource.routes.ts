import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { principalOf } from '../../http/authenticate.js';
import { entityTag, ifMatchCheck } from '../../http/etag.js';
import { DEFAULT_PAGE_SIZE, IdParams, pageSizeOf } from './schemas.js';

export interface Listed<R> {
  records: R[];
  total: number;
  offset: number;
  pageSize: number;
}

/** What the generic routes need from a resource (pages, blogs): its schemas and its service. */
export interface ResourceDefinition<R, Q> {
  /** Path under the prefix, e.g. `/page`. */
  readonly path: string;
  /** Singular noun for texts: `page`. */
  readonly noun: string;
  readonly tag: string;
  readonly schemas: {
    readonly record: TSchema;
    readonly list: TSchema;
    readonly written: TSchema;
    readonly query: TSchema;
    readonly write: TSchema;
    /** Query string of POST (e.g. blog migrateMode); absent: none is declared. */
    readonly writeQuery?: TSchema;
    /**
     * A multipart/form-data POST form, besides JSON. It documents the form (references, OpenAPI);
     * the resource's `save` streams and validates it, since files are never buffered for validation.
     */
    readonly form?: TSchema;
  };
  readonly docs: {
    readonly list: string;
    readonly get: string;
    readonly post: string;
    readonly delete: string;
  };
  /** Turns the validated query string into the service's query (pageSize already normalised). */
  list(siteId: number, query: Q & { offset: number; pageSize: number }): Promise<Listed<R>>;
  get(siteId: number, id: number): Promise<R>;
  save(siteId: number, request: FastifyRequest, precondition: ((current: R) => void) | undefined): Promise<{ record: R; created: boolean }>;
  remove(siteId: number, id: number, precondition: ((current: R) => void) | undefined): Promise<void>;
  idOf(record: R): number;
}

/**
 * GET list, GET by id, POST insert/update and DELETE for one resource, as DESIGN §3 describes.
 * `prefix` is where the routes are mounted; the /webapps alias is kept out of the OpenAPI document.
 */
export function registerResourceRoutes<R, Q extends { pageSize?: number | string; offset?: number }>(
  app: FastifyInstance,
  prefix: string,
  def: ResourceDefinition<R, Q>,
): void {
  // Records are built field by field from the catalogue, so nothing outside the schema can leak;
  // V8's JSON.stringify is faster here than fast-json-stringify, whose string escaping falls back to
  // JSON.stringify for every HTML field with a quote in it (bench/README.md).
  const serializeRecord = (record: R): string => JSON.stringify(record);
  const hide = prefix !== '/api';
  const tags = [def.tag];

  app.get(
    def.path,
    {
      schema: {
        summary: `List ${def.noun}s`,
        description: def.docs.list,
        tags,
        hide,
        querystring: def.schemas.query,
        response: { 200: def.schemas.list },
      },
      config: { scope: 'everything:read' },
    },
    async (request, reply) => {
      const query = request.query as Q;
      const listed = await def.list(principalOf(request).siteId, {
        ...query,
        offset: query.offset ?? 0,
        pageSize: pageSizeOf(query.pageSize),
      });
      // Serialized once into the bytes that are sent, so the ETag hashes exactly those bytes.
      const body = Buffer.from(
        JSON.stringify({ data: listed.records, meta: { total: listed.total, offset: listed.offset, pageSize: listed.pageSize } }),
      );
      return reply.header('etag', entityTag(body)).type('application/json; charset=utf-8').send(body);
    },
  );

  app.get(
    `${def.path}/:id`,
    {
      schema: {
        summary: `Get one ${def.noun}`,
        description: def.docs.get,
        tags,
        hide,
        params: IdParams,
        response: { 200: def.schemas.list },
      },
      config: { scope: 'everything:read' },
    },
    async (request, reply) => {
      const { id } = request.params as { id: number };
      const json = serializeRecord(await def.get(principalOf(request).siteId, id));
      // The ETag covers the record itself, so If-Match on POST and DELETE compares with the same value.
      return reply
        .header('etag', entityTag(json))
        .type('application/json; charset=utf-8')
        .send(`{"data":[${json}],"meta":{"total":1,"offset":0,"pageSize":${DEFAULT_PAGE_SIZE}}}`);
    },
  );

  app.post(
    def.path,
    {
      schema: {
        summary: `Insert or update a ${def.noun}`,
        description: def.docs.post,
        tags,
        hide,
        ...(def.schemas.writeQuery ? { querystring: def.schemas.writeQuery } : {}),
        body: def.schemas.form
          ? {
              content: {
                'application/json': { schema: def.schemas.write },
                'multipart/form-data': { schema: def.schemas.form },
              },
            }
          : def.schemas.write,
        response: { 200: def.schemas.written, 201: def.schemas.written },
      },
      config: { scope: 'everything:write' },
    },
    async (request, reply) => {
      const { record, created } = await def.save(principalOf(request).siteId, request, ifMatchCheck(request, serializeRecord));
      reply.header('etag', entityTag(serializeRecord(record)));
      if (created) reply.code(201).header('location', `${prefix}${def.path}/${def.idOf(record)}`);
      return { data: [record] };
    },
  );

  app.delete(
    `${def.path}/:id`,
    {
      schema: {
        summary: `Delete a ${def.noun}`,
        description: def.docs.delete,
        tags,
        hide,
        params: IdParams,
        response: { 204: { type: 'null', description: 'Deleted' } },
      },
      config: { scope: 'everything:write' },
    },
    async (request, reply) => {
      const { id } = request.params as { id: number };
      await def.remove(principalOf(request).siteId, id, ifMatchCheck(request, serializeRecord));
      return reply.code(204).send();
    },
  );
}
