"""The LDAP group and role mappers against a real slapd: the three modes (IMPORT copies once,
READ_ONLY mirrors the directory and refuses changes, LDAP_ONLY writes ``member``), nested
groups with inheritance on and off (a cycle refused), both sync directions of the Admin API's
mapper action, the memberOf strategy, UID membership, realm- and client-role mappers, SCIM's
writes, and configurations refused."""
import pytest

from realms.models import Client, Component, Group, Role, User
from realms.representation import import_realm
from realms.representation.fields import RepresentationError
from realms.signin import passwords
from tests.realms.test_scim import PATCH, hr, scim  # noqa: F401 (fixtures)

from .conftest import make_provider
from .slapd import GROUPS, PEOPLE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
MAPPER = "org.keycloak.storage.ldap.mappers.LDAPStorageMapper"
EMPTY = "cn=empty-membership-placeholder"


def add_mapper(api, component, provider_id="group-ldap-mapper", **config):
    config = {"groups.dn" if provider_id == "group-ldap-mapper" else "roles.dn": GROUPS, **config}
    config = {k: v for k, v in config.items() if v is not None}
    return api("post", "acme/components", {"name": provider_id, "providerId": provider_id, "providerType": MAPPER,
                                           "parentId": component.pk,
                                           "config": {k: [v] for k, v in config.items()}})


def mapper_id(component, provider_id="group-ldap-mapper"):
    return Component.objects.get(parent_id=component.pk, provider_id=provider_id).pk


def signed_in(realm, name):
    result = passwords.check_password(realm, name, f"{name}-password")
    assert result.ok
    return User.objects.get(pk=result.user.pk)


def paths(user):
    return sorted(g.path for g in user.groups.all())


def members(directory, cn):
    return sorted(v.decode() for v in directory.get(f"cn={cn},{GROUPS}", "member")["member"])


def test_import_mode_copies_memberships_when_the_user_is_first_imported(realm, directory, admin_api):
    component = make_provider(realm, directory)
    assert add_mapper(admin_api, component, mode="IMPORT").status_code == 201
    dn = directory.add_user("ivan", "ivan-password")
    directory.add_group("ops", [dn])
    user = signed_in(realm, "ivan")
    assert paths(user) == ["/ops"]
    directory.modify(f"cn=ops,{GROUPS}", member=EMPTY)  # gone from the directory's group...
    assert paths(signed_in(realm, "ivan")) == ["/ops"]  # ...kept here: read once
    ops = Group.objects.get(realm=realm, name="ops")
    assert admin_api("delete", f"acme/users/{user.pk}/groups/{ops.pk}").status_code == 204  # here only
    assert members(directory, "ops") == [EMPTY]


def test_read_only_mirrors_the_directory_and_refuses_changes_of_its_groups(realm, directory, admin_api):
    component = make_provider(realm, directory, editMode="READ_ONLY")
    flat = {"preserve.group.inheritance": "false"}
    assert add_mapper(admin_api, component, mode="READ_ONLY", **flat).status_code == 201
    dn = directory.add_user("jane", "jane-password")
    directory.add_group("ops", [dn])
    directory.add_group("dev", [EMPTY])
    user = signed_in(realm, "jane")
    assert paths(user) == ["/ops"]
    assert admin_api("post", f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync").json()[
        "added"] == 1  # "dev": the user's lookup created only the groups they are in
    ops = Group.objects.get(realm=realm, name="ops")
    dev = Group.objects.get(realm=realm, name="dev")
    local = Group.objects.create(realm=realm, name="local")
    leave = admin_api("delete", f"acme/users/{user.pk}/groups/{ops.pk}")
    assert leave.status_code == 400
    assert leave.json()["errorMessage"] == "Not possible to delete LDAP group mappings as mapper mode is READ_ONLY"
    assert admin_api("put", f"acme/users/{user.pk}/groups/{dev.pk}").status_code == 400
    assert admin_api("put", f"acme/users/{user.pk}/groups/{local.pk}").status_code == 204  # not the directory's
    directory.modify(f"cn=ops,{GROUPS}", member=EMPTY)
    directory.modify(f"cn=dev,{GROUPS}", member=dn)
    assert paths(signed_in(realm, "jane")) == ["/dev", "/local"]  # read from the directory again
    assert members(directory, "dev") == [dn]


def test_scim_membership_changes_follow_the_mapper_mode(directory, hr, scim):  # noqa: F811
    component = make_provider(hr, directory, editMode="READ_ONLY")
    Component.objects.create(realm=hr, name="groups", provider_id="group-ldap-mapper", provider_type=MAPPER,
                             parent_id=component.pk, config={"groups.dn": [GROUPS], "mode": ["READ_ONLY"]})
    dn = directory.add_user("olga", "olga-password")
    directory.add_group("ops", [dn])
    user = signed_in(hr, "olga")
    ops = Group.objects.get(realm=hr, name="ops")
    resp = scim("patch", f"Groups/{ops.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": f'members[value eq "{user.pk}"]'}]})
    assert resp.status_code == 400
    assert resp.json()["detail"] == "Not possible to delete LDAP group mappings as mapper mode is READ_ONLY"
    assert list(ops.members.all()) == [user]


def test_scim_deleting_a_writable_directory_user_deletes_the_entry(directory, hr, scim):  # noqa: F811
    import ldap

    make_provider(hr, directory, editMode="WRITABLE")
    dn = directory.add_user("otto", "otto-password")
    user = signed_in(hr, "otto")
    assert scim("delete", f"Users/{user.pk}").status_code == 204
    with pytest.raises(ldap.NO_SUCH_OBJECT):
        directory.get(dn)


def test_ldap_only_writes_joins_and_leaves_to_the_directory(realm, directory, admin_api):
    component = make_provider(realm, directory)
    assert add_mapper(admin_api, component, mode="LDAP_ONLY").status_code == 201
    dn = directory.add_user("karl", "karl-password")
    directory.add_group("ops", [EMPTY])
    user = signed_in(realm, "karl")
    assert paths(user) == []
    admin_api("post", f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync")
    team = Group.objects.create(realm=realm, name="team")
    child = Group.objects.create(realm=realm, name="squad", parent=team)
    assert admin_api("put", f"acme/users/{user.pk}/groups/{child.pk}").status_code == 204
    # The realm's group is created in the directory, nested under its parent (inheritance on).
    assert members(directory, "squad") == [dn]
    assert members(directory, "team") == [f"cn=squad,{GROUPS}"]
    ops = Group.objects.get(realm=realm, name="ops")
    user.groups.add(ops)  # any writer, not only the Admin API
    assert members(directory, "ops") == [dn]
    assert admin_api("delete", f"acme/users/{user.pk}/groups/{child.pk}").status_code == 204
    assert members(directory, "squad") == [EMPTY]
    assert paths(signed_in(realm, "karl")) == ["/ops"]


def test_nested_groups_with_inheritance_on_and_off(realm, directory, admin_api):
    component = make_provider(realm, directory)
    dn = directory.add_user("lara", "lara-password")
    backend = directory.add_group("backend", [dn])
    directory.add_group("engineering", [backend])
    assert add_mapper(admin_api, component, mode="READ_ONLY").status_code == 201
    assert paths(signed_in(realm, "lara")) == ["/engineering/backend"]
    url = f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync"
    resp = admin_api("post", url, direction="fedToKeycloak")
    assert resp.status_code == 200
    assert resp.json() == {"ignored": False, "added": 0, "updated": 2, "removed": 0, "failed": 0,
                           "status": "0 imported groups, 2 updated groups, 0 removed groups"}
    mapper = Component.objects.get(pk=mapper_id(component))
    mapper.config.update({"preserve.group.inheritance": ["false"], "groups.path": ["/ldap"],
                          "drop.non.existing.groups.during.sync": ["true"]})
    assert admin_api("put", f"acme/components/{mapper.pk}", {"config": mapper.config}).json()["errorMessage"] == (
        "ldapErrorMissingGroupsPathGroup")
    ldap_parent = Group.objects.create(realm=realm, name="ldap")
    Group.objects.create(realm=realm, name="stale", parent=ldap_parent)
    assert admin_api("put", f"acme/components/{mapper.pk}", {"config": mapper.config}).status_code == 204
    resp = admin_api("post", url)  # fedToKeycloak by default
    assert resp.json()["status"] == "2 imported groups, 0 updated groups, 1 removed groups"
    assert sorted(g.path for g in Group.objects.filter(realm=realm, parent=ldap_parent)) == [
        "/ldap/backend", "/ldap/engineering"]
    assert "/ldap/backend" in paths(signed_in(realm, "lara"))


def test_a_cycle_or_a_missing_group_is_refused_with_inheritance(realm, directory, admin_api):
    component = make_provider(realm, directory)
    directory.add_group("a", [f"cn=b,{GROUPS}"])
    directory.add_group("b", [f"cn=a,{GROUPS}"])
    assert add_mapper(admin_api, component, mode="READ_ONLY").status_code == 201
    url = f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync"
    resp = admin_api("post", url, direction="fedToKeycloak")
    assert resp.status_code == 400 and "Recursion detected" in resp.json()["errorMessage"]
    assert not Group.objects.filter(realm=realm, name__in=["a", "b"]).exists()  # nothing half-made
    directory.modify(f"cn=b,{GROUPS}", member=f"cn=gone,{GROUPS}")
    directory.modify(f"cn=a,{GROUPS}", member=EMPTY)
    assert "'gone'" in admin_api("post", url).json()["errorMessage"]
    mapper = Component.objects.get(pk=mapper_id(component))
    mapper.config["ignore.missing.groups"] = ["true"]
    mapper.save()
    assert admin_api("post", url).json()["added"] == 2
    assert admin_api("post", url, direction="sideways").status_code == 400


def test_keycloak_groups_to_ldap(realm, directory, admin_api):
    component = make_provider(realm, directory)
    assert add_mapper(admin_api, component, mode="READ_ONLY", **{"mapped.group.attributes": "description"}
                      ).status_code == 201
    url = f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync"
    parent = Group.objects.create(realm=realm, name="sales", attributes={"description": ["Sales team"]})
    Group.objects.create(realm=realm, name="emea", parent=parent)
    directory.add_group("old", [EMPTY])
    ignored = admin_api("post", url, direction="keycloakToFed").json()  # only LDAP_ONLY writes the directory
    assert ignored["status"] == "0 groups imported to LDAP, 0 groups updated to LDAP, 0 groups removed from LDAP"
    mapper = Component.objects.get(pk=mapper_id(component))
    mapper.config.update({"mode": ["LDAP_ONLY"], "drop.non.existing.groups.during.sync": ["true"]})
    mapper.save()
    resp = admin_api("post", url, direction="keycloakToFed")
    assert resp.status_code == 200
    assert resp.json()["status"] == "2 groups imported to LDAP, 0 groups updated to LDAP, 1 groups removed from LDAP"
    assert members(directory, "sales") == [f"cn=emea,{GROUPS}"]
    assert directory.get(f"cn=sales,{GROUPS}", "description")["description"] == [b"Sales team"]
    assert admin_api("post", url, direction="keycloakToFed").json()["updated"] == 2


def test_member_of_strategy_filter_and_group_attributes(realm, directory, admin_api):
    component = make_provider(realm, directory)
    Group.objects.create(realm=realm, name="dir")
    assert add_mapper(admin_api, component, mode="READ_ONLY", **{
        "user.roles.retrieve.strategy": "GET_GROUPS_FROM_USER_MEMBEROF_ATTRIBUTE",
        "memberof.ldap.attribute": "seeAlso", "preserve.group.inheritance": "false", "groups.path": "/dir",
        "groups.ldap.filter": "(!(cn=hidden))", "mapped.group.attributes": "description"}).status_code == 201
    red = directory.add_group("red", [EMPTY])
    directory.modify(red, description="the red one")
    hidden = directory.add_group("hidden", [EMPTY])
    directory.add_user("mona", "mona-password", seeAlso=[red, f"cn=elsewhere,{PEOPLE}"])
    assert paths(signed_in(realm, "mona")) == ["/dir/red"]  # the user's own attribute, under groups.dn only
    resp = admin_api("post", f"acme/user-storage/{component.pk}/mappers/{mapper_id(component)}/sync")
    assert resp.json()["added"] == 0 and resp.json()["updated"] == 1  # "hidden" filtered out
    assert Group.objects.get(realm=realm, name="red").attributes == {"description": ["the red one"]}
    assert hidden and not Group.objects.filter(realm=realm, name="hidden").exists()


def test_client_role_mapper(realm, directory, admin_api, web_app):
    component = make_provider(realm, directory)
    assert add_mapper(admin_api, component, "role-ldap-mapper", mode="LDAP_ONLY", **{
        "use.realm.roles.mapping": "false", "client.id": "web-app"}).status_code == 201
    dn = directory.add_user("nora", "nora-password")
    directory.add_group("viewer", [dn])
    user = signed_in(realm, "nora")
    client = Client.objects.get(realm=realm, client_id="web-app")
    assert [(r.client_id, r.name) for r in user.roles.filter(client=client)] == [(client.pk, "viewer")]
    editor = Role.objects.create(realm=realm, client=client, name="editor")
    url = f"acme/users/{user.pk}/role-mappings/clients/{client.pk}"
    assert admin_api("post", url, [{"id": editor.pk, "name": "editor"}]).status_code == 204
    assert members(directory, "editor") == [dn]  # LDAP_ONLY: the grant is the directory's
    sync_url = f"acme/user-storage/{component.pk}/mappers/{mapper_id(component, 'role-ldap-mapper')}/sync"
    Role.objects.create(realm=realm, client=client, name="admin")
    resp = admin_api("post", sync_url, direction="keycloakToFed").json()
    assert resp["status"] == "1 roles imported to LDAP, 2 roles already existed in LDAP"
    directory.add_group("auditor", [EMPTY])
    assert admin_api("post", sync_url).json()["status"] == "1 imported roles, 3 roles already exists in Keycloak"
    assert Role.objects.filter(realm=realm, client=client, name="auditor").exists()
    assert not Role.objects.filter(realm=realm, client=None, name__in=["viewer", "auditor"]).exists()


@pytest.mark.parametrize("provider_id, config, message", [
    ("group-ldap-mapper", {"mode": "SOMETIMES"}, "mode must be one of LDAP_ONLY, READ_ONLY, IMPORT"),
    ("group-ldap-mapper", {"groups.dn": ""}, "groups.dn"),
    ("group-ldap-mapper", {"mode": None}, "Mode is required"),
    ("group-ldap-mapper", {"membership.attribute.type": "UID", "preserve.group.inheritance": "true"},
     "ldapErrorCantPreserveGroupInheritanceWithUIDMembershipType"),
    ("group-ldap-mapper", {"user.roles.retrieve.strategy": "LOAD_GROUPS_BY_MEMBER_ATTRIBUTE_RECURSIVELY"},
     "Active Directory only"),
    ("group-ldap-mapper", {"groups.ldap.filter": "cn=x"}, "ldapErrorInvalidCustomFilter"),
    ("role-ldap-mapper", {"use.realm.roles.mapping": "false"}, "client.id not found"),
])
def test_configurations_that_cannot_work_are_refused(realm, directory, admin_api, provider_id, config, message):
    component = make_provider(realm, directory)
    resp = add_mapper(admin_api, component, provider_id, **{"mode": "READ_ONLY", **config})
    assert resp.status_code == 400 and message in resp.json()["errorMessage"]


def test_realm_import_refuses_a_mapper_that_cannot_work(db):
    rep = {"realm": "imported", "components": {"org.keycloak.storage.UserStorageProvider": [{
        "name": "ldap", "providerId": "ldap", "config": {"editMode": ["READ_ONLY"]},
        "subComponents": {MAPPER: [{"name": "groups", "providerId": "group-ldap-mapper",
                                    "config": {"groups.dn": [GROUPS], "mode": ["IMPORT"]}}]}}]}}
    rep["components"]["org.keycloak.storage.UserStorageProvider"][0]["config"]["importEnabled"] = ["false"]
    with pytest.raises(RepresentationError, match="IMPORT"):
        import_realm(rep)


class _Recorder:
    def __init__(self):
        self.filters = []

    def search(self, base, filterstr, attrs, scope=None, size_limit=0):
        self.filters.append(filterstr)
        return []


def test_active_directory_recursive_strategy_asks_for_the_groups_in_chain():
    """Active Directory's LDAP_MATCHING_RULE_IN_CHAIN (slapd has no such rule: the filter sent is
    what can be checked here)."""
    from federation.ldap.config import LdapConfig
    from federation.ldap.membership_mappers import GroupMembership

    provider = Component(pk="p", config={"vendor": ["ad"], "editMode": ["READ_ONLY"],
                                         "connectionUrl": ["ldap://127.0.0.1"]})
    mapper = Component(pk="m", config={"groups.dn": ["ou=g,dc=x"], "mode": ["READ_ONLY"],
                                       "user.roles.retrieve.strategy": ["LOAD_GROUPS_BY_MEMBER_ATTRIBUTE_RECURSIVELY"]})
    GroupMembership.validate(mapper.config, provider.config)
    directory = _Recorder()
    GroupMembership(mapper, LdapConfig.of(provider)).entries_of(directory, [("cn=a\\,b,dc=x", {})])
    assert directory.filters == ["(&(objectClass=group)(member:1.2.840.113556.1.4.1941:=cn=a\\5c,b,dc=x))"]


def test_uid_membership_and_a_read_only_realm_role_mapper(realm, directory, admin_api):
    component = make_provider(realm, directory)
    assert add_mapper(admin_api, component, mode="READ_ONLY", **{
        "membership.attribute.type": "UID", "membership.ldap.attribute": "memberUid",
        "group.object.classes": "posixGroup", "preserve.group.inheritance": "false"}).status_code == 201
    assert add_mapper(admin_api, component, "role-ldap-mapper", mode="READ_ONLY", **{
        "role.object.classes": "groupOfNames", "roles.ldap.filter": "(cn=auditors)"}).status_code == 201
    dn = directory.add_user("pia", "pia-password")
    conn = directory.admin()
    try:
        conn.add_s(f"cn=unix,{GROUPS}", [("objectClass", [b"posixGroup"]), ("cn", [b"unix"]),
                                          ("gidNumber", [b"1000"]), ("memberUid", [b"pia"])])
    finally:
        conn.unbind_s()
    directory.add_group("auditors", [dn])
    directory.add_group("ignored-role", [dn])  # outside roles.ldap.filter
    user = signed_in(realm, "pia")
    assert paths(user) == ["/unix"]  # by UID; the groupOfNames entries are not posixGroups
    assert {r.name for r in user.roles.filter(client=None)} >= {"auditors"}
    assert not Role.objects.filter(realm=realm, name="ignored-role").exists()
    auditors = Role.objects.get(realm=realm, client=None, name="auditors")
    resp = admin_api("delete", f"acme/users/{user.pk}/role-mappings/realm", [{"id": auditors.pk, "name": "auditors"}])
    assert resp.status_code == 400
    assert resp.json()["errorMessage"] == "Not possible to delete LDAP role mappings as mapper mode is READ_ONLY"
