// panva's openid-client (v6) as a client whose ID tokens and userinfo are signed with IDP_ALG and
// encrypted (RSA-OAEP-256, A256GCM) to its own key, at a running server: the password grant
// (genericGrantRequest) with enableDecryptingResponses decrypts and validates the ID token (its
// alg, iss, aud, exp); fetchUserInfo decrypts the nested userinfo JWT and, with
// enableNonRepudiationChecks, verifies its signature against the realm's JWKS (asymmetric
// algorithms: openid-client verifies no HS signature, which only the server's secret can).
// IDP_ISSUER, IDP_CLIENT_ID, IDP_CLIENT_SECRET, IDP_ALG, IDP_ENC_JWK (the client's private RSA
// JWK), IDP_USERNAME, IDP_PASSWORD from the environment; OPENID_CLIENT the package. Any failed
// assertion exits non-zero (run by tests/oidc/endpoints/test_interop_encryption.py).
import assert from "node:assert/strict";

const env = process.env;
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const alg = env.IDP_ALG;
const encJwk = JSON.parse(env.IDP_ENC_JWK);
const decryptionKey = {
  kid: encJwk.kid,
  key: await crypto.subtle.importKey("jwk", encJwk, { name: "RSA-OAEP", hash: "SHA-256" }, false,
    ["decrypt", "unwrapKey"]),
};
const config = await client.discovery(new URL(env.IDP_ISSUER), env.IDP_CLIENT_ID, {
  id_token_signed_response_alg: alg, userinfo_signed_response_alg: alg,
}, client.ClientSecretPost(env.IDP_CLIENT_SECRET), { execute: [client.allowInsecureRequests] });
const metadata = config.serverMetadata();
assert.ok(metadata.id_token_signing_alg_values_supported.includes(alg));
assert.ok(metadata.userinfo_signing_alg_values_supported.includes(alg));
assert.ok(metadata.id_token_encryption_alg_values_supported.includes("RSA-OAEP-256"));
client.enableDecryptingResponses(config, ["A256GCM"], decryptionKey);
if (!alg.startsWith("HS")) client.enableNonRepudiationChecks(config);

const tokens = await client.genericGrantRequest(config, "password",
  { username: env.IDP_USERNAME, password: env.IDP_PASSWORD, scope: "openid" });
assert.equal(tokens.id_token.split(".").length, 5);  // as sent: a JWE
const claims = tokens.claims();
assert.equal(claims.azp, env.IDP_CLIENT_ID);
assert.equal(claims.preferred_username, env.IDP_USERNAME);

const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
assert.equal(userinfo.preferred_username, env.IDP_USERNAME);
assert.equal(userinfo.aud, env.IDP_CLIENT_ID);
console.log(`encryption script: ok ${alg}`);
