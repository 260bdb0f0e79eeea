// A real, independent OAuth 2.0 authorization server for the tests: oidc-provider (npm) with
// dynamic client registration, PKCE, client credentials, the device authorization grant,
// refresh tokens for every client allowed the refresh grant, rotated on every use (reusing a used one revokes the whole grant), RFC 8707
// resource indicators (JWT access tokens whose audience is the MCP server) and RFC 9207 iss. Its
// consent step approves at once (the interaction is finished by the server itself), so a client
// that follows redirects gets the code without a person.
//
//   node oidc_as.mjs PORT RESOURCE_URL [--issuer-slash] [--subject-issuer ISS --subject-key PEM]
//
// --issuer-slash spells the issuer with a trailing "/" (http://127.0.0.1:PORT/), as some
// servers do. --subject-issuer and --subject-key (the path of a PEM public key, ES256) enable
// RFC 8693 token exchange for the client "gateway" (secret "gateway-secret"): a subject token
// that is a JWT of that issuer, for this AS (aud = its issuer), is exchanged for a JWT access
// token of its subject whose audience is the requested resource; anything else is
// invalid_grant. Two routes stand in for an operator's console:
//   GET  /test/grants                      token requests so far: {"success": {grant_type: n},
//                                          "error": {grant_type: n}}
//   POST /test/clients/CLIENT_ID/delete    forget a registered client (204, 404 if unknown)
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { importSPKI, jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2]);
const resource = process.argv[3];
const issuer = `http://127.0.0.1:${port}` + (process.argv.includes('--issuer-slash') ? '/' : '');
const option = (name) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const subjectIssuer = option('--subject-issuer');
const subjectKey = option('--subject-key');
const key = (type, options, alg) => ({
  ...generateKeyPairSync(type, options).privateKey.export({ format: 'jwk' }), alg, use: 'sig',
  kid: alg,
});

const provider = new Provider(issuer, {
  jwks: { keys: [key('rsa', { modulusLength: 2048 }, 'RS256'),
                 key('ec', { namedCurve: 'P-256' }, 'ES256')] },
  clients: [{ client_id: 'robot', client_secret: 'robot-secret',
              grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
            { client_id: 'gateway', client_secret: 'gateway-secret',
              grant_types: subjectIssuer ? [TOKEN_EXCHANGE] : ['client_credentials'],
              redirect_uris: [], response_types: [] }],
  scopes: ['openid', 'offline_access', 'mcp'],
  // Refresh tokens for every client allowed the refresh grant, as many servers do: this one
  // would otherwise honour offline_access only with prompt=consent (an OpenID Connect rule).
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'mcp', audience: resource,
                                      accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } }),
    },
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
});

const grants = { success: {}, error: {} };
const count = (outcome, ctx) => {
  const type = ctx.oidc?.params?.grant_type || 'unknown';
  grants[outcome][type] = (grants[outcome][type] || 0) + 1;
};
provider.on('grant.success', (ctx) => count('success', ctx));
provider.on('grant.error', (ctx) => count('error', ctx));

if (subjectIssuer) {
  const trusted = await importSPKI(readFileSync(subjectKey, 'utf8'), 'ES256');
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { params, client } = ctx.oidc;
    if (params.subject_token_type !== JWT_TYPE) {
      throw new errors.InvalidRequest('subject_token_type must be a JWT');
    }
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(params.subject_token, trusted, {
        issuer: subjectIssuer, audience: provider.issuer, algorithms: ['ES256'] }));
    } catch (err) {
      throw new errors.InvalidGrant(`subject_token: ${err.code || 'invalid'}`);
    }
    const resource = params.resource || params.audience;
    if (!resource) throw new errors.InvalidTarget('a resource or an audience is required');
    const at = new provider.AccessToken({ accountId: claims.sub, client, gty: 'token_exchange',
                                          scope: 'mcp' });
    at.resourceServer = new provider.ResourceServer(resource, {
      scope: 'mcp', audience: resource, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } });
    const value = await at.save();
    ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE,
                 token_type: 'Bearer', expires_in: at.expiration, scope: 'mcp' };
  }, ['subject_token', 'subject_token_type', 'audience', 'resource', 'requested_token_type',
      'scope']);
}

provider.use(async (ctx, next) => {
  if (ctx.path === '/test/grants' && ctx.method === 'GET') {
    ctx.body = grants;
    return undefined;
  }
  const forget = ctx.path.match(/^\/test\/clients\/([^/]+)\/delete$/);
  if (forget && ctx.method === 'POST') {
    const id = decodeURIComponent(forget[1]);
    const found = await provider.Client.adapter.find(id);
    if (found) await provider.Client.adapter.destroy(id);
    ctx.status = found ? 204 : 404;
    return undefined;
  }
  if (!ctx.path.startsWith('/interaction/')) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const accountId = 'a-person';
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  const missing = details.prompt.details || {};
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(ctx.req, ctx.res,
    { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  return undefined;
});

provider.listen(port, '127.0.0.1');
