// panva's openid-client (v6) runs CIBA in poll mode against a running server:
// initiateBackchannelAuthentication, then pollBackchannelAuthenticationGrant. IDP_ISSUER,
// IDP_CLIENT_ID, IDP_CLIENT_SECRET from the environment; OPENID_CLIENT the package (package.json's
// pinned release, or its alias of the newest). The test's loopback authentication channel approves
// every request, except one whose binding_message is DENY. Any failed assertion exits non-zero
// (run by tests/oidc/ciba/test_interop_openid_client.py).
import assert from "node:assert/strict";

const { IDP_ISSUER: issuer, IDP_CLIENT_ID: clientId, IDP_CLIENT_SECRET: secret } = process.env;
const client = await import(process.env.OPENID_CLIENT ?? "openid-client");
const config = await client.discovery(new URL(issuer), clientId, secret, undefined,
  { execute: [client.allowInsecureRequests] });
assert.equal(config.serverMetadata().backchannel_authentication_endpoint,
  `${issuer}/protocol/openid-connect/ext/ciba/auth`);
assert.ok(config.serverMetadata().grant_types_supported.includes("urn:openid:params:grant-type:ciba"));

// Approved by the channel: tokens.
const started = await client.initiateBackchannelAuthentication(config,
  { scope: "openid profile", login_hint: "alice", binding_message: "JS-OK" });
assert.equal(typeof started.auth_req_id, "string");
assert.equal(started.expires_in, 60);
assert.equal(started.interval, 1);
const tokens = await client.pollBackchannelAuthenticationGrant(config, started);
assert.equal(tokens.token_type.toLowerCase(), "bearer");
assert.ok(tokens.access_token && tokens.refresh_token && tokens.id_token);
const claims = tokens.claims();
assert.equal(claims.iss, issuer);
assert.equal(claims.preferred_username, "alice");

// The auth_req_id was single use.
await assert.rejects(
  client.genericGrantRequest(config, "urn:openid:params:grant-type:ciba", { auth_req_id: started.auth_req_id }),
  (err) => err.error === "invalid_grant");

// Denied by the channel: access_denied.
const denied = await client.initiateBackchannelAuthentication(config,
  { scope: "openid", login_hint: "alice", binding_message: "DENY" });
await assert.rejects(client.pollBackchannelAuthenticationGrant(config, denied),
  (err) => err.error === "access_denied");

// Refused at the backchannel authentication endpoint.
await assert.rejects(client.initiateBackchannelAuthentication(config, { scope: "openid", login_hint: "nobody" }),
  (err) => err.error === "invalid_request" && err.error_description === "invalid user");
await assert.rejects(client.initiateBackchannelAuthentication(config,
  { scope: "openid", login_hint: "alice", binding_message: "two words" }),
  (err) => err.error === "invalid_binding_message");

console.log("ciba script: ok");
