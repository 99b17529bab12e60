// A real authorization server for the person's-flow tests: `oidc-provider` (a certified OpenID
// provider, pinned by scripts/install-peers.sh in .tools/peers/oidc), configured for what an MCP
// client meets at a protected server's authorization server:
//   - authorization code with PKCE (S256) required of every client;
//   - open dynamic client registration (RFC 7591);
//   - resource indicators (RFC 8707): an access token is a JWT (RFC 9068) whose audience is the
//     one MCP server it was asked for (any `http://127.0.0.1:PORT/mcp` of this host), signed with
//     a key made at start and published at the JWKS endpoint;
//   - refresh tokens for clients registered for the `refresh_token` grant, and a short
//     access-token lifetime (`--access-token-ttl SECONDS`, default 30) so a test can see one expire;
//   - one test account (`--login`, `--password`, `--sub`), more with `--account LOGIN:PASSWORD:SUB`
//     (repeatable), with their sign-in and consent pages.
// It listens on 127.0.0.1 at a port chosen at start, and prints `issuer http://127.0.0.1:PORT`
// on stderr once it serves.
//
// Usage: node tests/peers/oidc_provider.mjs [--access-token-ttl S] [--login L] [--password P] [--sub SUB]
//        [--account LOGIN:PASSWORD:SUB]...

import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';

const pinned = new URL('../../.tools/peers/oidc/node_modules/oidc-provider/lib/index.js', import.meta.url);
const { default: Provider, errors } = await import(pinned);

const args = process.argv.slice(2);
function option(name, fallback) {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
}
const accessTokenTtl = Number.parseInt(option('access-token-ttl', '30'), 10);
const account = { login: option('login', 'ada'), password: option('password', 'correct horse'), sub: option('sub', 'ada-lovelace') };
const accounts = [account];
args.forEach((arg, at) => {
  if (arg !== '--account' || at + 1 >= args.length) return;
  const [login, password, sub] = args[at + 1].split(':');
  if (!login || !password || !sub) {
    console.error('oidc-provider: --account takes LOGIN:PASSWORD:SUB');
    process.exit(2);
  }
  accounts.push({ login, password, sub });
});
if (!Number.isInteger(accessTokenTtl) || accessTokenTtl < 1) {
  console.error('oidc-provider: --access-token-ttl must be a positive number of seconds');
  process.exit(2);
}

// The MCP servers this provider issues tokens for: any on this host, each its own audience.
const RESOURCE = /^http:\/\/127\.0\.0\.1:[0-9]{1,5}\/mcp$/;
const RESOURCE_SCOPE = 'mcp';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [signing] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  clients: [],
  scopes: ['openid', 'offline_access', RESOURCE_SCOPE],
  claims: { openid: ['sub'] },
  responseTypes: ['code'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    introspection: { enabled: false },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets none: no audience-less access tokens for MCP.
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!RESOURCE.test(resource)) {
          throw new errors.InvalidTarget(`this server issues tokens only for http://127.0.0.1:PORT/mcp, not ${resource}`);
        }
        return {
          audience: resource,
          scope: RESOURCE_SCOPE,
          accessTokenTTL: accessTokenTtl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  // Every client registered for the refresh grant gets a refresh token (not only with
  // `offline_access` and a consent prompt), and it outlives the sign-in session.
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  expiresWithSession: () => false,
  ttl: {
    AccessToken: accessTokenTtl,
    AuthorizationCode: 60,
    Grant: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
  findAccount: (_ctx, id) => (accounts.some((known) => known.sub === id) ? { accountId: id, claims: () => ({ sub: id }) } : undefined),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  renderError: (ctx, out) => {
    ctx.type = 'html';
    ctx.body = page('Error', `<p id="error">${escape(out.error)}: ${escape(out.error_description ?? '')}</p>`);
  },
});
provider.proxy = false;

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title, body) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title></head><body><h1>${escape(title)}</h1>${body}</body></html>`;
}

function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

async function form(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 16384) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

// The sign-in and consent pages (the provider's own interaction endpoints call them).
async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return send(res, 400, page('Error', '<p>This sign-in has expired.</p>'));
  const { prompt, params } = details;
  if (req.method === 'GET' && action === '') {
    const client = await provider.Client.find(params.client_id);
    const name = client?.clientName ?? params.client_id;
    if (prompt.name === 'login') {
      return send(res, 200, page('Sign in', `<p>Sign in to continue to <b id="client">${escape(name)}</b>.</p>
<form method="post" action="/interaction/${uid}/login" autocomplete="off">
<label>Login <input id="login" name="login" required></label>
<label>Password <input id="password" name="password" type="password" required></label>
<button id="sign-in" type="submit">Sign in</button></form>`));
    }
    if (prompt.name === 'consent') {
      const resources = Object.entries(prompt.details.missingResourceScopes ?? {})
        .map(([resource, scopes]) => `<li><span class="resource">${escape(resource)}</span>: ${escape(scopes.join(' '))}</li>`).join('');
      return send(res, 200, page('Authorize', `<p><b id="client">${escape(name)}</b> asks for access to:</p><ul id="resources">${resources}</ul>
<form method="post" action="/interaction/${uid}/confirm"><button id="allow" type="submit">Allow</button></form>
<form method="post" action="/interaction/${uid}/abort"><button id="deny" type="submit">Deny</button></form>`));
    }
    return send(res, 400, page('Error', `<p>Unexpected step ${escape(prompt.name)}.</p>`));
  }
  if (req.method !== 'POST') return send(res, 405, page('Error', '<p>Method not allowed.</p>'));
  if (action === '/login') {
    const fields = await form(req);
    const known = accounts.find((a) => a.login === fields.get('login') && a.password === fields.get('password'));
    if (!known) {
      return send(res, 401, page('Sign in', `<p id="error">Wrong login or password.</p>
<form method="post" action="/interaction/${uid}/login" autocomplete="off">
<label>Login <input id="login" name="login" required></label>
<label>Password <input id="password" name="password" type="password" required></label>
<button id="sign-in" type="submit">Sign in</button></form>`));
    }
    return provider.interactionFinished(req, res, { login: { accountId: known.sub } }, { mergeWithLastSubmission: false });
  }
  if (action === '/confirm') {
    await form(req);
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (action === '/abort') {
    await form(req);
    return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the person denied access' }, { mergeWithLastSubmission: false });
  }
  return send(res, 404, page('Error', '<p>Not found.</p>'));
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const match = /^\/interaction\/([A-Za-z0-9_-]+)(\/login|\/confirm|\/abort)?$/.exec(req.url.split('?')[0]);
  if (!match) return callback(req, res);
  interaction(req, res, match[1], match[2] ?? '').catch((error) => {
    if (!res.headersSent) send(res, 400, page('Error', `<p id="error">${escape(error.message)}</p>`));
  });
});

console.error(`oidc-provider: issuer ${issuer}`);
