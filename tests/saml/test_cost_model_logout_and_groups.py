"""Counts held exactly (docs/cost-model.md): a logout step takes its SAML client from the realm's
cached configuration (``saml.clients.by_pk``), and the group-membership mapper takes the groups'
paths from the realm's cached group paths, so a deeper group costs no more than a top-level one."""
from django.test import Client as HttpClient

from realms.models import Client, Group
from realms.users.accounts import create_user
from saml import clients, logout, mappers
from saml import constants as c
from tests.conftest import assert_costs

from .conftest import SP_ENTITY, make_saml_client
from .sp import key_pair

SP_BASE = "https://sp.example"


def _client(realm):
    make_saml_client(realm, SP_ENTITY, SP_BASE, key_pair("groups-sp")[2])
    return clients.by_entity_id(realm, SP_ENTITY)


def _groups_attribute(user, client):
    return next(a.values for a in mappers.attributes_for(user, client) if a.name == "groups")


def test_a_logout_step_reads_no_client_row(realm, measure):
    client = _client(realm)
    step = logout._step_url(realm, {"k": "response", "c": client.client.pk, "u": f"{SP_BASE}/sp/slo",
                                    "b": c.BINDING_POST, "r": "_request-id", "rs": "state"})
    browser = HttpClient()
    # The realm, its keys and the client cached; the first use gives the key its certificate, the
    # second reads it back (saml.keys).
    assert browser.get(step).status_code == browser.get(step).status_code == 200
    found = {}
    with measure() as found["saml_logout_step"]:
        response = browser.get(step)
    page = response.content.decode()
    assert response.status_code == 200 and f'action="{SP_BASE}/sp/slo"' in page and "SAMLResponse" in page
    # Nothing: the client and the signing key come from the realm's cached configuration and keys
    # (the client's row was read by id on every step before).
    assert_costs(found, {"saml_logout_step": (0, 0)})


def test_a_logout_step_for_an_oidc_or_unknown_client_is_refused(realm):
    oidc = Client.objects.create(realm=realm, client_id="not-saml", protocol="openid-connect")
    client = _client(realm)
    assert clients.by_pk(realm, client.client.pk) is client
    assert clients.by_pk(realm, oidc.pk) is None
    assert clients.by_pk(realm, "no-such-client") is None
    step = logout._step_url(realm, {"k": "request", "c": oidc.pk, "n": "alice", "f": "", "s": "x"})
    refused = HttpClient().get(step)
    assert refused.status_code == 400 and "Unknown client." in refused.content.decode()


def test_group_paths_cost_one_query_whatever_the_depth(realm, measure):
    client = _client(realm)
    alice = create_user(realm, "alice")
    top = Group.objects.create(realm=realm, name="org")
    middle = Group.objects.create(realm=realm, name="unit", parent=top)
    alice.groups.add(Group.objects.create(realm=realm, name="team", parent=middle),
                     Group.objects.create(realm=realm, name="guests"))
    client = clients.by_entity_id(realm, SP_ENTITY)  # the configuration was let go by the changes
    assert _groups_attribute(alice, client) == ["/guests", "/org/unit/team"]  # the paths read once
    found = {}
    with measure() as found["group_membership_three_levels"]:
        assert _groups_attribute(alice, client) == ["/guests", "/org/unit/team"]
    # The user's roles (the role-list mapper of the client's default "role_list" scope) and the
    # user's groups; no parent row (two more for this group, one per level, before).
    assert_costs(found, {"group_membership_three_levels": (2, 0)})


def test_a_renamed_parent_group_is_seen_in_the_path(realm):
    alice = create_user(realm, "alice")
    top = Group.objects.create(realm=realm, name="org")
    alice.groups.add(Group.objects.create(realm=realm, name="team", parent=top))
    client = _client(realm)
    assert _groups_attribute(alice, client) == ["/org/team"]
    top.name = "company"
    top.save()
    assert _groups_attribute(alice, clients.by_entity_id(realm, SP_ENTITY)) == ["/company/team"]
