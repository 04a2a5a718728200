"""The Account REST API (docs/decisions/0028): Keycloak's paths and JSON below
/realms/<realm>/account/, a token of the realm with the ``account`` audience and the account
roles, and nothing of another user."""
import json

import pytest
from django.test import Client

from realms.data import realm_cache
from realms.models import Client as ClientModel
from realms.models import ClientScope, Credential, Event, Role, UserSession
from realms.representation.services import create_realm
from realms.sso.sessions import create_user_session, get_or_create_client_session
from realms.users.accounts import create_user, enable_service_account
from tests.oidc.browser.conftest import make_client

pytestmark = pytest.mark.django_db
PASSWORD = "account-api-password-1"


def token(realm, username, client_id="account-console", **extra):
    resp = Client().post(f"/realms/{realm}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": client_id, "username": username, "password": PASSWORD, **extra})
    assert resp.status_code == 200, resp.content
    return resp.json()


def call(access, method, path, body=None, realm="acme"):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access}", HTTP_ACCEPT="application/json")
    url = f"/realms/{realm}/account/{path}"
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, json.dumps(body) if body is not None else "", content_type="application/json")


@pytest.fixture
def acme(fresh_caches):
    realm_cache.clear()
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.save()
    ClientModel.objects.filter(realm=realm, client_id="account-console").update(direct_access_grants_enabled=True)
    make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)
    return realm


@pytest.fixture
def bob(acme):
    return create_user(acme, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob", last_name="B")


@pytest.fixture
def bob_token(bob):
    return token("acme", "bob")


def test_the_token_of_account_console_reads_the_profile_in_keycloaks_shape(bob_token):
    resp = call(bob_token["access_token"], "get", "")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert {k: body[k] for k in ("username", "email", "firstName", "lastName", "emailVerified")} == {
        "username": "bob", "email": "bob@example.com", "firstName": "Bob", "lastName": "B", "emailVerified": False}
    names = [a["name"] for a in body["userProfileMetadata"]["attributes"]]
    assert names == ["username", "email", "firstName", "lastName"]
    assert "userProfileMetadata" not in call(bob_token["access_token"], "get", "?userProfileMetadata=false").json()


def test_no_token_a_bad_token_and_a_token_without_the_account_audience_are_401(acme, bob):
    assert call("", "get", "").status_code == 401
    assert call("not-a-token", "get", "").status_code == 401
    # A client without the account roles in its scope gets no "account" audience (with full
    # scope it would, as in Keycloak).
    ClientModel.objects.filter(realm=acme, client_id="web-app").update(full_scope_allowed=False)
    web = token("acme", "bob", client_id="web-app", client_secret="secret-of-web-app")["access_token"]
    assert call(web, "get", "").status_code == 401


def test_a_token_of_another_realm_is_401(acme, bob):
    other = create_realm("other")
    ClientModel.objects.filter(realm=other, client_id="account-console").update(direct_access_grants_enabled=True)
    create_user(other, "bob", password=PASSWORD)
    assert call(token("other", "bob")["access_token"], "get", "").status_code == 401


def test_without_manage_account_or_view_profile_the_api_answers_403(acme, bob):
    default = Role.objects.get(realm=acme, client=None, name="default-roles-acme")
    default.composites.remove(*Role.objects.filter(client__client_id="account", name__in=["manage-account",
                                                                                          "view-profile"]))
    bob.roles.add(Role.objects.get(client__realm=acme, client__client_id="account", name="view-groups"))
    access = token("acme", "bob")["access_token"]
    assert call(access, "get", "").status_code == 403
    assert call(access, "post", "", {"firstName": "X"}).status_code == 403
    assert call(access, "get", "sessions").status_code == 403
    assert call(access, "get", "groups").status_code == 200


def test_view_profile_reads_but_only_manage_account_changes(acme, bob):
    # web-app has full scope: its token carries view-profile, and the "account" audience.
    manage = Role.objects.get(client__realm=acme, client__client_id="account", name="manage-account")
    Role.objects.get(realm=acme, client=None, name="default-roles-acme").composites.remove(manage)
    access = token("acme", "bob", client_id="web-app", client_secret="secret-of-web-app")["access_token"]
    assert call(access, "get", "").status_code == 200
    assert call(access, "post", "", {"firstName": "X", "lastName": "B", "email": "bob@example.com"}).status_code == 403
    assert call(access, "delete", "sessions").status_code == 403


def test_a_service_account_is_refused(acme):
    app = make_client(acme, "robot", service_accounts_enabled=True)
    enable_service_account(app)
    resp = Client().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "client_credentials", "client_id": "robot", "client_secret": "secret-of-robot"})
    access = resp.json().get("access_token", "")
    assert call(access, "get", "").status_code == 401


def test_post_updates_the_profile_and_records_update_profile(bob_token, bob):
    resp = call(bob_token["access_token"], "post", "", {"firstName": "Robert", "lastName": "Brown",
                                                         "email": "robert@example.com"})
    assert resp.status_code == 204, resp.content
    bob.refresh_from_db()
    assert (bob.first_name, bob.last_name, bob.email, bob.email_verified) == ("Robert", "Brown", "robert@example.com",
                                                                              False)
    assert Event.objects.filter(type="UPDATE_PROFILE", user_id=bob.pk).exists()


def test_post_with_bad_input_answers_keycloaks_errors(bob_token, acme):
    create_user(acme, "carol", email="carol@example.com")
    resp = call(bob_token["access_token"], "post", "", {"firstName": "", "lastName": "B", "email": "carol@example.com"})
    assert resp.status_code == 400
    errors = {e["field"]: e["errorMessage"] for e in resp.json()["errors"]}
    assert errors == {"firstName": "error-user-attribute-required", "email": "emailExistsMessage"}
    resp = call(bob_token["access_token"], "post", "", {"username": "robert", "firstName": "B", "lastName": "B",
                                                         "email": "bob@example.com"})
    assert resp.json()["errorMessage"] == "updateReadOnlyAttributesRejectedMessage"


def test_credentials_list_types_with_actions_and_no_secrets(bob_token, bob):
    Credential.objects.create(user=bob, type="otp", user_label="phone", secret_data='{"value":"SEEKRIT-SEED"}',
                              credential_data={"subType": "totp"})
    body = call(bob_token["access_token"], "get", "credentials").json()
    by_type = {c["type"]: c for c in body}
    assert [c["type"] for c in body][0] == "password"
    assert by_type["password"]["updateAction"] == "UPDATE_PASSWORD" and not by_type["password"]["removeable"]
    assert by_type["otp"]["createAction"] == "CONFIGURE_TOTP" and by_type["otp"]["category"] == "two-factor"
    otp = by_type["otp"]["userCredentialMetadatas"][0]["credential"]
    assert otp["userLabel"] == "phone" and "secretData" not in otp
    assert "SEEKRIT" not in json.dumps(body)
    only = call(bob_token["access_token"], "get", "credentials?type=otp&user-credentials=false").json()
    assert [c["type"] for c in only] == ["otp"] and "userCredentialMetadatas" not in only[0]


def _types(access):
    return {c["type"]: c.get("createAction") for c in call(access, "get", "credentials").json()}


def _set(model, requirement=None, **match):
    row = model.objects.get(**match)
    if requirement is None:
        row.enabled = False
    else:
        row.requirement = requirement
    row.save()  # through save(): the realm's cached flows and actions are dropped


def test_the_types_offered_are_those_the_realms_flows_check_with_their_enabled_actions(acme, bob, bob_token):
    from realms.models import AuthenticationExecution, RequiredActionProvider

    access = bob_token["access_token"]
    # A new realm's flows check passwords and one-time codes; the other steps are DISABLED.
    assert _types(access) == {"password": None, "otp": "CONFIGURE_TOTP"}
    _set(AuthenticationExecution, "ALTERNATIVE", realm=acme, authenticator="auth-recovery-authn-code-form",
         flow__alias="Browser - Conditional 2FA")
    assert _types(access)["recovery-authn-codes"] == "CONFIGURE_RECOVERY_AUTHN_CODES"
    _set(AuthenticationExecution, "DISABLED", realm=acme, authenticator="auth-recovery-authn-code-form",
         flow__alias="Browser - Conditional 2FA")
    _set(AuthenticationExecution, "ALTERNATIVE", realm=acme, authenticator="webauthn-authenticator",
         flow__alias="Browser - Conditional 2FA")
    acme.passkeys_enabled = True
    acme.save()
    body = call(access, "get", "credentials").json()
    assert [(c["type"], c["category"], c["displayName"], c.get("createAction")) for c in body] == [
        ("password", "basic-authentication", "password-display-name", None),
        ("otp", "two-factor", "otp-display-name", "CONFIGURE_TOTP"),
        ("webauthn", "two-factor", "webauthn-display-name", "webauthn-register"),
        ("webauthn-passwordless", "passwordless", "webauthn-passwordless-display-name",
         "webauthn-register-passwordless")]
    # An action the realm switched off is not offered; a type nobody can set up, and the user
    # does not hold, is left out.
    _set(RequiredActionProvider, realm=acme, alias="webauthn-register")
    assert "webauthn" not in _types(access)
    Credential.objects.create(user=bob, type="webauthn", user_label="key", secret_data="{}", credential_data={})
    assert _types(access)["webauthn"] is None
    # A step below a DISABLED sub-flow is not in use.
    _set(AuthenticationExecution, "DISABLED", realm=acme, sub_flow__alias="Browser - Conditional 2FA")
    assert "webauthn" not in _types(access) and "otp" in _types(access)  # the direct grant still checks codes


def test_delete_a_credential_but_never_the_password_or_another_users(bob_token, bob, acme):
    otp = Credential.objects.create(user=bob, type="otp", secret_data="{}", credential_data={})
    carol = create_user(acme, "carol", password=PASSWORD)
    hers = Credential.objects.create(user=carol, type="otp", secret_data="{}", credential_data={})
    access = bob_token["access_token"]
    assert call(access, "delete", f"credentials/{hers.pk}").status_code == 404
    assert call(access, "delete", f"credentials/{bob.password_credential().pk}").status_code == 400
    assert call(access, "delete", f"credentials/{otp.pk}").status_code == 204
    assert not Credential.objects.filter(pk=otp.pk).exists() and Credential.objects.filter(pk=hers.pk).exists()
    assert Event.objects.filter(type="REMOVE_CREDENTIAL", user_id=bob.pk).exists()


def test_sessions_and_devices_and_signing_out_the_others(acme, bob):
    mine = token("acme", "bob")
    other = token("acme", "bob")  # a second session
    body = call(mine["access_token"], "get", "sessions").json()
    assert len(body) == 2 and sum(1 for s in body if s.get("current")) == 1
    assert {"id", "ipAddress", "started", "lastAccess", "expires", "browser", "clients"} <= set(body[0])
    devices = call(mine["access_token"], "get", "sessions/devices").json()
    assert sum(len(d["sessions"]) for d in devices) == 2 and devices[0]["current"]
    assert call(mine["access_token"], "delete", "sessions").status_code == 204
    assert UserSession.objects.filter(user=bob).count() == 1
    assert call(other["access_token"], "get", "sessions").status_code == 401  # its session ended
    assert call(mine["access_token"], "get", "sessions").status_code == 200


def test_deleting_another_users_session_leaves_it_alone(acme, bob, bob_token):
    carol = create_user(acme, "carol", password=PASSWORD)
    hers = create_user_session(acme, carol)
    assert call(bob_token["access_token"], "delete", f"sessions/{hers.pk}").status_code == 204
    assert UserSession.objects.filter(pk=hers.pk).exists()
    assert call(bob_token["access_token"], "get", f"sessions/{hers.pk}").status_code == 405


def test_applications_show_consents_and_revoking_ends_the_clients_sessions(acme, bob, bob_token):
    from oidc.models import ConsentGrant

    app = ClientModel.objects.get(realm=acme, client_id="web-app")
    app.consent_required = True
    app.save()
    profile = ClientScope.objects.get(realm=acme, name="profile")
    ConsentGrant.objects.create(realm=acme, user=bob, client=app, scope_ids=[profile.pk])
    session = create_user_session(acme, bob)
    get_or_create_client_session(session, app)
    access = bob_token["access_token"]
    apps = {a["clientId"]: a for a in call(access, "get", "applications").json()}
    assert apps["web-app"]["consent"]["grantedScopes"][0]["displayText"] == "User profile"
    assert apps["web-app"]["inUse"] and apps["web-app"]["userConsentRequired"]
    assert call(access, "get", "applications/web-app/consent").json()["grantedScopes"][0]["id"] == profile.pk
    assert call(access, "delete", "applications/nope/consent").status_code == 404
    assert call(access, "delete", "applications/web-app/consent").status_code == 204
    assert not ConsentGrant.objects.filter(user=bob).exists()
    assert not session.client_sessions.filter(client=app).exists()
    assert call(access, "get", "applications/web-app/consent").status_code == 204
    assert Event.objects.filter(type="REVOKE_GRANT", user_id=bob.pk).exists()


def test_groups_linked_accounts_and_organizations(acme, bob, bob_token):
    from realms.models import Group

    bob.groups.add(Group.objects.create(realm=acme, name="staff"))
    access = bob_token["access_token"]
    assert [g["name"] for g in call(access, "get", "groups").json()] == ["staff"]
    assert call(access, "get", "linked-accounts").json() == []
    assert call(access, "get", "organizations").json() == []


def test_a_browser_asking_for_html_is_sent_to_sign_in(acme):
    resp = Client().get("/realms/acme/account/")
    assert resp.status_code == 302
    assert "/realms/acme/protocol/openid-connect/auth?client_id=account" in resp["Location"]
    assert Client().get("/realms/nowhere/account/", HTTP_ACCEPT="application/json").status_code == 404


def test_cors_for_the_origins_the_token_allows(acme, bob):
    ClientModel.objects.filter(realm=acme, client_id="account-console").update(web_origins=["https://spa.example"])
    access = token("acme", "bob")["access_token"]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {access}", HTTP_ACCEPT="application/json")
    allowed = client.get("/realms/acme/account/", HTTP_ORIGIN="https://spa.example")
    assert allowed["Access-Control-Allow-Origin"] == "https://spa.example"
    assert "Access-Control-Allow-Origin" not in client.get("/realms/acme/account/", HTTP_ORIGIN="https://evil.example")
    preflight = Client().options("/realms/acme/account/sessions", HTTP_ORIGIN="https://spa.example",
                                 HTTP_ACCESS_CONTROL_REQUEST_METHOD="DELETE")
    assert preflight.status_code == 200 and "DELETE" in preflight["Access-Control-Allow-Methods"]
