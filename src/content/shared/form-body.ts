/**
 * A content write route's options for taking its record as a form too (http/form-reader.ts reads
 * the form): the hook that puts the record of a form's `data` field where a JSON body would be,
 * and the media types the route names in its 415.
 */
import type { FastifyInstance, preValidationAsyncHookHandler } from 'fastify';
import type { TSchema } from 'typebox';
import { isFields } from '../../auth/api-key.js';
import { readMultipartForm, readUrlEncodedForm } from '../../http/form-reader.js';
import { formTypeOf } from '../../http/url-encoded.js';
import { validatorFor } from '../../http/validation.js';
import { NoQuery, type operations } from './envelope.js';
import { IdParams, writeBodies } from './schemas.js';

/** What a write route of the content API accepts as its body, named in its 415. */
const ACCEPTED_BODIES =
  'application/json (or text/json), or the JSON as the field `data` of an application/x-www-form-urlencoded or multipart/form-data form';

/**
 * The route hook that turns a form body into the record its `data` field holds, validated by
 * `validate` (the route's own body validator, naming fields under `data`), after its credentials
 * are checked. `multipart: false` leaves multipart bodies to the handler (blog uploads).
 */
function recordFromForm<T>(validate: (data: unknown) => T, { multipart = true } = {}): preValidationAsyncHookHandler {
  return async (request) => {
    if (request.isMultipart?.()) {
      if (multipart) request.body = await readMultipartForm(request, validate, { files: 0, fileBytes: 0 });
      return;
    }
    const form = request.body;
    if (formTypeOf(request.headers['content-type']) === 'urlencoded' && isFields(form)) {
      request.body = await readUrlEncodedForm(request, form, validate);
    }
  };
}

/**
 * A write route's options, taking forms too: the credentials may be the form's apiID and apiKey
 * fields, and `data` is validated by `validate` (see recordFromForm).
 */
export function takingForms<O extends { config: object }>(
  options: O,
  validate: (data: unknown) => unknown,
  handling: { multipart?: boolean } = {},
): O & { config: { formCredentials: true; bodyTypes: string }; preValidation: preValidationAsyncHookHandler } {
  return {
    ...options,
    config: { ...options.config, formCredentials: true, bodyTypes: ACCEPTED_BODIES },
    preValidation: recordFromForm(validate, handling),
  };
}

/**
 * The options of `PATCH <prefix>/<noun>/:id`: the record's write schema, as JSON or as a form's
 * `data`, with the written record as the answer. `write` is the resource's (envelope.ts, operations).
 */
export function patchOptions<S extends TSchema, W extends TSchema>(
  app: FastifyInstance,
  write: ReturnType<typeof operations>['write'],
  {
    operationId,
    prefix,
    noun,
    record,
    written,
    description,
  }: { operationId: string; prefix: string; noun: string; record: S; written: W; description: string },
) {
  return takingForms(
    write(
      `Update a ${noun}`,
      description,
      { operationId, params: IdParams, querystring: NoQuery, body: writeBodies(record, noun), response: { 200: written } },
      { conditional: true },
    ),
    validatorFor(app, { schema: record, method: 'PATCH', url: `${prefix}/${noun}/:id`, httpPart: 'body' }, 'data'),
  );
}
