// panva's openid-client (v6) runs the OAuth 2.0 Device Authorization Grant (RFC 8628) against a
// running server: initiateDeviceAuthorization, then pollDeviceAuthorizationGrant. IDP_ISSUER and
// IDP_CLIENT_ID (a public client) from the environment; OPENID_CLIENT the package (package.json's
// pinned release, or its alias of the newest). The script prints the device authorization
// response as one JSON line; the test then approves the user code in a browser, and the poll must
// end with tokens. Any failed assertion exits non-zero (run by tests/oidc/device/test_interop.py).
import assert from "node:assert/strict";

const { IDP_ISSUER: issuer, IDP_CLIENT_ID: clientId } = process.env;
const client = await import(process.env.OPENID_CLIENT ?? "openid-client");
const config = await client.discovery(new URL(issuer), clientId, undefined, client.None(),
  { execute: [client.allowInsecureRequests] });
assert.equal(config.serverMetadata().device_authorization_endpoint,
  `${issuer}/protocol/openid-connect/auth/device`);
assert.ok(config.serverMetadata().grant_types_supported.includes("urn:ietf:params:oauth:grant-type:device_code"));

const started = await client.initiateDeviceAuthorization(config, { scope: "openid profile" });
assert.match(started.user_code, /^[A-Z]{4}-[A-Z]{4}$/);
assert.equal(started.verification_uri, `${issuer}/device`);
assert.equal(started.verification_uri_complete, `${issuer}/device?user_code=${started.user_code}`);
assert.equal(started.interval, 1);

// Not approved yet: authorization_pending.
await assert.rejects(
  client.genericGrantRequest(config, "urn:ietf:params:oauth:grant-type:device_code", { device_code: started.device_code }),
  (err) => err.error === "authorization_pending");
console.log(JSON.stringify(started));

const tokens = await client.pollDeviceAuthorizationGrant(config, started);
assert.equal(tokens.token_type.toLowerCase(), "bearer");
assert.ok(tokens.access_token && tokens.refresh_token && tokens.id_token);
const claims = tokens.claims();
assert.equal(claims.iss, issuer);
assert.equal(claims.aud, clientId);
assert.equal(claims.preferred_username, "alice");

// The device code was single use.
await assert.rejects(
  client.genericGrantRequest(config, "urn:ietf:params:oauth:grant-type:device_code", { device_code: started.device_code }),
  (err) => err.error === "invalid_grant");

// The refresh token works.
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
assert.ok(refreshed.access_token);
console.log("device script: ok");
