// The upstream OpenID Connect provider of the brokering tests: panva's oidc-provider (OpenID
// Certified) on a loopback port. Usage: node oidc-upstream.mjs <config.json>
// config: {"port": 1234, "jwks": {"keys": [private JWKs]}, "clients": [client metadata],
//          "issuer": optional, "claimsOf": {login: {extra claims}}}
// Its development interactions accept any login and password; consent is granted at once (the
// provider's documented loadExistingGrant recipe), so a sign-in is one form. Open dynamic
// registration lets a test register the client it needs (its auth method, its keys).
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = config.issuer || `http://127.0.0.1:${config.port}`;
const claimsOf = config.claimsOf || {};

const SCOPES = ['openid', 'offline_access', 'email', 'profile', 'read_user', 'User.read'];

function accountClaims(id) {
  const [given, family] = [id.charAt(0).toUpperCase() + id.slice(1), 'Upstream'];
  return {
    sub: id,
    email: `${id}@upstream.example`,
    email_verified: true,
    name: `${given} ${family}`,
    given_name: given,
    family_name: family,
    preferred_username: id,
    groups: ['staff', 'dev'],
    // The shapes some presets read from their userinfo (GitLab's /api/v4/user, Microsoft Graph /me).
    id,
    username: id,
    displayName: `${given} ${family}`,
    givenName: given,
    surname: family,
    mail: `${id}@upstream.example`,
    userPrincipalName: `${id}@upstream.example`,
    ...(claimsOf[id] || {}),
  };
}

const provider = new Provider(issuer, {
  clients: config.clients || [],
  jwks: config.jwks,
  cookies: { keys: ['upstream-test-cookie-key'] },
  scopes: SCOPES,
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username', 'groups'],
    read_user: ['id', 'username', 'name', 'email'],
    'User.read': ['id', 'displayName', 'givenName', 'surname', 'mail', 'userPrincipalName'],
  },
  conformIdTokenClaims: false, // the ID token carries the scopes' claims (as Google's and Apple's do)
  pkce: { required: () => false },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    backchannelLogout: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    claimsParameter: { enabled: true },
  },
  clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none'],
  enabledJWA: {
    clientAuthSigningAlgValues: ['HS256', 'HS384', 'HS512', 'RS256', 'ES256', 'EdDSA', 'PS256'],
    idTokenSigningAlgValues: ['RS256', 'ES256', 'EdDSA', 'PS256', 'HS256'],
  },
  ttl: { IdToken: 300, AccessToken: 300, AuthorizationCode: 60, Session: 3600, Interaction: 600, Grant: 3600 },
  // Its outgoing calls (back-channel logout) refuse special-use addresses; our test server is on
  // loopback, so this test upstream drops that guard (as our outbound_loopback fixture does).
  fetch: (url, options) => {
    const { dispatcher, ...rest } = options;
    return globalThis.fetch(url, rest);
  },
  async findAccount(ctx, id) {
    return { accountId: id, claims: async () => accountClaims(id) };
  },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope(SCOPES.join(' '));
    await grant.save();
    return grant;
  },
});
provider.proxy = false;
// What the tests read when one fails: the back-channel logouts it sent, and its errors.
provider.on('backchannel.success', (client, accountId, sid) => console.log(`backchannel.success ${client.clientId} ${sid}`));
provider.on('backchannel.error', (ctx, err, client) => console.log(`backchannel.error ${client.clientId} ${err}`));
provider.on('server_error', (ctx, err) => console.log(`server_error ${err}`));
provider.on('end_session.error', (ctx, err) => console.log(`end_session.error ${err}`));

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
