"""Counts held exactly (docs/cost-model.md): the attributes of one assertion read the user's roles
and groups once, however many of the client's mappers use them (``saml.mappers.attributes_for``)."""
from realms.models import Group
from saml import clients, mappers
from tests.conftest import assert_costs

from .conftest import SP_ENTITY, make_saml_client
from .sp import key_pair

SP_BASE = "https://sp.example"


def test_mappers_share_one_read_of_the_users_roles_and_groups(realm, user, measure):
    client = make_saml_client(realm, SP_ENTITY, SP_BASE, key_pair("assertion-sp")[2])
    for name, mapper, config in (
        # Beside the "role list" mapper of the default role_list scope (one Attribute per role),
        # the group mapper's full paths and an attribute aggregated from the user's groups.
        ("roles", "saml-role-list-mapper", {"attribute.name": "roles", "single": "true"}),
        ("group names", "saml-group-membership-mapper", {"attribute.name": "group-names", "single": "true",
                                                         "full.path": "false"}),
        ("departments", "saml-user-attribute-mapper", {"user.attribute": "department",
                                                       "attribute.name": "departments", "aggregate.attrs": "true"}),
    ):
        client.protocol_mappers.create(name=name, protocol="saml", protocol_mapper=mapper, config=config)
    Group.objects.filter(realm=realm, name="staff").update(attributes={"department": ["staff-wide"]})
    Group.objects.filter(realm=realm, name="ops").update(attributes={"department": ["research", "operations"]})
    saml_client = clients.by_entity_id(realm, SP_ENTITY)
    mappers.attributes_for(user, saml_client)  # the client's mappers, role scope and the groups' paths cached
    found = {}
    with measure() as found["assertion_attributes"]:
        given = mappers.attributes_for(user, saml_client)
    attributes = {a.name: a.values for a in given}
    assert attributes["groups"] == ["/staff/ops"] and attributes["group-names"] == ["ops"]
    one_per_role = [a.values[0] for a in given if a.name == "Role"]
    assert attributes["roles"] == one_per_role and "default-roles-acme" in one_per_role
    assert attributes["departments"][0] == "research"
    assert sorted(attributes["departments"]) == ["operations", "research", "staff-wide"]
    # The user's roles, the user's groups, their parents (one level up): each read once. Each
    # mapper read its own before (6: the roles twice, the groups three times, the parents once).
    assert_costs(found, {"assertion_attributes": (3, 0)})
