/**
 * The OAuth side of the OAuth bench: an owner and a client in the seeded database, tokens got
 * through the real authorization flow over HTTP (test/oauth.helpers.ts: login, consent, code,
 * PKCE, exchange), and a refresh load in which every worker follows its own rotating chain.
 */
import http from 'node:http';
import { createUser } from '../src/accounts/account.service.js';
import { createDatabase } from '../src/db/database.js';
import { createClient } from '../src/oauth/clients/client.service.js';
import {
  authorizeUrl,
  Browser,
  completeInteraction,
  PASSWORD,
  pkcePair,
  REDIRECT_URI,
  type Tokens,
  tokenRequest,
} from '../test/oauth.helpers.js';
import { type Loaded, type Server, watchRss } from './harness.js';

export const SCOPE = 'everything:read everything:write';

export interface OAuthSetup {
  clientId: string;
  siteId: number;
  login: { email: string; password: string };
}

/** The website's owner (createUser) and a registered client (createClient), as the CLI makes them. */
export async function addOwnerAndClient(file: string, siteId: number): Promise<OAuthSetup> {
  const db = createDatabase(`sqlite:${file}`);
  const login = { email: 'owner@bench.example', password: PASSWORD };
  await createUser(db.kysely, { ...login, siteId });
  const { clientId } = await createClient(db.kysely, { name: 'Bench app', redirectUris: [REDIRECT_URI] });
  await db.close();
  return { clientId, siteId, login };
}

/**
 * `count` authorizations by one browser (it signs in once; every authorization is consented on
 * its own and gets its own grant and connection), each code exchanged for tokens.
 */
export async function authorize(server: Server, resource: string, setup: OAuthSetup, count: number): Promise<Tokens[]> {
  const issuer = `${server.url}/api/auth`;
  const browser = new Browser(server.url);
  const tokens: Tokens[] = [];
  for (let i = 0; i < count; i++) {
    const { verifier, challenge } = await pkcePair();
    const url = authorizeUrl(issuer, { clientId: setup.clientId, scope: SCOPE, resource, state: `bench-${i}`, codeChallenge: challenge });
    const step = await completeInteraction(browser, url, { login: setup.login, site: setup.siteId });
    const code = step.callback?.searchParams.get('code');
    if (!code) throw new Error(`authorization ${i}: no code (${step.status}) ${step.callback ?? step.html.slice(0, 300)}`);
    const form = { grant_type: 'authorization_code', client_id: setup.clientId, code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
    const exchanged = await tokenRequest(issuer, form);
    if (exchanged.status !== 200) throw new Error(`exchange ${i}: ${exchanged.status} ${JSON.stringify(exchanged.body)}`);
    tokens.push(exchanged.body as unknown as Tokens);
  }
  return tokens;
}

function post(agent: http.Agent, url: URL, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      'content-length': Buffer.byteLength(body),
    };
    const request = http.request(url, { method: 'POST', agent, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Refresh grants for `seconds`: one worker per chain, each on its own keep-alive connection,
 * sending its latest refresh token and keeping the one it gets back (`chains` is updated in
 * place, so a warm-up's chains carry on). A worker stops at its first failure: a refused refresh
 * means the chain broke (and reuse detection would have revoked it). Requests in flight at the
 * end are awaited, never abandoned, so no chain loses its newest token.
 */
export async function refreshLoad(
  server: Server,
  clientId: string,
  chains: string[],
  seconds: number,
): Promise<Loaded & { failure?: string }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: chains.length });
  const url = new URL('/api/auth/token', server.url);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let failure: string | undefined;
  const stopRss = watchRss(server.child.pid!);
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    chains.map(async (_, i) => {
      while (performance.now() < end) {
        const body = new URLSearchParams({ grant_type: 'refresh_token', client_id: clientId, refresh_token: chains[i]! }).toString();
        const t0 = performance.now();
        try {
          const response = await post(agent, url, body);
          latencies.push(performance.now() - t0);
          if (response.status !== 200) {
            non2xx += 1;
            failure ??= `${response.status} ${response.body.slice(0, 200)}`;
            return;
          }
          chains[i] = (JSON.parse(response.body) as Tokens).refresh_token;
        } catch (error) {
          errors += 1;
          failure ??= String(error);
          return;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    reqPerSec: latencies.length / elapsed,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxRssMB: stopRss(),
    requests: latencies.length,
    non2xx,
    errors,
    ...(failure ? { failure } : {}),
  };
}
