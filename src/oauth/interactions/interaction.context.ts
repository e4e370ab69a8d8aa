import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/schema.js';
import type { RateLimitStore } from '../../http/rate-limit.js';
import type { Form } from '../../web/forms.js';

/** What the login, website and consent steps share: the interaction, the form, how to answer. */
export type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

export interface InteractionDeps {
  readonly provider: Provider;
  readonly db: DbHandle;
  readonly config: Config;
  readonly limits: RateLimitStore;
}

/** What every step needs: the interaction, who asks, and how to answer. */
export interface StepContext extends InteractionDeps {
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly interaction: Interaction;
  readonly form: Form;
  /** Shared template data: client name, CSRF token, form action. */
  readonly view: Record<string, unknown>;
  page(status: number, template: string, data?: Record<string, unknown>): FastifyReply;
  /** Records the step's result and sends the browser back to the provider (303, RFC 9700 §4.12). */
  finish(result: InteractionResults, merge?: boolean): Promise<FastifyReply>;
}
