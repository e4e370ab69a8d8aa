import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from 'oidc-provider';
import { type Static, Type } from 'typebox';
import { csrfToken, csrfValid } from '../../web/csrf.js';
import { acceptFormsOnly, type Form, formValue } from '../../web/forms.js';
import { sendPage } from '../../web/views.js';
import { findClientRow } from '../clients/client.repository.js';
import { isVerifiedClient } from '../clients/client.service.js';
import { AUTH_PATH } from '../provider/provider.js';
import type { Interaction, InteractionDeps, StepContext } from './interaction.context.js';
import { consentStep, loginStep, siteStep } from './interaction.steps.js';

function expired(reply: FastifyReply): FastifyReply {
  return sendPage(reply, 400, 'error', {
    title: 'This sign-in has expired',
    message: 'The authorization request is no longer valid, or was already completed. Go back to the application and start again.',
  });
}

/** The interaction a page belongs to, named in its URL. */
const InteractionParams = Type.Object({ uid: Type.String() });

async function stepContext(
  deps: InteractionDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  uid: string,
  form: Form,
): Promise<StepContext | undefined> {
  let interaction: Interaction;
  try {
    interaction = await deps.provider.interactionDetails(request.raw, reply.raw);
  } catch (error) {
    if (error instanceof errors.SessionNotFound) return undefined;
    throw error;
  }
  // The interaction cookie names one interaction; a URL naming another is stale or forged.
  if (interaction.uid !== uid) return undefined;
  const client = await findClientRow(deps.db, String(interaction.params.client_id));
  const view = {
    clientName: client?.name ?? String(interaction.params.client_id),
    unverified: !isVerifiedClient(client?.source),
    csrf: csrfToken(deps.config.cookieSecrets, uid),
    action: `${AUTH_PATH}/interaction/${uid}/${interaction.prompt.name}`,
  };
  return {
    ...deps,
    request,
    reply,
    interaction,
    form,
    view,
    page: (status, template, data = {}) => sendPage(reply, status, template, { ...view, ...data }),
    async finish(result, merge = true) {
      const returnTo = await deps.provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge });
      return reply.code(303).header('location', returnTo).send();
    },
  };
}

const STEPS = { login: loginStep, select_site: siteStep, consent: consentStep } as const;
type StepName = keyof typeof STEPS;

export async function registerInteractions(app: FastifyInstance, deps: InteractionDeps): Promise<void> {
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    acceptFormsOnly(plain);

    scope.get(
      `${AUTH_PATH}/interaction/:uid`,
      { schema: { hide: true, params: InteractionParams }, config: { public: true } },
      async (request, reply) => {
        const step = await stepContext(deps, request, reply, request.params.uid, {});
        if (!step) return expired(reply);
        const handler = STEPS[step.interaction.prompt.name as StepName];
        if (!handler) return expired(reply);
        return handler.show(step);
      },
    );

    for (const name of Object.keys(STEPS) as StepName[]) {
      // The body is what the form parser above made, or nothing when no body was sent.
      scope.post<{ Body: Form | undefined; Params: Static<typeof InteractionParams> }>(
        `${AUTH_PATH}/interaction/:uid/${name}`,
        { schema: { hide: true, params: InteractionParams }, config: { public: true } },
        async (request, reply) => {
          const step = await stepContext(deps, request, reply, request.params.uid, request.body ?? {});
          if (!step) return expired(reply);
          if (!csrfValid(deps.config.cookieSecrets, step.interaction.uid, step.form.csrf)) {
            return sendPage(reply, 403, 'error', {
              title: 'This form has expired',
              message: 'The page was not sent by this sign-in. Go back to the application and start again.',
            });
          }
          // A form of an earlier step (the back button): show the step the interaction is at now.
          if (step.interaction.prompt.name !== name)
            return reply.code(303).header('location', `${AUTH_PATH}/interaction/${step.interaction.uid}`).send();
          if (formValue(step.form, 'decision') !== 'approve') {
            return step.finish({ error: 'access_denied', error_description: 'the owner denied the request' }, false);
          }
          return STEPS[name].submit(step);
        },
      );
    }
  });
}
