// panva's openid-client (v6) as an MCP client against a running server: discovery through RFC 8414
// path insertion (algorithm "oauth2"), a client id metadata document as its client_id (no
// registration), the authorization code flow with PKCE and an RFC 8707 resource, the sign-in
// through the realm's login form and consent page over plain HTTP, then the token's aud checked to
// be the resource, a refresh keeping it, and invalid_target when the client widens or asks for a
// resource it may not address. IDP_ISSUER, IDP_CLIENT_ID (the document's URL), IDP_REDIRECT_URI,
// IDP_USERNAME, IDP_PASSWORD, MCP_RESOURCE, OTHER_RESOURCE from the environment; OPENID_CLIENT the
// package (the pinned release, or its alias of the newest). Run by tests/oidc/mcp/test_interop_openid_client.py.
import assert from "node:assert/strict";

const env = process.env;
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const issuer = new URL(env.IDP_ISSUER);
const config = await client.discovery(issuer, env.IDP_CLIENT_ID, undefined, client.None(),
  { algorithm: "oauth2", execute: [client.allowInsecureRequests] });
const meta = config.serverMetadata();
assert.equal(meta.issuer, env.IDP_ISSUER);
assert.equal(meta.client_id_metadata_document_supported, true);
assert.ok(meta.code_challenge_methods_supported.includes("S256"));

function claims(jwt) {
  return JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
}

// A browser without JavaScript: a cookie jar, the login form, the consent form.
const jar = new Map();
async function go(url, init = {}) {
  const headers = { ...(init.headers ?? {}), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") };
  const response = await fetch(url, { ...init, headers, redirect: "manual" });
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(";");
    const at = pair.indexOf("=");
    jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  return response;
}
const unescape = (s) => s.replaceAll("&amp;", "&").replaceAll("&#x27;", "'").replaceAll("&quot;", '"');

async function signIn(url) {
  let response = await go(url);
  for (let step = 0; step < 10; step++) {
    if (response.status === 302 || response.status === 303) {
      const location = new URL(response.headers.get("location"), url);
      if (location.href.startsWith(env.IDP_REDIRECT_URI)) return location;
      response = await go(location);
      continue;
    }
    const page = await response.text();
    assert.equal(response.status, 200, page.slice(0, 500));
    const action = new URL(unescape(page.match(/<form[^>]*action="([^"]+)"/)[1]), url);
    const csrf = page.match(/name="csrfmiddlewaretoken" value="([^"]+)"/)?.[1] ?? "";
    const fields = page.includes('name="password"')
      ? { username: env.IDP_USERNAME, password: env.IDP_PASSWORD }
      : { consent: "accept" };
    assert.ok(fields.username || page.includes('value="accept"'), page.slice(0, 500));
    response = await go(action, {
      method: "POST", body: new URLSearchParams({ csrfmiddlewaretoken: csrf, ...fields }),
      headers: { "content-type": "application/x-www-form-urlencoded", referer: url.href },
    });
  }
  throw new Error("sign-in did not come back to the redirect URI");
}

const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const authorizationUrl = client.buildAuthorizationUrl(config, {
  redirect_uri: env.IDP_REDIRECT_URI, scope: "openid", state, resource: env.MCP_RESOURCE,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
});
const callback = await signIn(authorizationUrl);
const tokens = await client.authorizationCodeGrant(config, callback,
  { pkceCodeVerifier: verifier, expectedState: state }, { resource: env.MCP_RESOURCE });
assert.equal(claims(tokens.access_token).aud, env.MCP_RESOURCE);
assert.equal(claims(tokens.access_token).azp, env.IDP_CLIENT_ID);
assert.equal(tokens.claims().aud, env.IDP_CLIENT_ID);

// A refresh keeps the grant's resource; widening it is invalid_target.
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
assert.equal(claims(refreshed.access_token).aud, env.MCP_RESOURCE);
await assert.rejects(client.refreshTokenGrant(config, refreshed.refresh_token, { resource: env.OTHER_RESOURCE }),
  (err) => err.error === "invalid_target");

// A resource the client may not address is refused at the authorization endpoint, on the redirect URI.
const refused = await go(client.buildAuthorizationUrl(config, {
  redirect_uri: env.IDP_REDIRECT_URI, scope: "openid", state, resource: env.OTHER_RESOURCE,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
}));
assert.equal(refused.status, 302);
const error = new URL(refused.headers.get("location"));
assert.equal(error.searchParams.get("error"), "invalid_target");
assert.equal(error.searchParams.get("state"), state);

console.log("mcp script: ok");
