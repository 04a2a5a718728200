"""SAML protocol mappers (Keycloak's types and config keys) and the client's role scope, both
read once per client into the realm's cached configuration and followed when they change."""
import pytest

from realms.models import Client, ClientScope, Group, ProtocolMapper, Role
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user
from saml import constants as c
from saml.clients import cached
from saml.mappers import attributes_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup():
    realm = create_realm("acme")
    client = Client.objects.create(realm=realm, client_id="https://sp.example", protocol=c.PROTOCOL)
    add_default_client_scopes(client)
    user = create_user(realm, "alice", email="alice@example.org", first_name="Alice", email_verified=True,
                       attributes={"team": ["blue"]})
    parent = Group.objects.create(realm=realm, name="org", attributes={"team": ["green"]})
    user.groups.add(Group.objects.create(realm=realm, name="eng", parent=parent))
    editor = Role.objects.create(realm=realm, name="editor")
    Role.objects.create(realm=realm, name="unused")
    user.roles.add(editor)
    return realm, client, user


def mapper(client, kind, **config):
    return ProtocolMapper.objects.create(client=client, name=kind + str(len(config)), protocol=c.PROTOCOL,
                                         protocol_mapper=kind, config=config)


def as_tuples(attributes):
    return [(a.name, a.name_format, a.friendly_name, a.values) for a in attributes]


def test_property_attribute_hardcoded_and_group_mappers(setup):
    realm, client, user = setup
    mapper(client, "saml-user-property-mapper", **{"user.attribute": "firstName", "attribute.name": "urn:oid:2.5.4.42",
                                                   "attribute.nameformat": "URI Reference", "friendly.name": "givenName"})
    mapper(client, "saml-user-property-mapper", **{"user.attribute": "emailVerified", "attribute.name": "verified"})
    mapper(client, "saml-user-attribute-mapper", **{"user.attribute": "team", "attribute.name": "team",
                                                    "aggregate.attrs": "true"})
    mapper(client, "saml-hardcode-attribute-mapper", **{"attribute.name": "tier", "attribute.value": "gold"})
    mapper(client, "saml-group-membership-mapper", **{"attribute.name": "groups", "full.path": "false",
                                                      "single": "true"})
    # The role_list scope's mapper first, then the client's by name.
    assert [a for a in as_tuples(attributes_for(user, cached(realm).of(client))) if a[0] != "Role"] == [
        ("groups", c.ATTRNAME_BASIC, "", ["eng"]),
        ("tier", c.ATTRNAME_BASIC, "", ["gold"]),
        ("team", c.ATTRNAME_BASIC, "", ["blue", "green"]),
        ("verified", c.ATTRNAME_BASIC, "", ["true"]),
        ("urn:oid:2.5.4.42", c.ATTRNAME_URI, "givenName", ["Alice"]),
    ]


def test_role_list_from_the_default_scope_follows_the_client_scope(setup):
    realm, client, user = setup
    assert [m.protocol_mapper for m in cached(realm).of(client).mappers] == ["saml-role-list-mapper"]  # role_list
    # Each call as a request makes it: the client's mappers and scope from the realm's cached
    # configuration, which every change below drops.
    names = lambda: [a.values[0] for a in attributes_for(user, cached(realm).of(client))]  # noqa: E731
    assert "editor" in names() and "offline_access" in names() and "unused" not in names()

    # Full scope off: only roles in the client's scope (its own scope roles and its SAML scopes').
    client.full_scope_allowed = False
    client.save()
    assert names() == []
    client.scope_roles.add(Role.objects.get(realm=realm, name="editor"))
    assert names() == ["editor"]
    ClientScope.objects.get(realm=realm, name="role_list").scope_roles.add(
        Role.objects.get(realm=realm, name="offline_access"))
    assert names() == ["editor", "offline_access"]

    role_list = ProtocolMapper.objects.get(client_scope__name="role_list", client_scope__realm=realm)
    role_list.config = {**role_list.config, "single": "true"}
    role_list.save()
    assert as_tuples(attributes_for(user, cached(realm).of(client))) == [
        ("Role", c.ATTRNAME_BASIC, "", ["editor", "offline_access"])]
