// panva's openid-client (v6) runs an RFC 8693 token exchange at a running server:
// genericGrantRequest(config, "urn:ietf:params:oauth:grant-type:token-exchange", {...}).
// The subject token comes from the password grant of client SUBJECT_CLIENT_ID (whose audience
// mapper names the requester). IDP_ISSUER, IDP_CLIENT_ID, IDP_CLIENT_SECRET, SUBJECT_CLIENT_ID,
// USERNAME, PASSWORD from the environment; OPENID_CLIENT the package (the pinned release or its
// alias of the newest). Any failed assertion exits non-zero (tests/oidc/token_exchange/test_interop.py).
import assert from "node:assert/strict";

const env = process.env;
const issuer = env.IDP_ISSUER;
const GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const options = { execute: [client.allowInsecureRequests] };
const config = await client.discovery(new URL(issuer), env.IDP_CLIENT_ID, env.IDP_CLIENT_SECRET, undefined, options);
assert.ok(config.serverMetadata().grant_types_supported.includes(GRANT));
const initial = await client.discovery(new URL(issuer), env.SUBJECT_CLIENT_ID, env.IDP_CLIENT_SECRET, undefined, options);
const subject = await client.genericGrantRequest(initial, "password", { username: env.USERNAME, password: env.PASSWORD });

const tokens = await client.genericGrantRequest(config, GRANT, {
  subject_token: subject.access_token, subject_token_type: ACCESS, audience: "target", scope: "openid" });
assert.equal(tokens.token_type.toLowerCase(), "bearer");
assert.equal(tokens.issued_token_type, ACCESS);
assert.ok(tokens.access_token && tokens.id_token);
assert.equal(tokens.claims().iss, issuer);
const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url"));
assert.equal(claims.aud, "target");
assert.equal(claims.azp, env.IDP_CLIENT_ID);

// An audience nobody is, and a token that is not one.
await assert.rejects(client.genericGrantRequest(config, GRANT,
  { subject_token: subject.access_token, subject_token_type: ACCESS, audience: "nobody" }),
  (err) => err.error === "invalid_client" && err.error_description === "Audience not found");
await assert.rejects(client.genericGrantRequest(config, GRANT, { subject_token: "nope", subject_token_type: ACCESS }),
  (err) => err.error === "invalid_request" && err.error_description === "Invalid token");

console.log("token exchange script: ok");
