// Keycloak's own admin client (@keycloak/keycloak-admin-client) creates, reads, updates and deletes
// an OpenID Connect identity provider and its mappers, and links a user to it, against a running
// server: IDP_BASE_URL, IDP_ADMIN_USERNAME and IDP_ADMIN_PASSWORD from the environment,
// IDP_ADMIN_CLIENT the package (package.json's pinned release, or its alias of the newest),
// IDP_REALM the realm to work in (made here). Any failed assertion or unexpected answer exits
// non-zero (run by tests/realms/test_admin_identity_providers_clients.py).
import assert from "node:assert/strict";

const { IDP_BASE_URL: baseUrl, IDP_ADMIN_USERNAME: username, IDP_ADMIN_PASSWORD: password,
  IDP_REALM: realm } = process.env;
const { default: KcAdminClient } = await import(process.env.IDP_ADMIN_CLIENT ?? "@keycloak/keycloak-admin-client");
const kc = new KcAdminClient({ baseUrl, realmName: "master" });
await kc.auth({ username, password, grantType: "password", clientId: "admin-cli" });
await kc.realms.create({ realm, enabled: true });
kc.setConfig({ realmName: realm });

const info = await kc.serverInfo.find();
assert.ok(info.identityProviders.some((p) => p.id === "oidc"));

const oidc = {
  alias: "corp", displayName: "Corp SSO", providerId: "oidc", enabled: true, trustEmail: false,
  config: { clientId: "our-app", clientSecret: "js-secret-1", clientAuthMethod: "client_secret_post",
    authorizationUrl: "https://sso.corp.example/authorize", tokenUrl: "https://sso.corp.example/token",
    issuer: "https://sso.corp.example", jwksUrl: "https://sso.corp.example/jwks", useJwksUrl: "true",
    validateSignature: "true", syncMode: "IMPORT" },
};
assert.deepEqual(await kc.identityProviders.create(oidc), { id: "corp" });
await assert.rejects(kc.identityProviders.create(oidc),
  (err) => err.response.status === 409 && err.responseData.errorMessage === "Identity Provider corp already exists");
await assert.rejects(kc.identityProviders.create({ ...oidc, alias: "other", providerId: "no-such-type" }),
  (err) => err.response.status === 400);

const listed = await kc.identityProviders.find();
assert.deepEqual(listed.map((p) => p.alias), ["corp"]);
const found = await kc.identityProviders.findOne({ alias: "corp" });
assert.equal(found.displayName, "Corp SSO");
assert.equal(found.config.clientSecret, "**********");
assert.equal(found.config.authorizationUrl, oidc.config.authorizationUrl);
assert.equal(await kc.identityProviders.findOne({ alias: "missing" }), null);  // 404: catchNotFound

await kc.identityProviders.update({ alias: "corp" }, { ...found, trustEmail: true, displayName: "Corp" });
const updated = await kc.identityProviders.findOne({ alias: "corp" });
assert.equal(updated.trustEmail, true);
assert.equal(updated.displayName, "Corp");
assert.equal(updated.config.clientSecret, "**********");

const factory = await kc.identityProviders.findFactory({ providerId: "oidc" });
assert.equal(factory.id, "oidc");
const types = await kc.identityProviders.findMapperTypes({ alias: "corp" });
assert.ok(types["hardcoded-attribute-idp-mapper"]);

const mapper = { name: "dept", identityProviderAlias: "corp", identityProviderMapper: "hardcoded-attribute-idp-mapper",
  config: { attribute: "dept", "attribute.value": "sales", syncMode: "INHERIT" } };
const { id: mapperId } = await kc.identityProviders.createMapper({ alias: "corp", identityProviderMapper: mapper });
assert.ok(mapperId);
assert.deepEqual((await kc.identityProviders.findMappers({ alias: "corp" })).map((m) => m.name), ["dept"]);
const one = await kc.identityProviders.findOneMapper({ alias: "corp", id: mapperId });
assert.equal(one.config["attribute.value"], "sales");
await kc.identityProviders.updateMapper({ alias: "corp", id: mapperId },
  { ...one, config: { ...one.config, "attribute.value": "support" } });
assert.equal((await kc.identityProviders.findOneMapper({ alias: "corp", id: mapperId })).config["attribute.value"],
  "support");
await kc.identityProviders.delMapper({ alias: "corp", id: mapperId });
assert.equal(await kc.identityProviders.findOneMapper({ alias: "corp", id: mapperId }), null);

const { id: userId } = await kc.users.create({ username: "linked", enabled: true });
await kc.users.addToFederatedIdentity({ id: userId, federatedIdentityId: "corp",
  federatedIdentity: { identityProvider: "corp", userId: "corp-7", userName: "linked@corp" } });
assert.deepEqual(await kc.users.listFederatedIdentities({ id: userId }),
  [{ identityProvider: "corp", userId: "corp-7", userName: "linked@corp" }]);
await kc.users.delFromFederatedIdentity({ id: userId, federatedIdentityId: "corp" });
assert.deepEqual(await kc.users.listFederatedIdentities({ id: userId }), []);

await kc.identityProviders.del({ alias: "corp" });
assert.deepEqual(await kc.identityProviders.find(), []);
await kc.realms.del({ realm });
console.log("identity providers script: ok");
