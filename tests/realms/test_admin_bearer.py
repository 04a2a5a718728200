"""The Admin REST API's bearer token is checked on every request (``oidc.admin_tokens``): a token
revoked, its SSO session or its client's share of it ended, its client or its user disabled, its
signing key disabled or the realm's not-before moved past it is refused at the next request with
Keycloak's 401, whatever the session cache or the remembered signature still holds."""
import time

import pytest
from django.test import Client

from oidc import jose, tokens
from realms.data.keys import realm_keys
from realms.models import Client as ClientModel
from realms.models import ClientSession, Realm, RealmKey, Role, User, UserSession
from realms.sso import sessions
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import PASSWORD, Api, issue

pytestmark = pytest.mark.django_db
UNAUTHORIZED = {"error": "HTTP 401 Unauthorized"}


@pytest.fixture
def admin():
    master = Realm.objects.get(name="master")
    user = create_user(master, "bearer-root", password=PASSWORD)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    issued = issue("master", "bearer-root")
    api = Api(issued["access_token"])
    assert api("get", "master").status_code == 200  # its signature is remembered from here
    return user, issued, api


def _refused(api):
    resp = api("get", "master")
    assert (resp.status_code, resp.json()) == (401, UNAUTHORIZED)


def test_a_revoked_access_token_is_refused(admin):
    _, tokens_, api = admin
    resp = Client().post("/realms/master/protocol/openid-connect/revoke",
                         {"token": tokens_["access_token"], "client_id": "admin-cli"})
    assert resp.status_code == 200
    _refused(api)


def test_an_ended_sso_session_is_refused(admin):
    _, tokens_, api = admin
    sid = jose.parse(tokens_["access_token"])[1]["sid"]
    sessions.end_session(UserSession.objects.get(pk=sid))
    _refused(api)


def test_the_clients_ended_share_of_a_live_session_is_refused(admin):
    _, tokens_, api = admin
    sid = jose.parse(tokens_["access_token"])[1]["sid"]
    ClientSession.objects.filter(user_session_id=sid).delete()  # the SSO session and its cache entry remain
    assert sessions.get_valid_session(Realm.objects.get(name="master"), sid) is not None
    _refused(api)


def test_a_disabled_admin_is_refused_at_once(admin):
    user, _, api = admin
    # No signal and no session cache update: the row alone says so.
    User.objects.filter(pk=user.pk).update(enabled=False)
    _refused(api)


def test_a_disabled_client_is_refused(admin):
    _, _, api = admin
    client = ClientModel.objects.get(realm__name="master", client_id="admin-cli")
    client.enabled = False
    client.save()
    _refused(api)


def test_a_token_of_the_refresh_kind_is_refused(admin):
    _, tokens_, _ = admin
    _refused(Api(tokens_["refresh_token"]))


def test_a_token_seen_before_is_refused_once_its_signing_key_is_disabled(admin):
    _, tokens_, api = admin
    key = RealmKey.objects.get(kid=jose.parse(tokens_["access_token"])[0]["kid"])
    key.status = RealmKey.DISABLED
    key.save()
    try:
        _refused(api)
    finally:  # the keys cached in this process outlive the test's rollback
        key.status = RealmKey.ACTIVE
        key.save()


def test_a_token_seen_before_is_refused_after_the_realms_not_before(admin):
    _, _, api = admin
    master = Realm.objects.get(name="master")
    master.not_before = int(time.time()) + 1
    master.save()
    _refused(api)


def test_a_remembered_signature_still_expires_and_still_names_its_issuer(admin):
    _, tokens_, _ = admin
    master, token = Realm.objects.get(name="master"), tokens_["access_token"]
    issuer = jose.parse(token)[1]["iss"]
    claims = tokens.decode(master, token, issuer, remember=True)
    assert token in realm_keys(master).verified
    claims["sub"] = "someone-else"  # the caller's copy: the remembered claims stay as verified
    assert tokens.decode(master, token, issuer, remember=True)["sub"] != "someone-else"
    with pytest.raises(tokens.TokenError, match="expired"):
        tokens.decode(master, token, issuer, now=claims["exp"], remember=True)
    with pytest.raises(tokens.TokenError, match="issuer"):
        tokens.decode(master, token, issuer + "x", remember=True)
