"""Standard token exchange (Keycloak 26.2+ V2): each rule and each refusal with Keycloak's error,
description and TOKEN_EXCHANGE_ERROR event; the feature switch; discovery."""
from oidc.jose import parse

from .conftest import (
    ACCESS,
    ID,
    JWT,
    REFRESH,
    basic,
    exchange,
    last_event,
    password_token,
    refused,
    token_url,
)


def claims(token):
    return parse(token)[1]


def test_exchange_narrows_audience_and_records_event(http, realm):
    subject = password_token(http, realm)
    assert {"requester", "plain", "target"} <= set(claims(subject["access_token"])["aud"])
    answer = exchange(http, realm, subject["access_token"], audience="target")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["issued_token_type"] == ACCESS and body["token_type"] == "Bearer"
    assert "refresh_token" not in body
    new = claims(body["access_token"])
    assert new["aud"] == "target" and new["azp"] == "requester"
    assert new["sub"] == claims(subject["access_token"])["sub"]
    assert new["sid"] == claims(subject["access_token"])["sid"]  # the same SSO session
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE" and event.client_id == "requester" and not event.error
    assert event.details["subject_token_client_id"] == "initial"
    assert event.details["requested_token_type"] == ACCESS and event.details["audience"] == "target"
    assert event.details["username"] == "alice"
    # The exchanged token is a live token of the requester: userinfo answers it.
    info = http.get(f"/realms/{realm.name}/protocol/openid-connect/userinfo",
                    HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert info.status_code == 200 and info.json()["sub"] == new["sub"]


def test_several_audiences(http, realm):
    subject = password_token(http, realm)
    body = exchange(http, realm, subject["access_token"], audience=["target", "plain"]).json()
    assert sorted(claims(body["access_token"])["aud"]) == ["plain", "target"]


def test_without_audience_the_requesters_own_audience(http, realm):
    subject = password_token(http, realm)
    body = exchange(http, realm, subject["access_token"]).json()
    assert "plain" in claims(body["access_token"])["aud"]


def test_audience_the_user_cannot_reach(http, realm):
    subject = password_token(http, realm, username="carol")  # no role of target
    refused(exchange(http, realm, subject["access_token"], audience="target"), 400, "invalid_request",
            "Requested audience not available: target")
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE_ERROR" and event.error == "invalid_request"


def test_unknown_and_disabled_audience(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, audience="nobody"), 400, "invalid_client", "Audience not found")
    assert last_event(realm).error == "client_not_found"
    refused(exchange(http, realm, subject, audience="off-target"), 400, "invalid_client", "Client disabled")
    assert last_event(realm).error == "client_disabled"


def test_client_not_enabled_for_exchange(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, client_id="plain"), 400, "invalid_request",
            "Standard token exchange is not enabled for the requested client")
    event = last_event(realm)
    assert event.type == "TOKEN_EXCHANGE_ERROR" and event.error == "invalid_request" and event.client_id == "plain"


def test_public_client_refused(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, client_id="public-ex", secret=""), 400, "invalid_client",
            "Public client is not allowed to exchange token")


def test_requester_not_in_subject_audience(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, client_id="outsider"), 403, "access_denied",
            "Client is not within the token audience")
    assert last_event(realm).error == "not_allowed"


def test_token_holder_may_exchange_its_own_token(http, realm):
    own = password_token(http, realm, client_id="requester")["access_token"]
    assert exchange(http, realm, own).status_code == 200


def test_scope_among_the_requesters(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, scope="no-such-scope"), 400, "invalid_scope",
            "Invalid scopes: no-such-scope")
    body = exchange(http, realm, subject, scope="openid email").json()
    assert "email" in body["scope"].split() and body["id_token"]


def test_invalid_revoked_and_ended_subject_tokens(http, realm):
    refused(exchange(http, realm, "not-a-token"), 400, "invalid_request", "Invalid token")
    assert last_event(realm).error == "invalid_token"
    subject = password_token(http, realm)
    # A refresh token is not an access token.
    refused(exchange(http, realm, subject["refresh_token"]), 400, "invalid_request", "Invalid token")
    assert exchange(http, realm, subject["access_token"]).status_code == 200
    logout = http.post(f"/realms/{realm.name}/protocol/openid-connect/logout",
                       {"refresh_token": subject["refresh_token"]}, HTTP_AUTHORIZATION=basic("initial"))
    assert logout.status_code == 204
    # Replayed after the session ended: refused.
    refused(exchange(http, realm, subject["access_token"]), 400, "invalid_request", "Invalid token")


def test_revoked_subject_token(http, realm):
    subject = password_token(http, realm)["access_token"]
    revoked = http.post(f"/realms/{realm.name}/protocol/openid-connect/revoke",
                        {"token": subject, "token_type_hint": "access_token"}, HTTP_AUTHORIZATION=basic("initial"))
    assert revoked.status_code == 200
    refused(exchange(http, realm, subject), 400, "invalid_request", "Invalid token")


def test_disabled_user(http, realm):
    subject = password_token(http, realm)["access_token"]
    from realms.models import User
    User.objects.filter(realm=realm, username="alice").update(enabled=False)
    refused(exchange(http, realm, subject), 400, "invalid_request", "Invalid token")


def test_subject_token_parameters(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm), 400, "invalid_request",
            "Parameter 'subject_token' required for standard token exchange")
    refused(exchange(http, realm, subject, subject_token_type=JWT), 400, "invalid_request",
            "Parameter 'subject_token' supports access tokens only")
    answer = http.post(token_url(realm), {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                                          "subject_token": subject}, HTTP_AUTHORIZATION=basic("requester"))
    refused(answer, 400, "invalid_request", "Parameter 'subject_token_type' required for standard token exchange")
    for name in ("requested_subject", "requested_issuer", "subject_issuer"):
        refused(exchange(http, realm, subject, **{name: "x"}), 400, "invalid_request",
                f"Parameter '{name}' is not supported for standard token exchange")


def test_refresh_token_only_with_same_session(http, realm):
    subject = password_token(http, realm)
    refused(exchange(http, realm, subject["access_token"], requested_token_type=REFRESH), 400, "invalid_request",
            "requested_token_type unsupported")
    subject = claims(password_token(http, realm)["access_token"])
    assert "refresher" not in subject["aud"]
    own = password_token(http, realm, client_id="requester")  # requester may not ask for refresh tokens
    refused(exchange(http, realm, own["access_token"], requested_token_type=REFRESH), 400, "invalid_request",
            "requested_token_type unsupported")


def test_refresh_token_same_session(http, realm):
    from realms.models import Client
    Client.objects.filter(realm=realm, client_id="requester").update(attributes={
        "standard.token.exchange.enabled": "true",
        "standard.token.exchange.enableRefreshRequestedTokenType": "SAME_SESSION"})
    subject = password_token(http, realm)
    body = exchange(http, realm, subject["access_token"], requested_token_type=REFRESH).json()
    assert body["issued_token_type"] == REFRESH and body["refresh_token"]
    assert claims(body["refresh_token"])["sid"] == claims(subject["access_token"])["sid"]
    again = http.post(token_url(realm), {"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
                      HTTP_AUTHORIZATION=basic("requester"))
    assert again.status_code == 200, again.content
    refused(exchange(http, realm, subject["access_token"], requested_token_type=REFRESH, scope="offline_access"),
            400, "invalid_request", "Scope offline_access not allowed for token exchange")
    # A subject token without a session cannot give a refresh token.
    service = http.post(token_url(realm), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("initial"))
    refused(exchange(http, realm, service.json()["access_token"], requested_token_type=REFRESH), 400,
            "invalid_request",
            "Refresh token not valid as requested_token_type because creating a new session is needed")


def test_sessionless_subject_gives_transient_token(http, realm):
    service = http.post(token_url(realm), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("initial"))
    body = exchange(http, realm, service.json()["access_token"]).json()
    assert "sid" not in claims(body["access_token"]) and "refresh_token" not in body


def test_id_token_requested(http, realm):
    subject = password_token(http, realm)["access_token"]
    body = exchange(http, realm, subject, requested_token_type=ID).json()
    assert body["issued_token_type"] == ID and body["token_type"] == "N_A" and "id_token" not in body
    assert claims(body["access_token"])["typ"] == "ID" and claims(body["access_token"])["aud"] == "requester"


def test_saml_and_unknown_requested_types(http, realm):
    subject = password_token(http, realm)["access_token"]
    for kind in ("urn:ietf:params:oauth:token-type:saml2", "urn:example:nothing"):
        refused(exchange(http, realm, subject, requested_token_type=kind), 400, "invalid_request",
                "requested_token_type unsupported")


def test_feature_switch_and_discovery(http, realm, settings):
    subject = password_token(http, realm)["access_token"]
    discovery = f"/realms/{realm.name}/.well-known/openid-configuration"
    assert "urn:ietf:params:oauth:grant-type:token-exchange" in http.get(discovery).json()["grant_types_supported"]
    settings.IDP_FEATURES_DISABLED = "token-exchange-standard"
    refused(exchange(http, realm, subject), 400, "unsupported_grant_type")
    assert "urn:ietf:params:oauth:grant-type:token-exchange" not in http.get(discovery).json()["grant_types_supported"]
    settings.IDP_FEATURES = "token-exchange"  # the legacy one keeps the grant available
    assert exchange(http, realm, subject, requested_subject="carol").status_code == 403


def test_wrong_client_secret(http, realm):
    subject = password_token(http, realm)["access_token"]
    refused(exchange(http, realm, subject, secret="wrong-" + "w" * 20), 401, "invalid_client")
    assert last_event(realm).type == "TOKEN_EXCHANGE_ERROR"


def test_subject_clients_session_ended(http, realm):
    """The subject token dies with its client's session in the SSO session, as at userinfo: at
    the latest once the exchange's memory of client sessions (MEMO_SECONDS) has passed; the SSO
    session's end is seen at once."""
    import time

    from oidc.token_exchange.common import MEMO_SECONDS
    from realms.models import Client, UserSession
    from realms.sso import sessions
    subject = password_token(http, realm)
    assert exchange(http, realm, subject["access_token"]).status_code == 200
    user_session = UserSession.objects.get(pk=claims(subject["access_token"])["sid"])
    sessions.end_client_sessions([user_session], Client.objects.get(realm=realm, client_id="initial"))
    time.sleep(MEMO_SECONDS + 0.2)
    refused(exchange(http, realm, subject["access_token"]), 400, "invalid_request", "Invalid token")


def test_requesters_client_session_past_its_max_lifespan(http, realm):
    """A requester whose client session in the SSO session is past the client session max lifespan
    gets a new one, never a token that expired before it was issued."""
    import datetime
    import time

    from oidc.token_exchange.common import MEMO_SECONDS
    from realms.models import ClientSession, Realm
    subject = password_token(http, realm)["access_token"]
    assert exchange(http, realm, subject).status_code == 200
    fresh = Realm.objects.get(pk=realm.pk)
    fresh.client_session_max_lifespan = 60
    fresh.save()
    old = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=600)
    rows = ClientSession.objects.filter(user_session_id=claims(subject)["sid"], client__client_id="requester")
    rows.update(started=old)
    time.sleep(MEMO_SECONDS + 0.2)
    body = exchange(http, realm, subject).json()
    assert claims(body["access_token"])["exp"] > time.time() + 30
    assert rows.get().started > old + datetime.timedelta(seconds=500)
