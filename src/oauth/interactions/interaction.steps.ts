import { findUser, sitesOfUser } from '../../accounts/account.repository.js';
import { attemptLogin } from '../../accounts/sign-in.js';
import { SCOPES } from '../../auth/scopes.js';
import { formValue, formValues } from '../../web/forms.js';
import { recordMetadataDocumentClient } from '../clients/client.service.js';
import { isMetadataDocumentClientId } from '../clients/client-metadata.js';
import { createConnection } from '../connections/connection.service.js';
import { scopeTitle } from '../scopes.js';
import type { StepContext } from './interaction.context.js';

function accountOf(step: StepContext): number {
  return Number(step.interaction.session?.accountId);
}

export const loginStep = {
  show: (step: StepContext) => step.page(200, 'login', { email: String(step.interaction.params.login_hint ?? '') }),

  async submit(step: StepContext) {
    const email = formValue(step.form, 'email').trim().toLowerCase();
    const outcome = await attemptLogin(step.db, step.limits, { email, password: formValue(step.form, 'password'), ip: step.request.ip });
    if (!outcome.ok) {
      if (outcome.retryAfter) step.reply.header('retry-after', String(outcome.retryAfter));
      return step.page(outcome.status, 'login', { email, error: outcome.error });
    }
    const sites = await sitesOfUser(step.db, outcome.userId);
    const only = sites.length === 1 ? { select_site: { siteId: sites[0]!.id } } : {};
    return step.finish({ login: { accountId: String(outcome.userId) }, ...only });
  },
};

export const siteStep = {
  async show(step: StepContext) {
    const userId = accountOf(step);
    const sites = await sitesOfUser(step.db, userId);
    // One website: nothing to choose (a reused session comes here without the login step).
    if (sites.length === 1) return step.finish({ select_site: { siteId: sites[0]!.id } });
    if (!sites.length) return step.finish({ error: 'access_denied', error_description: 'the account has no website' }, false);
    const user = await findUser(step.db, userId);
    return step.page(200, 'select-site', { sites, email: user?.email ?? '' });
  },

  async submit(step: StepContext) {
    const sites = await sitesOfUser(step.db, accountOf(step));
    const chosen = sites.find((site) => String(site.id) === formValue(step.form, 'site'));
    if (!chosen) {
      const user = await findUser(step.db, accountOf(step));
      return step.page(400, 'select-site', { sites, email: user?.email ?? '', error: 'Choose one of your websites.' });
    }
    return step.finish({ select_site: { siteId: chosen.id } });
  },
};

/** The resource this authorization is for: the REST API or the MCP server (checked at /authorize). */
function requestedResource(step: StepContext): string {
  return String(step.interaction.params.resource);
}

/** The scopes this authorization asks the owner about, in the spec's order. */
function requestedScopes(step: StepContext): string[] {
  const missing = step.interaction.prompt.details.missingResourceScopes as Record<string, string[]> | undefined;
  const asked = new Set(missing?.[requestedResource(step)] ?? []);
  return SCOPES.filter((scope) => asked.has(scope));
}

/** The chosen website, if the signed-in user still belongs to it. */
async function chosenSite(step: StepContext) {
  const siteId = Number((step.interaction.lastSubmission?.select_site as { siteId?: number } | undefined)?.siteId);
  const sites = await sitesOfUser(step.db, accountOf(step));
  return sites.find((site) => site.id === siteId);
}

async function consentPage(step: StepContext) {
  const site = await chosenSite(step);
  if (!site) return step.finish({ error: 'access_denied', error_description: 'the website is not available to this account' }, false);
  const user = await findUser(step.db, accountOf(step));
  const redirect = URL.parse(String(step.interaction.params.redirect_uri));
  return step.page(200, 'consent', {
    siteName: site.name,
    email: user?.email ?? '',
    redirectHost: redirect?.host || redirect?.protocol || '',
    scopes: requestedScopes(step).map((name) => ({ name, title: scopeTitle(name) })),
  });
}

export const consentStep = {
  show: consentPage,

  async submit(step: StepContext) {
    const site = await chosenSite(step);
    if (!site) return step.finish({ error: 'access_denied', error_description: 'the website is not available to this account' }, false);
    const requested = requestedScopes(step);
    const approved = new Set(formValues(step.form, 'scope'));
    const granted = requested.filter((scope) => approved.has(scope));
    // Approving nothing is a refusal (DESIGN §4), not a connection without permissions.
    if (!granted.length) return step.finish({ error: 'access_denied', error_description: 'no permission was approved' }, false);

    const clientId = String(step.interaction.params.client_id);
    const accountId = String(accountOf(step));
    const resource = requestedResource(step);
    const grant = new step.provider.Grant({ accountId, clientId });
    grant.addResourceScope(resource, granted.join(' '));
    const rejected = requested.filter((scope) => !approved.has(scope));
    if (rejected.length) grant.rejectResourceScope(resource, rejected.join(' '));
    const grantId = await grant.save();
    if (isMetadataDocumentClientId(clientId)) {
      const client = await step.provider.Client.find(clientId);
      if (client) await recordMetadataDocumentClient(step.db, client.metadata());
    }
    await createConnection(step.db, { grantId, userId: Number(accountId), clientId, siteId: site.id, resource, scopes: granted });
    return step.finish({ consent: { grantId } });
  },
};
