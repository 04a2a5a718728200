"""The Admin REST API's bearer token is checked on every request (``oidc.admin_tokens``): a token
revoked, its SSO session or its client's share of it ended, its client or its user disabled is
refused at the next request with Keycloak's 401, whatever the session cache still holds."""
import pytest
from django.test import Client

from oidc import jose
from realms import sessions
from realms.accounts import create_user
from realms.models import Client as ClientModel
from realms.models import ClientSession, Realm, Role, User, UserSession
from tests.realms.test_admin_rest_api import PASSWORD, Api

pytestmark = pytest.mark.django_db
UNAUTHORIZED = {"error": "HTTP 401 Unauthorized"}


@pytest.fixture
def admin():
    master = Realm.objects.get(name="master")
    user = create_user(master, "bearer-root", password=PASSWORD)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    resp = Client().post("/realms/master/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": "bearer-root", "password": PASSWORD})
    assert resp.status_code == 200, resp.content
    tokens = resp.json()
    api = Api(tokens["access_token"])
    assert api("get", "master").status_code == 200
    return user, tokens, api


def _refused(api):
    resp = api("get", "master")
    assert (resp.status_code, resp.json()) == (401, UNAUTHORIZED)


def test_a_revoked_access_token_is_refused(admin):
    _, tokens, api = admin
    resp = Client().post("/realms/master/protocol/openid-connect/revoke",
                         {"token": tokens["access_token"], "client_id": "admin-cli"})
    assert resp.status_code == 200
    _refused(api)


def test_an_ended_sso_session_is_refused(admin):
    _, tokens, api = admin
    sid = jose.parse(tokens["access_token"])[1]["sid"]
    sessions.end_session(UserSession.objects.get(pk=sid))
    _refused(api)


def test_the_clients_ended_share_of_a_live_session_is_refused(admin):
    _, tokens, api = admin
    sid = jose.parse(tokens["access_token"])[1]["sid"]
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
    _, tokens, _ = admin
    _refused(Api(tokens["refresh_token"]))
