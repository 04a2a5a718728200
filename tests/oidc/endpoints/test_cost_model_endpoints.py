"""The cost model (docs/cost-model.md) of the OpenID Connect endpoints beside the token endpoint:
discovery, the keys, revocation and RP-initiated logout, each once the realm's configuration
is cached, held exactly."""
from oidc.models import RevokedToken
from realms.models import ClientScope, UserSession
from tests.conftest import assert_costs

from .conftest import SECRET, basic, code_for, exchange, url

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "discovery": (0, 0),  # the realm's OpenID Connect client scope names from the process's copy
    "jwks": (0, 0),  # the realm's keys from the process's copy
    # The revoked token's row (INSERT ... ON CONFLICT DO NOTHING); its revocation mark in the cache.
    "revoke_access_token": (1, 1),
    # The client session deleted; the SSO session from the cache, the client session's copy dropped.
    "revoke_refresh_token": (1, 2),
    # The session's client sessions with their clients (read once: the front-channel URLs, then
    # ending the session), the SSO session row, then five deletes: the client sessions, the
    # session's codes, device and CIBA requests, the session. The SSO session from the cache; its
    # copy dropped (and again once committed, which the test's transaction never is).
    "logout_with_id_token_hint": (7, 2),
}


def _discovery(http, realm):
    return http.get(f"/realms/{realm.name}/.well-known/openid-configuration")


def _revoke(http, realm, token):
    return http.post(url(realm, "revoke"), {"token": token}, HTTP_AUTHORIZATION=basic("app", SECRET))


def _logout(http, realm, id_token):
    return http.get(url(realm, "logout"), {"id_token_hint": id_token})


def _tokens(http, realm, alice):
    """Tokens of a new SSO session: (the token response, the session)."""
    code, user_session = code_for(realm, alice)
    response = exchange(http, realm, code)
    assert response.status_code == 200, response.content
    return response.json(), user_session


def test_queries_and_cache_calls_per_request_type(http, realm, alice, measure, fresh_caches):
    # One of each first: the realm's configuration, its keys and the client cached.
    assert _discovery(http, realm).status_code == 200
    assert http.get(url(realm, "certs")).status_code == 200
    warm = _tokens(http, realm, alice)[0]
    assert _revoke(http, realm, warm["access_token"]).status_code == 200
    assert _revoke(http, realm, warm["refresh_token"]).status_code == 200
    assert _logout(http, realm, _tokens(http, realm, alice)[0]["id_token"]).status_code == 200
    found = {}
    with measure() as found["discovery"]:
        assert _discovery(http, realm).json()["issuer"].endswith(f"/realms/{realm.name}")
    with measure() as found["jwks"]:
        assert http.get(url(realm, "certs")).json()["keys"]
    tokens = _tokens(http, realm, alice)[0]
    with measure() as found["revoke_access_token"]:
        assert _revoke(http, realm, tokens["access_token"]).status_code == 200
    revoked = RevokedToken.objects.count()
    assert _revoke(http, realm, tokens["access_token"]).status_code == 200  # again: its row kept
    assert RevokedToken.objects.count() == revoked
    with measure() as found["revoke_refresh_token"]:
        assert _revoke(http, realm, tokens["refresh_token"]).status_code == 200
    tokens, user_session = _tokens(http, realm, alice)
    with measure() as found["logout_with_id_token_hint"]:
        response = _logout(http, realm, tokens["id_token"])
    assert response.status_code == 200 and not UserSession.objects.filter(pk=user_session.pk).exists()
    assert_costs(found, EXPECTED)


def test_discovery_lists_a_new_client_scope_at_the_next_request(http, realm, fresh_caches):
    assert "zz-new" not in _discovery(http, realm).json()["scopes_supported"]  # the names now cached
    ClientScope.objects.create(realm=realm, name="zz-new", protocol="openid-connect")
    assert _discovery(http, realm).json()["scopes_supported"][-1] == "zz-new"
    ClientScope.objects.create(realm=realm, name="zz-saml", protocol="saml")
    assert "zz-saml" not in _discovery(http, realm).json()["scopes_supported"]
