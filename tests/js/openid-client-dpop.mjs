// panva's openid-client (v6) with DPoP (RFC 9449) against a running server whose clients require
// DPoP and a server nonce: client credentials (confidential client), then the authorization code
// flow with PKCE (public client; the sign-in through the realm's login form over plain HTTP), a
// refresh and userinfo, each with a proof of the client's key; openid-client answers the first
// use_dpop_nonce by retrying with the server's DPoP-Nonce. Checked: token_type DPoP, cnf.jkt the
// key's RFC 7638 thumbprint (computed by jose), the public client's refresh token bound too, and
// the refusals without a proof. IDP_ISSUER, IDP_CLIENT_ID / IDP_CLIENT_SECRET (confidential),
// IDP_PUBLIC_CLIENT_ID, IDP_REDIRECT_URI, IDP_USERNAME, IDP_PASSWORD from the environment;
// OPENID_CLIENT the package (the pinned release, or its alias of the newest). Run by
// tests/oidc/dpop/test_interop_openid_client.py.
import assert from "node:assert/strict";
import { calculateJwkThumbprint, exportJWK } from "jose";

const env = process.env;
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const issuer = new URL(env.IDP_ISSUER);
const claims = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());
const insecure = { execute: [client.allowInsecureRequests] };

// Client credentials, confidential client.
const service = await client.discovery(issuer, env.IDP_CLIENT_ID, env.IDP_CLIENT_SECRET, undefined, insecure);
assert.ok(service.serverMetadata().dpop_signing_alg_values_supported.includes("ES256"));
const serviceKeys = await client.randomDPoPKeyPair("ES256");
const serviceJkt = await calculateJwkThumbprint(await exportJWK(serviceKeys.publicKey));
const serviceDPoP = client.getDPoPHandle(service, serviceKeys);
const granted = await client.clientCredentialsGrant(service, {}, { DPoP: serviceDPoP });
assert.equal(granted.token_type, "dpop");
assert.equal(claims(granted.access_token).cnf.jkt, serviceJkt);
await assert.rejects(client.clientCredentialsGrant(service, {}),
  (err) => err.error === "invalid_dpop_proof" && err.error_description === "DPoP proof is missing");

// The authorization code flow, public client, with a browser without JavaScript (a cookie jar).
const config = await client.discovery(issuer, env.IDP_PUBLIC_CLIENT_ID, undefined, client.None(), insecure);
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
    response = await go(action, {
      method: "POST",
      body: new URLSearchParams({ csrfmiddlewaretoken: csrf, username: env.IDP_USERNAME, password: env.IDP_PASSWORD }),
      headers: { "content-type": "application/x-www-form-urlencoded", referer: url.href },
    });
  }
  throw new Error("sign-in did not come back to the redirect URI");
}

const keys = await client.randomDPoPKeyPair("ES256");
const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey));
const DPoP = client.getDPoPHandle(config, keys);
const verifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const callback = await signIn(client.buildAuthorizationUrl(config, {
  redirect_uri: env.IDP_REDIRECT_URI, scope: "openid", state,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
}));
const tokens = await client.authorizationCodeGrant(config, callback,
  { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP });
assert.equal(tokens.token_type, "dpop");
assert.equal(claims(tokens.access_token).cnf.jkt, jkt);
assert.equal(claims(tokens.refresh_token).cnf.jkt, jkt);  // a public client's refresh token is bound
assert.equal(tokens.claims().preferred_username, env.IDP_USERNAME);

// A refresh: with the key, new bound tokens; without a proof, refused.
await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token),
  (err) => err.error === "invalid_dpop_proof" && err.error_description === "DPoP proof is missing");
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP });
assert.equal(refreshed.token_type, "dpop");
assert.equal(claims(refreshed.access_token).cnf.jkt, jkt);

// Userinfo with the DPoP scheme and a proof carrying ath (and the server's nonce).
const sub = tokens.claims().sub;
const info = await client.fetchUserInfo(config, refreshed.access_token, sub, { DPoP });
assert.equal(info.preferred_username, env.IDP_USERNAME);
// The same token as a bearer token is refused.
const asBearer = await fetch(service.serverMetadata().userinfo_endpoint,
  { headers: { authorization: `Bearer ${refreshed.access_token}` } });
assert.equal(asBearer.status, 401);
assert.match(asBearer.headers.get("www-authenticate"), /^DPoP algs="[^"]*ES256[^"]*", error="invalid_token"/);

console.log("dpop script: ok");
