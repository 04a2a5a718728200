// panva's openid-client (v6) registers a client dynamically (RFC 7591) against a running server
// with an initial access token, then uses it: a client credentials grant, and RFC 7592's read
// and delete with the registration access token. IDP_ISSUER and IDP_INITIAL_ACCESS_TOKEN (count 1)
// from the environment; OPENID_CLIENT the package (package.json's pinned release, or its alias of
// the newest). Any failed assertion exits non-zero (run by tests/oidc/registration/test_interop_openid_client.py).
import assert from "node:assert/strict";

const { IDP_ISSUER: issuer, IDP_INITIAL_ACCESS_TOKEN: initialAccessToken } = process.env;
const client = await import(process.env.OPENID_CLIENT ?? "openid-client");
const insecure = { execute: [client.allowInsecureRequests] };
const metadata = { client_name: "js-peer", grant_types: ["client_credentials"], redirect_uris: [],
  token_endpoint_auth_method: "client_secret_basic" };

// Anonymous: the realm's default Trusted Hosts policy trusts no host.
await assert.rejects(client.dynamicClientRegistration(new URL(issuer), metadata, undefined, insecure),
  (err) => err.status === 403 && err.cause?.[0]?.parameters?.error === "insufficient_scope");

const config = await client.dynamicClientRegistration(new URL(issuer), metadata, undefined,
  { ...insecure, initialAccessToken });
const registered = config.clientMetadata();
assert.equal(registered.client_name, "js-peer");
assert.ok(registered.client_id && registered.client_secret && registered.registration_access_token);
assert.equal(registered.registration_client_uri,
  `${issuer}/clients-registrations/openid-connect/${registered.client_id}`);
assert.equal(config.serverMetadata().registration_endpoint, `${issuer}/clients-registrations/openid-connect`);

// The initial access token allowed one registration.
await assert.rejects(client.dynamicClientRegistration(new URL(issuer), metadata, undefined,
  { ...insecure, initialAccessToken }), (err) => err.status === 401 && err.cause?.[0]?.parameters?.error === "invalid_token");

// The new client at work, authenticating as it registered (HTTP Basic).
const basic = new client.Configuration(config.serverMetadata(), registered.client_id, registered.client_secret,
  client.ClientSecretBasic(registered.client_secret));
client.allowInsecureRequests(basic);
const tokens = await client.clientCredentialsGrant(basic);
assert.equal(tokens.token_type.toLowerCase(), "bearer");
const payload = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url"));
assert.equal(payload.azp, registered.client_id);
assert.equal(payload.iss, issuer);

// RFC 7592: read, then delete, with the registration access token.
const auth = { Authorization: `Bearer ${registered.registration_access_token}` };
const read = await fetch(registered.registration_client_uri, { headers: auth });
assert.equal(read.status, 200);
assert.equal((await read.json()).client_id, registered.client_id);
const removed = await fetch(registered.registration_client_uri, { method: "DELETE", headers: auth });
assert.equal(removed.status, 204);
await assert.rejects(client.clientCredentialsGrant(basic),
  (err) => err.error === "invalid_client" || err.cause?.[0]?.parameters?.error === "invalid_client");
console.log("registration script: ok");
