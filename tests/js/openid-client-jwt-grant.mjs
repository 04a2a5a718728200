// panva's openid-client (v6) redeems a JWT authorization grant (RFC 7523 §2.1) at a running server:
// genericGrantRequest(config, "urn:ietf:params:oauth:grant-type:jwt-bearer", { assertion }).
// The assertion is signed here with jose, with the private JWK the test hands over (IDP_SIGNING_JWK);
// the test serves its public half as the identity provider's JWKS on loopback. IDP_ISSUER,
// IDP_CLIENT_ID, IDP_CLIENT_SECRET, ASSERTION_ISSUER, ASSERTION_SUBJECT from the environment;
// OPENID_CLIENT the package (package.json's pinned release, or its alias of the newest). Any failed
// assertion exits non-zero (run by tests/oidc/jwt_grant/test_interop_openid_client.py).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { importJWK, SignJWT } from "jose";

const env = process.env;
const issuer = env.IDP_ISSUER;
const GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const config = await client.discovery(new URL(issuer), env.IDP_CLIENT_ID, env.IDP_CLIENT_SECRET, undefined,
  { execute: [client.allowInsecureRequests] });
assert.ok(config.serverMetadata().grant_types_supported.includes(GRANT));

const jwk = JSON.parse(env.IDP_SIGNING_JWK);
const key = await importJWK(jwk, "ES256");
const assertion = ({ sub = env.ASSERTION_SUBJECT, aud = issuer } = {}) => new SignJWT({ jti: randomUUID() })
  .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "JWT" })
  .setIssuer(env.ASSERTION_ISSUER).setSubject(sub).setAudience(aud)
  .setIssuedAt().setExpirationTime("2m").sign(key);

// A valid assertion: an access token, no refresh token (Keycloak's transient session).
const first = await assertion();
const tokens = await client.genericGrantRequest(config, GRANT, { assertion: first, scope: "openid" });
assert.equal(tokens.token_type.toLowerCase(), "bearer");
assert.ok(tokens.access_token && tokens.id_token);
assert.equal(tokens.refresh_token, undefined);
assert.equal(tokens.claims().preferred_username, "alice");
assert.equal(tokens.claims().iss, issuer);

// Its jti was single use.
await assert.rejects(client.genericGrantRequest(config, GRANT, { assertion: first }),
  (err) => err.error === "invalid_grant" && err.error_description === "Token reuse detected");

// An assertion for another audience, and one for a subject nobody is linked to.
await assert.rejects(client.genericGrantRequest(config, GRANT,
  { assertion: await assertion({ aud: "https://elsewhere.example" }) }),
  (err) => err.error === "invalid_grant" && err.error_description === "Invalid token audience");
await assert.rejects(client.genericGrantRequest(config, GRANT, { assertion: await assertion({ sub: "nobody" }) }),
  (err) => err.error === "invalid_grant" && err.error_description === "User not found");

console.log("jwt grant script: ok");
