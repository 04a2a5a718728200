"""Authorization Services' import and decisions (realms.authz): Keycloak's two exports answer as
its documentation says, and every decision strategy, logic, enforcement mode and policy type
changes the answer."""
import copy
from datetime import UTC, datetime, timedelta

import pytest

from realms.authz.evaluation import Identity, Server, all_requests, decide
from realms.models import Client, User
from realms.representation import RepresentationError, export_realm, import_realm
from tests.realms.test_import_export import load

pytestmark = pytest.mark.django_db


def _server(realm, client_id):
    client = Client.objects.get(realm=realm, client_id=client_id)
    return Server(client, client.authorization_settings)


def _granted(server, username, requests=None, scopes=(), claims=None, client_id="app"):
    user = User.objects.get(realm=server.client.realm, username=username)
    identity = Identity(user, client_id, frozenset(scopes), claims or {})
    if requests is None:
        requests = all_requests(server, identity)
    else:
        requests = [(server.find(name, identity)[0], wanted) for name, wanted in requests]
    return {p["rsname"]: set(p.get("scopes", ())) for p in decide(server, server.client.realm, identity, requests)}


def test_realm_b_quickstart_grants_premium_to_premium_users_only(fresh_caches):
    realm = import_realm(load("quickstarts-kc9-full-export-realm-b.json")).realm
    server = _server(realm, "realm-b-client")
    assert _granted(server, "jdoe") == {"Default Resource": set()}
    assert _granted(server, "kolo") == {"Default Resource": set(), "Premium Resource": set()}


def test_testsuite_realm_scopes_follow_roles(fresh_caches):
    realm = import_realm(load("keycloak-testsuite-testrealm.json")).realm
    server = _server(realm, "test-app-authz")
    granted = _granted(server, "test-user@localhost")  # a "user", neither admin nor premium
    assert granted == {"Protected Resource": {"resource-access"},
                       "Main Page": {"urn:test-app-authz:page:main:actionForUser"}}


def test_export_gives_the_settings_back(fresh_caches):
    data = load("quickstarts-kc9-full-export-realm-b.json")
    exported = export_realm(import_realm(data).realm)
    settings = next(c for c in exported["clients"] if c["clientId"] == "realm-b-client")["authorizationSettings"]
    original = next(c for c in data["clients"] if c["clientId"] == "realm-b-client")["authorizationSettings"]
    assert [r["name"] for r in settings["resources"]] == [r["name"] for r in original["resources"]]
    assert settings["resources"][0]["_id"] == original["resources"][0]["_id"]
    assert [(p["name"], p["type"], p["config"]) for p in settings["policies"]] == [
        (p["name"], p["type"], p["config"]) for p in original["policies"]]
    assert "adminPermissionsClient" not in exported or exported["adminPermissionsClient"]["clientId"] == "admin-permissions"


# --- one realm, one resource server, built per test -------------------------------------------

def _realm(settings, name="authz"):
    return import_realm({
        "realm": name,
        "roles": {"realm": [{"name": "reader"}, {"name": "writer"}]},
        "groups": [{"name": "staff", "path": "/staff", "subGroups": [{"name": "team", "path": "/staff/team"}]}],
        "users": [{"username": "alice", "realmRoles": ["reader", "writer"], "groups": ["/staff/team"],
                   "attributes": {"dept": ["sales"]}},
                  {"username": "bob", "realmRoles": ["reader"]}],
        "clients": [{"clientId": "app", "authorizationSettings": settings}, {"clientId": "other"}],
    }).realm


def _policy(name, kind, config, **extra):
    return {"name": name, "type": kind, "config": config, **extra}


ALLOW = _policy("allow", "user", {"users": '["alice","bob"]'})
DENY = _policy("deny", "user", {"users": "[]"})


def _settings(permissions, policies=(ALLOW, DENY), **server):
    return {"resources": [{"name": "doc", "scopes": [{"name": "read"}, {"name": "write"}]},
                          {"name": "bare", "type": "urn:bare"}],
            "policies": [*policies, *permissions], **server}


def _scope_perm(name, scopes, policies, **extra):
    return _policy(name, "scope", {"resources": '["doc"]', "scopes": str(scopes).replace("'", '"'),
                                   "applyPolicies": str(policies).replace("'", '"')}, **extra)


def _doc(settings, username="alice", **kwargs):
    return _granted(_server(_realm(settings), "app"), username, [("doc", ())], **kwargs).get("doc")


@pytest.mark.parametrize(("strategy", "expected"), [
    ("UNANIMOUS", None),  # read is denied by one of the two permissions
    ("AFFIRMATIVE", {"read"}),
    ("CONSENSUS", None),  # one for, one against
])
def test_server_decision_strategy(strategy, expected, fresh_caches):
    settings = _settings([_scope_perm("p1", ["read"], ["allow"]), _scope_perm("p2", ["read"], ["deny"])],
                         decisionStrategy=strategy)
    assert _doc(settings) == expected


def test_consensus_counts_votes(fresh_caches):
    settings = _settings([_scope_perm("p1", ["read"], ["allow"]), _scope_perm("p2", ["read"], ["allow"]),
                          _scope_perm("p3", ["read"], ["deny"]), _scope_perm("p4", ["write"], ["deny"])],
                         decisionStrategy="CONSENSUS")
    assert _doc(settings) == {"read"}


@pytest.mark.parametrize(("strategy", "expected"), [
    ("UNANIMOUS", None), ("AFFIRMATIVE", {"read", "write"}), ("CONSENSUS", None)])
def test_permission_decision_strategy(strategy, expected, fresh_caches):
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["allow","deny"]'},
                         decisionStrategy=strategy)
    assert _doc(_settings([permission])) == expected


def test_negative_logic(fresh_caches):
    never = _policy("never", "user", {"users": '["alice"]'}, logic="NEGATIVE")
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["never"]'})
    server = _server(_realm(_settings([permission], policies=[never])), "app")
    assert _granted(server, "alice", [("doc", ())]) == {}
    assert _granted(server, "bob", [("doc", ())]) == {"doc": {"read", "write"}}


@pytest.mark.parametrize(("mode", "bare", "denied_doc"), [
    ("ENFORCING", None, None), ("PERMISSIVE", set(), None), ("DISABLED", set(), {"read", "write"})])
def test_enforcement_modes(mode, bare, denied_doc, fresh_caches):
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["deny"]'})
    server = _server(_realm(_settings([permission], policyEnforcementMode=mode)), "app")
    granted = _granted(server, "alice", [("doc", ()), ("bare", ())])
    assert granted.get("bare") == bare  # no permission covers it
    assert granted.get("doc") == denied_doc


def test_typed_resource_permission(fresh_caches):
    permission = _policy("p", "resource", {"defaultResourceType": "urn:bare", "applyPolicies": '["allow"]'})
    server = _server(_realm(_settings([permission])), "app")
    assert _granted(server, "alice", [("bare", ()), ("doc", ())]) == {"bare": set()}


def test_scope_permission_without_resources_applies_to_every_resource_with_the_scope(fresh_caches):
    permission = _policy("p", "scope", {"scopes": '["write"]', "applyPolicies": '["allow"]'})
    assert _doc(_settings([permission])) == {"write"}


NOW = datetime.now(UTC)
POLICY_CASES = [
    ("user", {"users": '["alice"]'}, {}, True, False),
    ("role", {"roles": '[{"id":"writer"}]'}, {}, True, False),
    ("role", {"roles": '[{"id":"reader","required":true},{"id":"writer","required":true}]'}, {}, True, False),
    ("group", {"groups": '[{"path":"/staff/team"}]'}, {}, True, False),
    ("group", {"groups": '[{"path":"/staff","extendChildren":false}]'}, {}, False, False),
    ("group", {"groups": '[{"path":"/staff","extendChildren":true}]'}, {}, True, False),
    ("regex", {"targetClaim": "dept", "pattern": "sal.*"}, {"claims": {"dept": "sales"}}, True, None),
    ("regex", {"targetClaim": "org.dept", "pattern": "sales"}, {"claims": {"org": {"dept": ["hr", "sales"]}}},
     True, None),
    ("regex", {"targetClaim": "dept", "pattern": "sal"}, {"claims": {"dept": "sales"}}, False, None),
    ("client-scope", {"clientScopes": '[{"id":"email"}]'}, {"scopes": {"email"}}, True, None),
    ("client-scope", {"clientScopes": '[{"id":"email"}]'}, {"scopes": {"profile"}}, False, None),
    ("time", {"nbf": (NOW - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")}, {}, True, True),
    ("time", {"nbf": (NOW + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")}, {}, False, False),
    ("time", {"noa": (NOW - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")}, {}, False, False),
    ("time", {"year": str(NOW.year), "yearEnd": str(NOW.year + 1)}, {}, True, True),
    ("time", {"year": str(NOW.year + 1)}, {}, False, False),
]


@pytest.mark.parametrize(("kind", "config", "ask", "alice", "bob"), POLICY_CASES)
def test_policy_types(kind, config, ask, alice, bob, fresh_caches):
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["it"]'})
    server = _server(_realm(_settings([permission], policies=[_policy("it", kind, config)])), "app")
    assert ("doc" in _granted(server, "alice", [("doc", ())], **ask)) is alice
    if bob is not None:
        assert ("doc" in _granted(server, "bob", [("doc", ())], **ask)) is bob


def test_client_policy(fresh_caches):
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["it"]'})
    server = _server(_realm(_settings([permission], policies=[_policy("it", "client", {"clients": '["other"]'})])),
                     "app")
    assert _granted(server, "alice", [("doc", ())], client_id="other") == {"doc": {"read", "write"}}
    assert _granted(server, "alice", [("doc", ())], client_id="app") == {}


@pytest.mark.parametrize(("strategy", "expected"), [("AFFIRMATIVE", True), ("UNANIMOUS", False)])
def test_aggregate_policy(strategy, expected, fresh_caches):
    both = _policy("both", "aggregate", {"applyPolicies": '["allow","deny"]'}, decisionStrategy=strategy)
    permission = _policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["both"]'})
    assert (_doc(_settings([permission], policies=[ALLOW, DENY, both])) is not None) is expected


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s["policies"].append(_policy("js", "js", {"code": "$evaluation.grant()"})),
     "policies[2].type: Script upload is disabled"),
    (lambda s: s["policies"].append(_policy("u", "uma", {})), "policy type 'uma' is not supported"),
    (lambda s: s["policies"].append(_policy("g", "group", {"groupsClaim": "groups", "groups": "[]"})),
     "groupsClaim: groups from a token claim are not supported"),
    (lambda s: s["policies"].append(_policy("p", "resource", {"resources": '["doc"]', "applyPolicies": '["allow"]'},
                                            logic="NEGATIVE")), "only POSITIVE"),
    (lambda s: s["policies"].append(_policy("p", "resource", {"resources": '["nope"]'})), "unknown resource 'nope'"),
    (lambda s: s["policies"].append(_policy("p", "scope", {"scopes": '["read"]', "applyPolicies": '["nope"]'})),
     "unknown policy 'nope'"),
    (lambda s: s["policies"].append(_policy("r", "role", {"roles": '[{"id":"nope"}]'})), "unknown role 'nope'"),
    (lambda s: s.update(policyEnforcementMode="LAX"), "'LAX' is not one of ENFORCING, PERMISSIVE, DISABLED"),
    (lambda s: s.update(decisionStrategy="MAJORITY"), "'MAJORITY' is not one of"),
    (lambda s: s.update(authorizationSchema={}), "authorization schema is the admin-permissions client's only"),
    (lambda s: s["policies"].append(_policy("a", "aggregate", {"applyPolicies": '["a"]'})), "contains itself"),
])
def test_import_refuses_what_is_not_evaluated(change, message, fresh_caches):
    settings = copy.deepcopy(_settings([]))
    change(settings)
    with pytest.raises(RepresentationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        _realm(settings)


def test_switching_authorization_services_makes_and_removes_the_resource_server(fresh_caches):
    from realms.representation.services import create_realm
    from tests.realms.test_admin_rest_api import created_id, realm_admin

    realm = create_realm("switch")
    api = realm_admin(realm, "boss", "manage-clients", "view-clients")
    uuid = created_id(api("post", "switch/clients", {"clientId": "rs", "authorizationServicesEnabled": True,
                                                      "serviceAccountsEnabled": True, "publicClient": False}))
    client = Client.objects.get(pk=uuid)
    assert client.authorization_settings["policyEnforcementMode"] == "ENFORCING"
    assert client.authorization_settings["resources"] == []
    rep = api("get", f"switch/clients/{uuid}").json()
    assert rep["authorizationServicesEnabled"] is True
    assert api("put", f"switch/clients/{uuid}", {**rep, "authorizationServicesEnabled": False}).status_code == 204
    client.refresh_from_db()
    assert client.authorization_settings == {}
