// panva's openid-client (v6) signs in through a pushed authorization request carrying a signed
// request object (RFC 9126 + RFC 9101), authenticating with private_key_jwt, at a running server:
// buildAuthorizationUrlWithJAR, then buildAuthorizationUrlWithPAR with its parameters; the login
// form is filled here with fetch (a cookie jar of one session), then authorizationCodeGrant with
// PKCE. IDP_ISSUER, IDP_CLIENT_ID, IDP_SIGNING_JWK (the client's private JWK), IDP_USERNAME,
// IDP_PASSWORD, IDP_REDIRECT_URI from the environment; OPENID_CLIENT the package (package.json's
// pinned release, or its alias of the newest). Any failed assertion exits non-zero (run by
// tests/oidc/par/test_interop_openid_client.py).
import assert from "node:assert/strict";

const env = process.env;
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const jwk = JSON.parse(env.IDP_SIGNING_JWK);
const privateKey = {
  kid: jwk.kid,
  key: await crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]),
};
const config = await client.discovery(new URL(env.IDP_ISSUER), env.IDP_CLIENT_ID, undefined,
  client.PrivateKeyJwt(privateKey), { execute: [client.allowInsecureRequests] });
const metadata = config.serverMetadata();
assert.ok(metadata.pushed_authorization_request_endpoint.endsWith("/protocol/openid-connect/ext/par/request"));
assert.ok(metadata.request_object_signing_alg_values_supported.includes("ES256"));

const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const parameters = {
  redirect_uri: env.IDP_REDIRECT_URI, scope: "openid", state, response_type: "code",
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
};

// This client must send a request object (request.object.required): a plain request is refused
// on a page; and it must push (require.pushed.authorization.requests): a signed request sent
// straight to the authorization endpoint is refused on its redirect URI.
const plain = await fetch(client.buildAuthorizationUrl(config, parameters), { redirect: "manual" });
assert.equal(plain.status, 400);
const direct = await fetch(await client.buildAuthorizationUrlWithJAR(config, parameters, privateKey),
  { redirect: "manual" });
assert.equal(direct.status, 302);
const refusal = new URL(direct.headers.get("location")).searchParams;
assert.equal(refusal.get("error"), "invalid_request");
assert.equal(refusal.get("error_description"), "Pushed Authorization Request is only allowed.");

const { searchParams: signed } = await client.buildAuthorizationUrlWithJAR(config, parameters, privateKey);
assert.ok(signed.get("request"));
const authorizationUrl = await client.buildAuthorizationUrlWithPAR(config, signed);
assert.ok(authorizationUrl.searchParams.get("request_uri").startsWith("urn:ietf:params:oauth:request_uri:"));

// The browser's part: the login page, the form posted with the session's cookies.
const jar = new Map();
const remember = (response) => {
  for (const cookie of response.headers.getSetCookie()) {
    const [pair] = cookie.split(";");
    const at = pair.indexOf("=");
    jar.set(pair.slice(0, at), pair.slice(at + 1));
  }
};
const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
const page = await fetch(authorizationUrl, { redirect: "manual" });
assert.equal(page.status, 200);
remember(page);
const html = await page.text();
const action = html.match(/<form[^>]*action="([^"]+)"/)[1].replaceAll("&amp;", "&");
// The form's hidden fields (its CSRF token) go back with it.
const hidden = Object.fromEntries([...html.matchAll(/<input[^>]*type="hidden"[^>]*>/g)].map(([input]) =>
  [input.match(/name="([^"]*)"/)[1], (input.match(/value="([^"]*)"/) ?? [])[1] ?? ""]));
const done = await fetch(new URL(action, authorizationUrl), {
  method: "POST", redirect: "manual",
  headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies() },
  body: new URLSearchParams({ ...hidden, username: env.IDP_USERNAME, password: env.IDP_PASSWORD }),
});
assert.equal(done.status, 302);
const callback = new URL(done.headers.get("location"));

const tokens = await client.authorizationCodeGrant(config, callback,
  { pkceCodeVerifier: verifier, expectedState: state });
assert.ok(tokens.access_token && tokens.id_token);
assert.equal(tokens.claims().preferred_username, env.IDP_USERNAME);
assert.equal(tokens.claims().azp, env.IDP_CLIENT_ID);

// The request_uri was single use.
const again = await fetch(authorizationUrl, { redirect: "manual" });
assert.equal(again.status, 400);

console.log("par script: ok");
