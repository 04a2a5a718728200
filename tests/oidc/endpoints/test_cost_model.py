"""The cost model (docs/cost-model.md): database queries and shared-cache (Redis) calls per
request type once the realm's configuration is cached, held exactly. A change that adds a query
or a round trip to one of these paths fails here and must say why in the model."""
import base64
import json

from django.db import connection

from realms.models import Client, Group
from realms.representation.resource_server import check

from .conftest import SECRET, basic, code_for, exchange, refresh, url


def _warm(http, realm, alice):
    """One of each request first: the realm's configuration, keys and clients cached."""
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.post(url(realm, "token"), {"grant_type": "client_credentials"}, **auth).status_code == 200
    code, _ = code_for(realm, alice)
    body = exchange(http, realm, code).json()
    assert refresh(http, realm, body["refresh_token"]).status_code == 200
    assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}").status_code == 200
    assert http.post(url(realm, "token/introspect"), {"token": body["access_token"]}, **auth).status_code == 200
    return auth


# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "client_credentials": (0, 0),  # everything from the configuration cached in the process
    # The code marked used (one UPDATE ... RETURNING), the new SSO session with its user (missed in
    # the cache, then put there: get and set), the client session.
    "authorization_code": (3, 2),
    # The SSO session and the client session, both from the cache in one call (decision 0113);
    # the first refresh of a client session reads its row and puts it there.
    "refresh_token": (0, 1),
    "first_refresh_token": (1, 2),
    # The revocation mark; the SSO session and the client session's copy in one call (decision 0117).
    "userinfo": (0, 2),
    "introspection": (0, 1),  # the SSO session, the client session's copy and the revocation marks at once
    # A UMA decision (five policies: role, group, user, client, time): the SSO session, the bearer
    # token's client session's copy and its revocation mark in one call. The user's roles and groups
    # are cached per realm configuration.
    "uma_decision": (0, 1),
}


def _resource_server(realm, alice):
    """``app`` protects ``Doc`` (scope ``read``) by one permission of five policies, all evaluated
    (UNANIMOUS): bench/oidc/setup_uma.py's."""
    staff = Group.objects.create(realm=realm, name="staff")
    alice.groups.add(staff)
    app = Client.objects.get(realm=realm, client_id="app")
    app.authorization_services_enabled = True
    app.authorization_settings = check({
        "resources": [{"name": "Doc", "scopes": [{"name": "read"}]}],
        "policies": [
            {"name": "readers", "type": "role", "config": {"roles": '[{"id":"reader"}]'}},
            {"name": "staff", "type": "group", "config": {"groups": '[{"path":"/staff"}]'}},
            {"name": "alice", "type": "user", "config": {"users": '["alice"]'}},
            {"name": "the app", "type": "client", "config": {"clients": '["app"]'}},
            {"name": "this century", "type": "time", "config": {"year": "2000", "yearEnd": "2099"}},
            {"name": "read docs", "type": "scope", "config": {
                "resources": '["Doc"]', "scopes": '["read"]',
                "applyPolicies": '["readers","staff","alice","the app","this century"]'}}]}, "")
    app.save()


def _decision(http, realm, access):
    return http.post(url(realm, "token"), {"grant_type": "urn:ietf:params:oauth:grant-type:uma-ticket",
                                           "audience": "app", "permission": "Doc#read", "response_mode": "decision"},
                     HTTP_AUTHORIZATION=f"Bearer {access}")


def test_queries_and_cache_calls_per_request_type(http, realm, alice, measure):
    _resource_server(realm, alice)
    auth = _warm(http, realm, alice)
    found = {}
    with measure() as cost:
        assert http.post(url(realm, "token"), {"grant_type": "client_credentials"}, **auth).status_code == 200
    found["client_credentials"] = cost
    code, _ = code_for(realm, alice)
    with measure() as cost:
        response = exchange(http, realm, code)
    assert response.status_code == 200
    found["authorization_code"] = cost
    body = response.json()
    with measure() as cost:
        refreshed = refresh(http, realm, body["refresh_token"])
    assert refreshed.status_code == 200
    found["first_refresh_token"] = cost
    with measure() as cost:
        refreshed = refresh(http, realm, refreshed.json()["refresh_token"])
    assert refreshed.status_code == 200
    found["refresh_token"] = cost
    access = refreshed.json()["access_token"]
    with measure() as cost:
        assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {access}").status_code == 200
    found["userinfo"] = cost
    with measure() as cost:
        assert http.post(url(realm, "token/introspect"), {"token": access}, **auth).status_code == 200
    found["introspection"] = cost
    assert _decision(http, realm, access).json() == {"result": True}
    with measure() as cost:
        assert _decision(http, realm, access).json() == {"result": True}
    found["uma_decision"] = cost
    counts = {name: cost.counts for name, cost in found.items()}
    detail = {name: (cost.queries, cost.cache_calls) for name, cost in found.items()}
    expected = EXPECTED
    if connection.vendor != "postgresql":
        # The code exchange reads the session's user ahead, in the client session's round trip
        # (rows.ahead): PostgreSQL answers both statements at once, SQLite one statement each.
        expected = {**EXPECTED, "authorization_code": (4, 2)}
    assert counts == expected, detail


def _alg(token):
    head = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))["alg"]


def test_an_es256_realm_refreshes_at_the_refresh_cost(http, realm, alice, measure):
    """The realm's Default Signature Algorithm ES256 (its key made on first use, as Keycloak's
    fallback key): access and ID tokens ES256, the refresh token still HS512 (Keycloak's internal
    algorithm), and a refresh costs what an RS256 realm's does (bench/oidc's ES256 figures)."""
    realm.default_signature_algorithm = "ES256"
    realm.save()
    _warm(http, realm, alice)
    body = exchange(http, realm, code_for(realm, alice)[0]).json()
    assert refresh(http, realm, body["refresh_token"]).status_code == 200  # the client session cached
    with measure() as cost:
        refreshed = refresh(http, realm, body["refresh_token"])
    assert refreshed.status_code == 200, refreshed.content
    tokens = refreshed.json()
    assert [_alg(tokens[name]) for name in ("access_token", "id_token", "refresh_token")] == ["ES256", "ES256", "HS512"]
    assert cost.counts == EXPECTED["refresh_token"], (cost.queries, cost.cache_calls)
