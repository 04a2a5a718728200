"""The one sign-in service (realms.signin.passwords) behind the login form, the password grant and the admin
console: user storage providers, the same cost for every refusal, brute-force protection and
events on the console, its per-address limit, required actions and flow bindings."""
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import hashers as django_hashers
from django.test import Client as HttpClient
from django.urls import reverse
from django.utils.crypto import constant_time_compare

from realms.credentials import hashers
from realms.data import realm_cache
from realms.models import Component, Credential, Event, Realm, Role, User
from realms.registry import Registry
from realms.representation import RepresentationError, export_realm, import_realm
from realms.signin import flows
from realms.signin.flows import REQUIRED, Flow, step
from realms.users import storage
from realms.users.accounts import create_user
from realms.users.storage import UserStorageProvider
from tests.browser import console_sign_in
from tests.oidc.browser.conftest import PASSWORD, make_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]

AUTH = "/realms/acme/protocol/openid-connect/auth"
TOKEN = "/realms/acme/protocol/openid-connect/token"
PARAMS = {"client_id": "web-app", "redirect_uri": "https://app.example/cb", "response_type": "code",
          "scope": "openid", "state": "st"}
# The people of the test-only external store: name -> (e-mail, password).
PEOPLE = {"carol": ("carol@example.com", "carols own secret")}


class DictStorage(UserStorageProvider):
    """A user storage provider holding its users in a dict; imports them on first lookup."""

    def __init__(self, component):
        self.component = component

    def _imported(self, realm, name):
        if name not in PEOPLE:
            return None
        return User.objects.get_or_create(realm=realm, username=name, defaults={
            "email": PEOPLE[name][0], "federation_link": self.component})[0]

    def get_user_by_id(self, realm, user_id):
        return User.objects.filter(realm=realm, pk=user_id, federation_link=self.component).first()

    def get_user_by_username(self, realm, username):
        return self._imported(realm, username.lower())

    def get_user_by_email(self, realm, email):
        return self._imported(realm, next((n for n, (e, _) in PEOPLE.items() if e == email.lower()), ""))

    def search(self, realm, query, first=0, max_results=100):
        names = sorted(n for n in PEOPLE if query in n)[first:first + max_results]
        return [self._imported(realm, n) for n in names]

    def validate(self, realm, user, credential_type, secret):
        return credential_type == "password" and constant_time_compare(PEOPLE[user.username][1], secret)

    def is_configured_for(self, realm, user, credential_type):
        return credential_type == "password"


def dict_component(realm):
    return Component.objects.create(realm=realm, name="people", provider_id="test-dict",
                                    provider_type=Component.USER_STORAGE)


@pytest.fixture
def dict_storage(monkeypatch):
    monkeypatch.setattr(storage, "_factories", Registry("user storage providers"))  # as it was, after the test
    storage.register_provider("test-dict", DictStorage)


def sign_in(http, username, password, params=PARAMS):
    page = http.get(AUTH, params)
    action = re.search(r'action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")
    return http.post(action, {"username": username, "password": password})


def redirect_query(response):
    assert response.status_code == 302, response.content[:300]
    return parse_qs(urlsplit(response["Location"]).query)


def password_grant(http, username, password, client_id="web-app", **extra):
    return http.post(TOKEN, {"grant_type": "password", "username": username, "password": password,
                             "client_id": client_id, "client_secret": f"secret-of-{client_id}", "scope": "openid",
                             **extra})


def login_errors(realm):
    return [e.error for e in Event.objects.filter(realm=realm, type="LOGIN_ERROR").order_by("time")]


# --- A storage provider registered at run time serves every sign-in -----------------------------

def test_dict_storage_provider_serves_the_login_form(client, realm, web_app, dict_storage):
    component = dict_component(realm)
    assert sign_in(client, "carol", "wrong").status_code == 200  # the form again, with the error
    assert login_errors(realm) == ["invalid_user_credentials"]
    query = redirect_query(sign_in(HttpClient(), "Carol", PEOPLE["carol"][1]))
    assert query["code"] and query["state"] == ["st"]
    carol = User.objects.get(realm=realm, username="carol")
    assert carol.federation_link == component and not carol.has_usable_password()  # never a local password


def test_dict_storage_provider_serves_the_password_grant_by_email(client, realm, web_app, dict_storage):
    dict_component(realm)
    realm.login_with_email_allowed = True
    realm.save()
    assert password_grant(client, "carol@example.com", "wrong").json()["error"] == "invalid_grant"
    ok = password_grant(client, "carol@example.com", PEOPLE["carol"][1])
    assert ok.status_code == 200 and "access_token" in ok.json()


def test_dict_storage_provider_serves_the_console(client, dict_storage):
    master = Realm.objects.get_or_create(name="master")[0]
    dict_component(master)
    carol = storage.find_user(master, "carol")  # imported from the store, then made an admin
    carol.roles.add(Role.objects.get_or_create(realm=master, client=None, name="admin")[0])
    refused = console_sign_in(client, "carol", "wrong")
    assert refused.status_code == 200 and "_auth_user_id" not in client.session
    ok = console_sign_in(client, "carol", PEOPLE["carol"][1])
    assert ok.status_code == 302 and client.session["_auth_user_id"] == carol.pk


def test_conditions_ask_the_users_store_what_is_configured(realm, bob, dict_storage):
    component = dict_component(realm)
    carol = storage.find_user(realm, "carol")
    nopass = create_user(realm, "nopass")
    assert storage.is_configured_for(realm, carol, "password") and storage.is_configured_for(realm, bob, "password")
    assert not storage.is_configured_for(realm, nopass, "password")
    component.provider_id = "gone"
    component.save()
    carol.refresh_from_db()
    assert not storage.is_configured_for(realm, carol, "password")


def test_external_stores_are_asked_in_priority_order(realm, dict_storage):
    later = Component.objects.create(realm=realm, name="a-later", provider_id="test-dict",
                                     provider_type=Component.USER_STORAGE, config={"priority": ["5"]})
    first = Component.objects.create(realm=realm, name="z-first", provider_id="test-dict",
                                     provider_type=Component.USER_STORAGE, config={"priority": ["1"]})
    assert storage.find_user(realm, "carol").federation_link == first
    assert later.users.count() == 0


def test_storage_search_pages_through_the_realm_database(realm, bob):
    create_user(realm, "bobby")
    assert [u.username for u in storage.REALM_DATABASE.search(realm, "bob", 1, 5)] == ["bobby"]


# --- A federated user whose provider is not here is refused --------------------------------------

def test_federated_user_without_provider_is_refused_not_signed_in_locally(client, realm, web_app, bob):
    ldap = Component.objects.create(realm=realm, name="ldap", provider_id="ldap", provider_type=Component.USER_STORAGE)
    bob.federation_link = ldap
    bob.save()  # bob still has a local password: it must not be used
    response = sign_in(client, "bob", PASSWORD)
    assert response.status_code == 200 and "Invalid username or password." in response.content.decode()
    grant = password_grant(client, "bob", PASSWORD)
    assert grant.status_code == 400 and grant.json() == {"error": "invalid_grant",
                                                          "error_description": "Invalid user credentials"}
    assert login_errors(realm) == ["user_storage_unavailable"] * 2


# --- Every refusal costs one password check -------------------------------------------------------

@pytest.fixture
def checks(monkeypatch):
    """Counts password-hash checks, the real ones and the unknown-user decoy."""
    calls = []
    real = django_hashers.check_password

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(django_hashers, "check_password", counted)
    monkeypatch.setattr(hashers, "check_password", counted)
    return calls


@pytest.mark.parametrize("case", ["wrong", "unknown", "disabled", "locked", "unavailable"])
def test_every_refused_password_grant_costs_one_check(client, realm, web_app, bob, checks, case):
    realm.brute_force_protected = True
    realm.save()
    username, password = "bob", PASSWORD
    if case == "wrong":
        password = "wrong"
    elif case == "unknown":
        username = "nobody"
    elif case == "disabled":
        User.objects.filter(pk=bob.pk).update(enabled=False)
    elif case == "locked":
        realm.failure_factor = 1
        realm.save()
        assert password_grant(client, "bob", "wrong").status_code == 400
    else:
        ldap = Component.objects.create(realm=realm, name="ldap", provider_id="ldap",
                                        provider_type=Component.USER_STORAGE)
        User.objects.filter(pk=bob.pk).update(federation_link=ldap)
    checks.clear()
    response = password_grant(client, username, password)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    # Client authentication checks no password hash; the user's answer costs exactly one.
    assert len(checks) == 1


@pytest.mark.parametrize("case", ["wrong", "unknown", "disabled", "locked"])
def test_every_refused_login_form_costs_one_check(client, realm, web_app, bob, checks, case):
    realm.brute_force_protected = True
    realm.failure_factor = 1
    realm.save()
    username, password = ("nobody" if case == "unknown" else "bob"), ("wrong" if case == "wrong" else PASSWORD)
    if case == "disabled":
        User.objects.filter(pk=bob.pk).update(enabled=False)
    if case == "locked":
        sign_in(client, "bob", "wrong")
    checks.clear()
    response = sign_in(client, username, password)
    assert response.status_code == 200 and len(checks) == 1


def test_disabled_account_is_named_only_to_who_knows_the_password(client, realm, web_app, bob):
    User.objects.filter(pk=bob.pk).update(enabled=False)
    assert password_grant(client, "bob", "wrong").json()["error_description"] == "Invalid user credentials"
    assert password_grant(client, "bob", PASSWORD).json()["error_description"] == "Account disabled"
    assert login_errors(realm) == ["user_disabled", "user_disabled"]


# --- Required actions this server does not implement ----------------------------------------------

def test_unknown_required_action_refuses_the_login_form(client, realm, web_app, bob):
    User.objects.filter(pk=bob.pk).update(required_actions=["NOT_INSTALLED_ACTION"])
    query = redirect_query(sign_in(client, "bob", PASSWORD))
    assert "code" not in query and query["error"] == ["access_denied"]
    assert login_errors(realm) == ["required_action_unavailable"]


def test_unknown_required_action_refuses_the_password_grant(client, realm, web_app, bob):
    User.objects.filter(pk=bob.pk).update(required_actions=["NOT_INSTALLED_ACTION"])
    response = password_grant(client, "bob", PASSWORD)
    assert response.status_code == 400 and response.json() == {
        "error": "invalid_grant", "error_description": "Account is not fully set up"}
    assert login_errors(realm) == ["resolve_required_actions"]


# --- Flows bound by purpose, with the client's overrides ------------------------------------------

@pytest.fixture
def stored_flows(monkeypatch):
    """A stored flow by id, as a client's authenticationFlowBindingOverrides names it: the user
    must pass a step this server does not have, so it always refuses."""
    strict = Flow("strict", (step("direct-grant-validate-username", REQUIRED), step("no-such-step", REQUIRED)))

    def loader(realm, ref):
        return strict if ref == "3b5c7a0e-strict" else None

    monkeypatch.setattr(flows, "_flow_loaders", [])  # the loaders as they were, after the test
    flows.register_flow_loader(loader)


def test_client_override_of_the_direct_grant_binding_is_honoured(client, realm, web_app, bob, stored_flows):
    assert password_grant(client, "bob", PASSWORD).status_code == 200
    web_app.authentication_flow_binding_overrides = {"direct_grant": "3b5c7a0e-strict"}
    web_app.save()
    realm_cache.clear()
    response = password_grant(client, "bob", PASSWORD)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert login_errors(realm)[-1] == "required_step_unavailable"


def test_client_override_of_the_browser_binding_is_honoured(client, realm, web_app, bob, stored_flows):
    web_app.authentication_flow_binding_overrides = {"browser": "3b5c7a0e-strict"}
    web_app.save()
    realm_cache.clear()
    page = client.get(AUTH, PARAMS)
    query = redirect_query(page)  # the strict flow's first step is no browser step: refused at once
    assert query["error"] == ["access_denied"]


def test_client_override_naming_no_flow_refuses(client, realm, web_app, bob):
    web_app.authentication_flow_binding_overrides = {"direct_grant": "deleted-flow-id"}
    web_app.save()
    realm_cache.clear()
    assert password_grant(client, "bob", PASSWORD).json()["error"] == "invalid_grant"
    assert login_errors(realm)[-1] == "flow_not_found"


def test_builtin_flows_for_every_binding(realm):
    for binding, alias in [("browser", "browser"), ("direct_grant", "direct grant"), ("registration", "registration"),
                           ("reset_credentials", "reset credentials"), ("first_broker_login", "first broker login")]:
        assert flows.flow_for(realm, None, binding).alias == alias
    direct = flows.flow_for(realm, None, "direct_grant")
    assert [e.authenticator or e.flow.alias for e in direct.executions] == [
        "direct-grant-validate-username", "direct-grant-validate-password", "Direct Grant - Conditional OTP"]


# --- Import and export of user storage components ------------------------------------------------

def _rep(users, components=None):
    rep = {"realm": "fed", "users": users}
    if components is not None:
        rep["components"] = {Component.USER_STORAGE: components}
    return rep


LDAP = {"id": "0d0c-ldap", "name": "ldap", "providerId": "ldap", "subComponents": {},
        "config": {"priority": ["0"], "editMode": ["READ_ONLY"], "connectionUrl": ["ldap://ldap.example"]}}


def test_user_storage_components_and_federation_links_round_trip():
    realm = import_realm(_rep([{"username": "dave", "federationLink": "0d0c-ldap"}, {"username": "erin"}],
                              [LDAP])).realm
    dave = User.objects.get(realm=realm, username="dave")
    assert dave.federation_link.provider_id == "ldap" and dave.federation_link.get("editMode") == "READ_ONLY"
    rep = export_realm(realm)
    assert rep["components"][Component.USER_STORAGE] == [LDAP]
    users = {u["username"]: u for u in rep["users"]}
    assert users["dave"]["federationLink"] == "0d0c-ldap" and "federationLink" not in users["erin"]


def test_federation_link_to_a_missing_component_fails_the_import_with_its_path():
    with pytest.raises(RepresentationError) as exc:
        import_realm(_rep([{"username": "erin"}, {"username": "dave", "federationLink": "gone"}]))
    assert exc.value.path == "users[1].federationLink"
    assert not Realm.objects.filter(name="fed").exists()
