// The /try page: the authorization code flow with PKCE (RFC 7636), run by the browser as a
// public client. Plain script, no build step; only the page's nonce allows it.
(() => {
  const root = document.getElementById('try');
  const { base, issuer, clientId, redirectUri } = root.dataset;
  const STORE = 'try-flow';

  const b64url = (bytes) =>
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');
  const random = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));

  function show(id, state, text) {
    const step = document.getElementById(id);
    step.className = state;
    const pre = step.querySelector('pre');
    if (text !== undefined) {
      pre.textContent = text;
      pre.hidden = false;
    }
  }

  async function start() {
    const verifier = random(32);
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
    const challenge = b64url(new Uint8Array(digest));
    const state = random(16);
    sessionStorage.setItem(STORE, JSON.stringify({ verifier, state }));
    show('step-pkce', 'done', `code_verifier  = ${verifier}\ncode_challenge = ${challenge}`);
    const url = new URL(`${issuer}/authorize`);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'everything:read',
      resource: base,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    }).toString();
    show('step-authorize', 'done', url.href.replace(/&/g, '\n  &'));
    window.location.assign(url.href);
  }

  function shorten(token) {
    return typeof token === 'string' && token.length > 16 ? `${token.slice(0, 10)}…` : token;
  }

  async function finish(params) {
    // The code leaves the address bar at once: it must not end up in history or bookmarks.
    history.replaceState(null, '', window.location.pathname);
    const saved = JSON.parse(sessionStorage.getItem(STORE) || 'null');
    sessionStorage.removeItem(STORE);
    // Nothing in the address counts until it is known to answer this page's own request: a stale
    // or forged answer (its state is not the one stored) marks no step done, and no error as ours.
    if (!saved || saved.state !== params.get('state') || params.get('iss') !== issuer) {
      show('step-callback', 'failed', 'The state or the issuer is not the one this page sent: the answer is not used.');
      return;
    }
    show('step-pkce', 'done');
    show('step-authorize', 'done');
    if (params.get('error')) {
      show('step-consent', 'failed', `${params.get('error')}: ${params.get('error_description') ?? ''}`);
      return;
    }
    show('step-consent', 'done', 'Signed in, website chosen, access approved.');
    const code = params.get('code');
    show('step-callback', 'done', `code  = ${shorten(code)}\nstate = ${params.get('state')} (matches)\niss   = ${params.get('iss')}`);

    const tokenResponse = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: clientId,
        code,
        redirect_uri: redirectUri,
        code_verifier: saved.verifier,
      }),
    });
    const tokens = await tokenResponse.json();
    if (!tokenResponse.ok) {
      show('step-token', 'failed', `${tokenResponse.status} ${JSON.stringify(tokens, null, 2)}`);
      return;
    }
    const visible = { ...tokens, access_token: shorten(tokens.access_token), refresh_token: shorten(tokens.refresh_token) };
    show('step-token', 'done', `${tokenResponse.status} ${JSON.stringify(visible, null, 2)}`);

    const pagesResponse = await fetch(`${base}/api/page?pageSize=50`, {
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json' },
    });
    const pages = await pagesResponse.json();
    if (!pagesResponse.ok) {
      show('step-api', 'failed', `${pagesResponse.status} ${JSON.stringify(pages, null, 2)}`);
      return;
    }
    show('step-api', 'done', `${pagesResponse.status}: ${pages.meta.total} pages`);
    const list = document.getElementById('pages');
    list.replaceChildren(
      ...pages.data.map((page) => {
        const item = document.createElement('li');
        item.textContent = `${page.page_usertitle || page.page_menuname} (#${page.page})`;
        return item;
      }),
    );
    document.getElementById('result').hidden = false;
  }

  document.getElementById('run').addEventListener('click', () => {
    start().catch((error) => show('step-pkce', 'failed', String(error)));
  });
  const params = new URLSearchParams(window.location.search);
  if (params.has('code') || params.has('error')) finish(params).catch((error) => show('step-token', 'failed', String(error)));
})();
