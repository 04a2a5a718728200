"""The OIDC mapper types beyond the basics: hardcoded role, role name, nonce backwards
compatible, and the ``claims`` request parameter (OIDC Core §5.5) with Keycloak's two mappers."""
import json

from oidc.tokens import decode
from realms.models import ProtocolMapper
from realms.sso import sessions
from tests.oidc.endpoints.conftest import REDIRECT, client_of, code_for, exchange, signed_in, url


def _mapper(realm, type_name, **config):
    ProtocolMapper.objects.create(client=client_of(realm, "app"), name=type_name, protocol="openid-connect",
                                  protocol_mapper=type_name, config=config)


def _tokens(http, realm, user, claims=None, nonce="n-1"):
    user_session = signed_in(realm, user, client_of(realm, "app"))
    if claims is not None:
        sessions.get_or_create_client_session(user_session, client_of(realm, "app"), redirect_uri=REDIRECT,
                                              scope="openid", notes={"claims": json.dumps(claims)})
    code, _ = code_for(realm, user, user_session=user_session, nonce=nonce)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    issuer = f"http://testserver/realms/{realm.name}"
    body = resp.json()
    return decode(realm, body["access_token"], issuer), decode(realm, body["id_token"], issuer), body


def test_hardcoded_role_is_in_effect_for_the_access_token(http, realm, alice):
    _mapper(realm, "oidc-hardcoded-role-mapper", role="auditor")
    _mapper(realm, "oidc-hardcoded-role-mapper", role="api.admin")
    at, _, _ = _tokens(http, realm, alice)
    assert "auditor" in at["realm_access"]["roles"] and "reader" in at["realm_access"]["roles"]
    assert sorted(at["resource_access"]["api"]["roles"]) == ["admin", "read"]


def test_role_name_mapper_renames_a_held_role_only(http, realm, alice):
    _mapper(realm, "oidc-role-name-mapper", **{"role": "reader", "new.role.name": "api.viewer"})
    _mapper(realm, "oidc-role-name-mapper", **{"role": "writer", "new.role.name": "editor"})  # not held
    at, _, _ = _tokens(http, realm, alice)
    assert "reader" not in at["realm_access"]["roles"] and "editor" not in at["realm_access"]["roles"]
    assert sorted(at["resource_access"]["api"]["roles"]) == ["read", "viewer"]


def test_nonce_backwards_compatible_puts_the_nonce_in_the_access_token(http, realm, alice):
    at, idt, _ = _tokens(http, realm, alice)
    assert "nonce" not in at and idt["nonce"] == "n-1"
    _mapper(realm, "oidc-nonce-backwards-compatible-mapper")
    at, _, _ = _tokens(http, realm, alice)
    assert at["nonce"] == "n-1"


def _strip_profile_claims(realm):
    """Without the profile and email scopes' mappers, only the claims parameter can add these claims."""
    ProtocolMapper.objects.filter(client_scope__realm=realm, client_scope__name__in=("profile", "email")).delete()


def test_claims_parameter_essential_standard_claims(http, realm, alice):
    _strip_profile_claims(realm)
    _mapper(realm, "oidc-claims-param-token-mapper", **{"id.token.claim": "true", "userinfo.token.claim": "true"})
    claims = {"id_token": {"email": {"essential": True}, "name": {"essential": True}, "family_name": None},
              "userinfo": {"preferred_username": {"essential": True}, "given_name": {"essential": False}}}
    _, idt, body = _tokens(http, realm, alice, claims)
    assert idt["email"] == "alice@example.org" and idt["name"] == "Alice Liddell"
    assert "family_name" not in idt and "preferred_username" not in idt  # not essential / not asked here
    info = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}").json()
    assert info["preferred_username"] == "alice" and "given_name" not in info and "email" not in info


def test_claims_parameter_without_the_mapper_adds_nothing(http, realm, alice):
    _strip_profile_claims(realm)
    _, idt, _ = _tokens(http, realm, alice, {"id_token": {"email": {"essential": True}}})
    assert "email" not in idt  # as Keycloak: the parameter is honoured through the mapper only


def test_claims_parameter_with_value_in_the_id_token(http, realm, alice):
    _mapper(realm, "oidc-claims-param-value-idtoken-mapper", **{"claim.name": "txn", "id.token.claim": "true"})
    _, idt, _ = _tokens(http, realm, alice, {"id_token": {"txn": {"essential": True, "value": "t-42"}}})
    assert idt["txn"] == "t-42"
    _, idt, _ = _tokens(http, realm, alice, {"id_token": {"txn": {"value": "t-42"}}})
    assert "txn" not in idt  # not essential


def test_discovery_says_what_is_supported(http, realm):
    doc = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    assert doc["subject_types_supported"] == ["public", "pairwise"]
    assert doc["claims_parameter_supported"] is True
