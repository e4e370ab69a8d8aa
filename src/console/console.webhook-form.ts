/**
 * The console's form for a webhook's fields (add and edit): the fields as typed, what the form
 * shows, and a save whose refusals are worded for the form rather than for JSON.
 */
import { BadRequestError, ConflictError, ValidationError } from '../errors.js';
import { formValue, formValues } from '../web/forms.js';
import { EVENTS } from '../webhooks/webhook.events.js';
import type * as hooks from '../webhooks/webhook.service.js';
import type { ConsoleContext } from './console.http.js';

/** The API's limit on a description (webhook.routes.ts), which the service leaves to its callers. */
const DESCRIPTION_MAX = 500;

/** What the form's fields are called in a refusal. */
const FIELD_TITLES: Record<string, string> = { url: 'The URL', events: 'Events:', description: 'The description' };

/** A service's refusal of a form value, worded for the form (the API's words name JSON fields). */
function readable(error: ValidationError): BadRequestError {
  return new BadRequestError(error.errors.map((e) => `${FIELD_TITLES[e.field] ?? e.field} ${e.message}.`).join(' '));
}

/** A hook's fields in a form: typed, or the hook's own. */
export type HookFields = { url: string; events: string[]; description: string };

/** The form's fields as typed: the add form's and the edit form's (console-webhook-fields.eta). */
export function typedFields(form: ConsoleContext['form']): HookFields {
  return {
    url: formValue(form, 'url').trim(),
    events: formValues(form, 'events'),
    description: formValue(form, 'description').trim(),
  };
}

/** What console-webhook-fields.eta shows: `form` as typed, or as the hook has it. */
export const fieldsData = (form: HookFields) => ({
  form,
  events: EVENTS.map((event) => ({ value: event, title: event === '*' ? 'Every event (*)' : event })),
  descriptionMax: DESCRIPTION_MAX,
});

/**
 * Saves a hook's fields (`save`: create or update) once checked as the API's schema checks them;
 * a refusal, here or by the service, is a BadRequestError worded for the form.
 */
export async function saveFields<T>(fields: HookFields, save: (hook: hooks.NewWebhook) => Promise<T>): Promise<T> {
  try {
    return await save(newHook(fields.url, fields.events, fields.description));
  } catch (error) {
    if (error instanceof ValidationError) throw readable(error);
    if (error instanceof ConflictError) throw new BadRequestError(error.message);
    throw error;
  }
}

/** The new hook's fields, checked as the API's schema checks them; the service checks the rest. */
function newHook(url: string, events: string[], description: string): hooks.NewWebhook {
  if (url === '') throw new BadRequestError('Give the URL that receives the deliveries.');
  if (events.length === 0) throw new BadRequestError('Choose at least one event.');
  if (description.length > DESCRIPTION_MAX) {
    throw new BadRequestError(`The description is ${description.length} characters long; it may have ${DESCRIPTION_MAX} at most.`);
  }
  return { url, events, description };
}
