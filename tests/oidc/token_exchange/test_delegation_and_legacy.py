"""Delegation (feature token-exchange-delegation: act, may_act, nested act, the Admin API refuses
delegated tokens) and legacy V1 (feature token-exchange): impersonation allowed by the
realm-management role ``impersonation``, and an OpenID Connect provider's JWT exchanged for ours
(its JWKS served on loopback)."""
import json
import time
import uuid

import pytest
from django.test import RequestFactory

from oidc.admin_tokens import verify
from oidc.jose import parse
from realms.admin_api.authentication import BearerRefused
from realms.models import FederatedIdentity, IdentityProvider, User

from ..jwt_grant.conftest import JwksServer, new_key, sign
from .conftest import ACCESS, JWT, exchange, last_event, password_token, refused


def claims(token):
    return parse(token)[1]


def allow_actor(realm, subject_name, actor_name, **extra):
    actor = User.objects.get(realm=realm, username=actor_name)
    user = User.objects.get(realm=realm, username=subject_name)
    user.attributes = {**(user.attributes or {}), "may_act": [json.dumps({"sub": actor.pk, **extra})]}
    user.save()
    return actor


def test_actor_token_refused_without_feature(http, realm):
    subject = password_token(http, realm)["access_token"]
    actor = password_token(http, realm, username="carol", client_id="requester")["access_token"]
    refused(exchange(http, realm, subject, actor_token=actor, actor_token_type=ACCESS), 400, "invalid_request",
            "Parameter 'actor_token' is not supported")
    assert last_event(realm).type == "TOKEN_EXCHANGE_ERROR"


def test_delegation_act_claim_and_admin_api(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange-delegation"
    carol = allow_actor(realm, "alice", "carol")
    subject = password_token(http, realm)["access_token"]
    actor = password_token(http, realm, username="carol", client_id="requester")["access_token"]
    answer = exchange(http, realm, subject, actor_token=actor, actor_token_type=ACCESS)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    new = claims(body["access_token"])
    assert new["act"] == {"sub": carol.pk} and new["sub"] == claims(subject)["sub"]
    assert "sid" not in new and "refresh_token" not in body  # transient
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE" and event.details["actor"] == "carol" and event.details["actor_type"] == "user"
    # A delegated token never reaches the Admin API; the same user's own token does get past the check.
    request = RequestFactory().get("/admin/realms")
    with pytest.raises(BearerRefused):
        verify(request, body["access_token"])
    assert verify(request, exchange(http, realm, subject).json()["access_token"]).user.username == "alice"
    refused(exchange(http, realm, subject, actor_token=actor, actor_token_type=JWT), 400, "invalid_request",
            "Invalid actor token type")
    refused(exchange(http, realm, subject, actor_token="garbage", actor_token_type=ACCESS), 400, "invalid_request",
            "Invalid actor token")


def test_delegation_nested_act(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange-delegation"
    carol = allow_actor(realm, "alice", "carol")
    first_actor = password_token(http, realm, username="carol", client_id="requester")["access_token"]
    delegated = exchange(http, realm, password_token(http, realm)["access_token"], actor_token=first_actor,
                         actor_token_type=ACCESS).json()["access_token"]
    # The delegated token exchanged again with an actor: the chain so far nests under the new act.
    subject = password_token(http, realm)["access_token"]
    alice = User.objects.get(realm=realm, username="alice")
    allow_actor(realm, "alice", "alice")
    refused(exchange(http, realm, subject, actor_token=subject, actor_token_type=ACCESS), 400, "invalid_request",
            "Actor and subject user cannot be the same user")
    allow_actor(realm, "alice", "carol")
    second = exchange(http, realm, delegated, actor_token=first_actor, actor_token_type=ACCESS)
    assert second.status_code == 200, second.content
    act = claims(second.json()["access_token"])["act"]
    assert act == {"sub": carol.pk, "act": {"sub": carol.pk}} and alice.pk != carol.pk


def test_delegation_may_act_rules(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange-delegation"
    subject_without = password_token(http, realm)["access_token"]
    actor = password_token(http, realm, username="carol", client_id="requester")["access_token"]
    refused(exchange(http, realm, subject_without, actor_token=actor, actor_token_type=ACCESS), 400,
            "invalid_request", "Invalid may_act claim in the subject_token")
    allow_actor(realm, "alice", "alice")
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, actor_token=actor, actor_token_type=ACCESS), 400, "invalid_request",
            "Actor user is not allowed by the may_act claim inside the subject_token")
    allow_actor(realm, "alice", "carol", client_id="other")
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, actor_token=actor, actor_token_type=ACCESS), 400, "invalid_request",
            "Actor token client does not match the client_id in the may_act claim")
    allow_actor(realm, "alice", "carol", iss="https://elsewhere.example")
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, actor_token=actor, actor_token_type=ACCESS), 400, "invalid_request",
            "Invalid issuer in the may_act claim of the subject_token")


# Legacy V1 -----------------------------------------------------------------------------------

def test_impersonation_needs_feature(http, realm):
    refused(exchange(http, realm, client_id="impersonator", requested_subject="alice"), 400, "invalid_request",
            "Parameter 'requested_subject' is not supported for standard token exchange")


def test_impersonation_by_service_account_role(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange"
    answer = exchange(http, realm, client_id="impersonator", requested_subject="alice")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    alice = User.objects.get(realm=realm, username="alice")
    assert claims(body["access_token"])["sub"] == alice.pk and body["refresh_token"]  # V1 default: refresh
    assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:refresh_token"
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE" and event.user_id == alice.pk and event.details["requested_subject"] == "alice"
    by_id = exchange(http, realm, client_id="impersonator", requested_subject=alice.pk, requested_token_type=ACCESS)
    assert by_id.status_code == 200 and "refresh_token" not in by_id.json()


def test_impersonation_refusals(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange"
    refused(exchange(http, realm, client_id="requester", requested_subject="alice"), 403, "access_denied",
            "Client not allowed to exchange")
    assert last_event(realm).details["reason"] == "client not allowed to impersonate"
    refused(exchange(http, realm, client_id="impersonator", requested_subject="nobody"), 403, "access_denied",
            "Client not allowed to exchange")
    # A user's token: that user must hold the role; alice does not.
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, client_id="requester", requested_subject="carol"), 403, "access_denied",
            "Client not allowed to exchange")
    assert last_event(realm).details["reason"] == "subject not allowed to impersonate"


# External to internal ------------------------------------------------------------------------

PROVIDER_ISSUER = "https://upstream.example"


@pytest.fixture
def upstream(realm, outbound_loopback):
    server = JwksServer()
    key = new_key()
    server.keys = [key]
    idp = IdentityProvider.objects.create(
        realm=realm, alias="upstream", provider_id="oidc", enabled=True,
        config={"issuer": PROVIDER_ISSUER, "useJwksUrl": "true", "jwksUrl": server.url, "clientId": "c",
                "clientSecret": "s", "authorizationUrl": f"{PROVIDER_ISSUER}/auth",
                "tokenUrl": f"{PROVIDER_ISSUER}/token", "validateSignature": "true"})
    alice = User.objects.get(realm=realm, username="alice")
    FederatedIdentity.objects.create(realm=realm, user=alice, identity_provider=idp, subject="up-1", user_name="alice")
    yield key, alice
    server.close()


def upstream_jwt(key, **over):
    now = int(time.time())
    return sign({"iss": PROVIDER_ISSUER, "sub": "up-1", "aud": "someone", "exp": now + 60, "iat": now,
                 "jti": uuid.uuid4().hex, **over}, key)


def test_external_needs_feature(http, realm, upstream):
    key, _ = upstream
    refused(exchange(http, realm, upstream_jwt(key), subject_token_type=JWT, subject_issuer="upstream"), 400,
            "invalid_request", "Parameter 'subject_issuer' is not supported for standard token exchange")


def test_external_jwt_exchanged(http, realm, upstream, settings):
    settings.IDP_FEATURES = "token-exchange"
    key, alice = upstream
    answer = exchange(http, realm, upstream_jwt(key), subject_token_type=JWT, subject_issuer="upstream",
                      requested_token_type=ACCESS)
    assert answer.status_code == 200, answer.content
    assert claims(answer.json()["access_token"])["sub"] == alice.pk
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE" and event.details["subject_issuer"] == "upstream"


def test_external_refusals(http, realm, upstream, settings):
    settings.IDP_FEATURES = "token-exchange"
    key, alice = upstream
    refused(exchange(http, realm, upstream_jwt(key), subject_token_type=JWT, subject_issuer="nope"), 400,
            "invalid_issuer", "Invalid subject_issuer parameter")
    forged = upstream_jwt(new_key())
    refused(exchange(http, realm, forged, subject_token_type=JWT, subject_issuer="upstream"), 400,
            "invalid_token", "Invalid token")
    expired = upstream_jwt(key, exp=int(time.time()) - 600)
    refused(exchange(http, realm, expired, subject_token_type=JWT, subject_issuer="upstream"), 400, "invalid_token")
    wrong_issuer = upstream_jwt(key, iss="https://evil.example")
    refused(exchange(http, realm, wrong_issuer, subject_token_type=JWT, subject_issuer="upstream"), 400,
            "invalid_token")
    unlinked = upstream_jwt(key, sub="up-unknown")
    refused(exchange(http, realm, unlinked, subject_token_type=JWT, subject_issuer="upstream"), 400,
            "invalid_token", "User not found")
    refused(exchange(http, realm, upstream_jwt(key), subject_token_type=JWT, subject_issuer="upstream",
                     client_id="plain"), 403, "access_denied", "Client not allowed to exchange")
    User.objects.filter(pk=alice.pk).update(enabled=False)
    refused(exchange(http, realm, upstream_jwt(key), subject_token_type=JWT, subject_issuer="upstream"), 400,
            "invalid_token", "Invalid Token")


def test_provider_type_without_exchange_refuses(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange"
    IdentityProvider.objects.create(realm=realm, alias="plain-oauth", provider_id="oauth2", enabled=True,
                                    config={"clientId": "c"})
    refused(exchange(http, realm, "opaque", subject_issuer="plain-oauth"), 400, "invalid_token", "Invalid token")


class UserinfoServer:
    """The provider's userinfo endpoint on loopback: one good bearer, anything else 401."""

    def __init__(self, token, profile):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 -- http.server's name
                good = self.headers.get("Authorization") == f"Bearer {token}"
                body = json.dumps(profile if good else {"error": "invalid_token"}).encode()
                self.send_response(200 if good else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/userinfo"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_external_access_token_through_userinfo(http, realm, upstream, settings):
    settings.IDP_FEATURES = "token-exchange"
    _, alice = upstream
    server = UserinfoServer("opaque-upstream-token", {"sub": "up-1", "preferred_username": "alice"})
    try:
        idp = IdentityProvider.objects.get(realm=realm, alias="upstream")
        idp.config = {**idp.config, "userInfoUrl": server.url}
        idp.save()
        answer = exchange(http, realm, "opaque-upstream-token", subject_issuer="upstream",
                          requested_token_type=ACCESS)
        assert answer.status_code == 200, answer.content
        assert claims(answer.json()["access_token"])["sub"] == alice.pk
        refused(exchange(http, realm, "stolen-or-expired", subject_issuer="upstream"), 400, "invalid_token",
                "Invalid token")
    finally:
        server.close()


def test_requested_issuer_refused(http, realm, settings):
    settings.IDP_FEATURES = "token-exchange"
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, requested_issuer="upstream"), 400, "invalid_request",
            "Issuer does not support token exchange")
