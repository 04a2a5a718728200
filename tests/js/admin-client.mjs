// Keycloak's own admin client (@keycloak/keycloak-admin-client) runs a script of calls against
// a running server: IDP_BASE_URL, IDP_ADMIN_USERNAME and IDP_ADMIN_PASSWORD from the environment,
// IDP_ADMIN_CLIENT the package to run (package.json's pinned release, or its alias of the newest).
// Any failed assertion or unexpected answer exits non-zero (run by tests/idp/test_admin_clients.py).
import assert from "node:assert/strict";

const { IDP_BASE_URL: baseUrl, IDP_ADMIN_USERNAME: username, IDP_ADMIN_PASSWORD: password } = process.env;
const { default: KcAdminClient } = await import(process.env.IDP_ADMIN_CLIENT ?? "@keycloak/keycloak-admin-client");
const kc = new KcAdminClient({ baseUrl, realmName: "master" });
await kc.auth({ username, password, grantType: "password", clientId: "admin-cli" });

const info = await kc.serverInfo.find();
assert.match(info.systemInfo.version, /^26\./);
assert.ok((await kc.realms.find()).some((r) => r.realm === "master"));

// Since 26.7 find and create of realms, users, groups, clients, components and organizations
// (and groups.updateRoot) send their collection's path with a trailing slash ("realms/").
assert.deepEqual(await kc.realms.create({ realm: "jsk", enabled: true, organizationsEnabled: true }),
  { realmName: "jsk" });
assert.equal((await kc.realms.findOne({ realm: "jsk" })).realm, "jsk");
await assert.rejects(kc.realms.create({ realm: "jsk" }), (err) => err.response.status === 409);
kc.setConfig({ realmName: "jsk" });

const { id: clientUuid } = await kc.clients.create({ clientId: "web", publicClient: false,
  serviceAccountsEnabled: true, directAccessGrantsEnabled: true });
assert.deepEqual((await kc.clients.find({ clientId: "web" })).map((c) => c.id), [clientUuid]);
const secret = await kc.clients.getClientSecret({ id: clientUuid });
assert.equal(secret.type, "secret");
const fresh = await kc.clients.generateNewClientSecret({ id: clientUuid });
assert.notEqual(fresh.value, secret.value);
assert.equal((await kc.clients.getServiceAccountUser({ id: clientUuid })).username, "service-account-web");
await kc.clients.createRole({ id: clientUuid, name: "reader" });
const reader = await kc.clients.findRole({ id: clientUuid, roleName: "reader" });
assert.equal(reader.clientRole, true);

assert.deepEqual(await kc.roles.create({ name: "editor", description: "edits" }), { roleName: "editor" });
const editor = await kc.roles.findOneByName({ name: "editor" });
assert.equal(editor.description, "edits");

const { id: groupId } = await kc.groups.create({ name: "staff" });
const { id: subId } = await kc.groups.createChildGroup({ id: groupId }, { name: "ops" });
assert.equal((await kc.groups.findOne({ id: subId })).path, "/staff/ops");
assert.deepEqual((await kc.groups.find()).map((g) => g.name), ["staff"]);
const { id: tempId } = await kc.groups.create({ name: "temp" });
await kc.groups.updateChildGroup({ id: groupId }, { id: tempId, name: "temp" });  // moved below staff
assert.equal((await kc.groups.findOne({ id: tempId })).path, "/staff/temp");
await kc.groups.updateRoot({ id: tempId, name: "temp" });  // and back to the top
assert.equal((await kc.groups.findOne({ id: tempId })).path, "/temp");
assert.deepEqual((await kc.groups.find({ search: "temp" })).map((g) => g.id), [tempId]);
await kc.groups.del({ id: tempId });

const { id: userId } = await kc.users.create({ username: "alice", email: "alice@example.org", enabled: true,
  firstName: "Alice" });
await assert.rejects(kc.users.create({ username: "alice" }),
  (err) => err.response.status === 409 && err.responseData.errorMessage === "User exists with same username");
await kc.users.create({ username: "bob", enabled: true });
await kc.users.resetPassword({ id: userId, credential: { type: "password", value: "alice-pass-1", temporary: false } });

await kc.users.addRealmRoleMappings({ id: userId, roles: [{ id: editor.id, name: editor.name }] });
assert.ok((await kc.users.listRealmRoleMappings({ id: userId })).some((r) => r.name === "editor"));
assert.ok((await kc.users.listCompositeRealmRoleMappings({ id: userId })).some((r) => r.name === "offline_access"));
await kc.users.addClientRoleMappings({ id: userId, clientUniqueId: clientUuid, roles: [{ id: reader.id, name: "reader" }] });
assert.deepEqual((await kc.users.listClientRoleMappings({ id: userId, clientUniqueId: clientUuid })).map((r) => r.name),
  ["reader"]);
await kc.users.addToGroup({ id: userId, groupId: subId });
assert.deepEqual((await kc.users.listGroups({ id: userId })).map((g) => g.path), ["/staff/ops"]);
assert.deepEqual((await kc.groups.listMembers({ id: subId })).map((u) => u.username), ["alice"]);

assert.deepEqual((await kc.users.find({ search: "al" })).map((u) => u.username), ["alice"]);
assert.equal(await kc.users.count(), 2);
await kc.users.update({ id: userId }, { lastName: "Liddell" });
assert.equal((await kc.users.findOne({ id: userId })).lastName, "Liddell");
await kc.users.del({ id: userId });
assert.equal(await kc.users.findOne({ id: userId }), null);
assert.equal(await kc.users.count(), 1);

const { id: orgId } = await kc.organizations.create({ name: "Acme", domains: [{ name: "acme.example" }] });
assert.deepEqual((await kc.organizations.find()).map((o) => [o.id, o.name]), [[orgId, "Acme"]]);
await kc.organizations.delById({ id: orgId });

const { id: ldapId } = await kc.components.create({ name: "corp", providerId: "ldap",
  providerType: "org.keycloak.storage.UserStorageProvider",
  config: { editMode: ["READ_ONLY"], connectionUrl: ["ldap://127.0.0.1:1"], usersDn: ["ou=people,dc=acme"] } });
assert.deepEqual((await kc.components.find({ type: "org.keycloak.storage.UserStorageProvider" })).map((c) => c.id),
  [ldapId]);
await kc.components.del({ id: ldapId });
assert.deepEqual(await kc.components.find({ name: "corp" }), []);

kc.setConfig({ realmName: "master" });
await kc.realms.del({ realm: "jsk" });
assert.equal(await kc.realms.findOne({ realm: "jsk" }), null);
console.log("admin client script: ok");
