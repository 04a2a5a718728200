"""First broker login as Keycloak 26 runs it, driven through the login pages: a sign-in starts at
the authorization endpoint, the provider's answer (a BrokeredIdentity) is handed to the broker as
its endpoint does once a provider type proved it, and the realm's stored first broker login flow
runs with the steps of ``realms.brokering.first_login``: a new user, the review page, an existing
account confirmed with its password and one-time code (never linked silently), automatic
linking where an admin put it, and the link overridden only on confirmation."""
import re

import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.brokering import broker
from realms.brokering.providers import BrokeredIdentity
from realms.data import realm_cache
from realms.models import (
    AuthenticationExecution,
    AuthenticationFlow,
    Event,
    FederatedIdentity,
    IdentityProvider,
    User,
)
from realms.signin.flows import get_authenticator
from realms.sso import auth_sessions
from realms.users.accounts import create_user
from realms.users.actions import get_required_action
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_otp import add_otp, app_totp
from tests.selfservice.test_reset_and_registration import AUTH, PARAMS, form_action, html, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def idp(realm):
    return IdentityProvider.objects.create(realm=realm, alias="upstream", display_name="Upstream ID",
                                           provider_id="oidc")


def identity(**fields):
    values = {"id": "sub-1", "username": "alice", "email": "alice@example.com", "email_verified": True,
              "first_name": "Alice", "last_name": "Liddell"}
    return BrokeredIdentity(**{**values, **fields})


def answered(http, realm_obj, idp, brokered):
    """Start a sign-in in ``http`` and hand the broker the provider's answer, as its endpoint
    does: the page (or redirect) that follows."""
    page = http.get(AUTH, PARAMS)
    tab = re.search(r"tab=([^&\"]+)", form_action(page)).group(1)
    request = RequestFactory().get("/")
    request.COOKIES[auth_sessions.COOKIE] = http.cookies[auth_sessions.COOKIE].value
    realm = realm_cache.get_realm(realm_obj.name)
    auth_session = auth_sessions.load(request, realm.realm, tab)
    client = realm.client_by_pk(auth_session.client_pk)
    return broker.authenticated(request, realm.realm, client, auth_session, idp, brokered)


def set_config(realm, alias, **config):
    """Change an authenticator config of the realm's first broker login flow."""
    execution = AuthenticationExecution.objects.get(realm=realm, authenticator_config__alias=alias)
    stored = execution.authenticator_config
    stored.config = {**stored.config, **config}
    stored.save()
    realm_cache.clear()


def test_the_steps_and_the_action_are_registered_from_brokering():
    for provider_id in ("idp-review-profile", "idp-create-user-if-unique", "idp-detect-existing-broker-user",
                        "idp-confirm-link", "idp-email-verification", "idp-username-password-form", "idp-auto-link",
                        "idp-confirm-override-link"):
        assert type(get_authenticator(provider_id)).__module__ == "realms.brokering.first_login", provider_id
    assert get_required_action("idp_link").provider_id == "idp_link"


def test_a_first_login_creates_the_user_and_links_it(realm, web_app, idp):
    http = HttpClient()
    resp = answered(http, realm, idp, identity())
    assert "code" in redirect_query(resp)
    alice = User.objects.get(realm=realm, username="alice")
    assert (alice.email, alice.email_verified, alice.first_name, alice.last_name) == (
        "alice@example.com", True, "Alice", "Liddell")
    link = FederatedIdentity.objects.get(user=alice)
    assert (link.identity_provider_id, link.subject, link.user_name) == (idp.pk, "sub-1", "alice")
    assert Event.objects.filter(realm=realm, type="FEDERATED_IDENTITY_LINK", user_id=alice.pk).exists()


def test_an_unverified_email_is_stored_unverified(realm, web_app, idp):
    redirect_query(answered(HttpClient(), realm, idp, identity(email_verified=False)))
    assert User.objects.get(realm=realm, username="alice").email_verified is False


def test_require_password_update_after_registration(realm, web_app, idp):
    set_config(realm, "create unique user config", **{"require.password.update.after.registration": "true"})
    page = answered(HttpClient(), realm, idp, identity())
    assert page.status_code == 200 and 'name="password-new"' in html(page)
    assert User.objects.get(realm=realm, username="alice").required_actions == ["UPDATE_PASSWORD"]


def test_review_profile_when_something_is_missing(realm, web_app, idp):
    http = HttpClient()
    page = answered(http, realm, idp, identity(last_name="", email_verified=True))
    assert page.status_code == 200 and 'id="kc-update-profile-form"' in html(page)
    assert 'value="alice@example.com"' in html(page) and 'value="Alice"' in html(page)
    assert not User.objects.filter(realm=realm, username="alice").exists()
    missing = http.post(form_action(page), {"username": "alice", "email": "alice@example.com", "firstName": "Alice",
                                            "lastName": ""})
    assert 'id="input-error-lastName"' in html(missing)
    done = http.post(form_action(missing), {"username": "alice", "email": "alice@example.com", "firstName": "Alice",
                                            "lastName": "Pleasance"})
    assert "code" in redirect_query(done)
    alice = User.objects.get(realm=realm, username="alice")
    assert alice.last_name == "Pleasance" and alice.email_verified is True
    assert FederatedIdentity.objects.get(user=alice).user_name == "alice"


def test_an_email_typed_on_the_review_page_is_not_verified(realm, web_app, idp):
    http = HttpClient()
    page = answered(http, realm, idp, identity(first_name=""))
    done = http.post(form_action(page), {"username": "ally", "email": "ally@example.org", "firstName": "Ally",
                                         "lastName": "Liddell"})
    assert "code" in redirect_query(done)
    ally = User.objects.get(realm=realm, username="ally")
    assert (ally.email, ally.email_verified) == ("ally@example.org", False)
    # The link keeps the provider's username, whatever local one was chosen.
    assert FederatedIdentity.objects.get(user=ally).user_name == "alice"
    assert Event.objects.filter(realm=realm, type="UPDATE_EMAIL").exists()


@pytest.mark.parametrize("mode, shown", [("on", True), ("off", False), ("missing", False)])
def test_update_profile_on_first_login(realm, web_app, idp, mode, shown):
    set_config(realm, "review profile config", **{"update.profile.on.first.login": mode})
    resp = answered(HttpClient(), realm, idp, identity())
    assert ('id="kc-update-profile-form"' in html(resp)) is shown
    if not shown:
        assert "code" in redirect_query(resp)


def test_review_off_with_a_missing_username_still_asks_for_it(realm, web_app, idp):
    """No username at all: Keycloak enforces the review page whatever the setting."""
    set_config(realm, "review profile config", **{"update.profile.on.first.login": "off"})
    http = HttpClient()
    page = http.get(answered(http, realm, idp, identity(username=""))["Location"])
    assert 'id="kc-update-profile-form"' in html(page)
    done = http.post(form_action(page), {"username": "alice2", "email": "alice@example.com", "firstName": "Alice",
                                         "lastName": "Liddell"})
    assert "code" in redirect_query(done) and User.objects.filter(realm=realm, username="alice2").exists()


def test_an_existing_email_is_never_linked_silently_then_the_password_and_code_link_it(realm, web_app, idp, bob):
    """Automatic linking is off by default: the "Account already exists" page, then bob's
    password (a wrong one refused), then his one-time code, and only then the link."""
    add_otp(bob)
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bobby", email="bob@example.com"))
    assert page.status_code == 200 and 'id="linkAccount"' in html(page)
    assert "User with email bob@example.com already exists. How do you want to continue?" in html(page)
    assert 'id="updateProfile"' in html(page)  # the review step ran (nothing to show)
    assert not FederatedIdentity.objects.exists() and not User.objects.filter(username="bobby").exists()
    login = http.post(form_action(page), {"submitAction": "linkAccount"})
    assert "Authenticate to link your account with Upstream ID" in html(login)
    assert re.search(r'id="username"[^>]*value="bob"[^>]*readonly', html(login))
    wrong = http.post(form_action(login), {"password": "not his"})
    assert "Invalid username or password." in html(wrong) and not FederatedIdentity.objects.exists()
    assert Event.objects.filter(realm=realm, type="LOGIN_ERROR", user_id=bob.pk).exists()
    otp = http.post(form_action(wrong), {"username": "mallory", "password": PASSWORD})  # the username is fixed
    assert 'name="otp"' in html(otp) and not FederatedIdentity.objects.exists()
    bad = http.post(form_action(otp), {"otp": "000000" if app_totp().now() != "000000" else "111111"})
    assert "Invalid authenticator code." in html(bad) and not FederatedIdentity.objects.exists()
    done = http.post(form_action(bad), {"otp": app_totp().now()})
    assert "code" in redirect_query(done)
    link = FederatedIdentity.objects.get()
    assert (link.user_id, link.subject, link.user_name) == (bob.pk, "sub-1", "bobby")
    assert User.objects.filter(realm=realm).count() == 1


def test_a_second_login_reuses_the_link(realm, web_app, idp, bob):
    FederatedIdentity.objects.create(realm=realm, user=bob, identity_provider=idp, subject="sub-1", user_name="bobby")
    resp = answered(HttpClient(), realm, idp, identity(username="bobby", email="someone-else@example.com"))
    assert "code" in redirect_query(resp)
    assert User.objects.filter(realm=realm).count() == 1


def test_review_profile_from_the_confirm_page_keeps_the_providers_username(realm, web_app, idp, bob):
    """Back on the review page the provider's own username is no error (it is bob's too): the
    steps after it find bob's account by that username and ask again."""
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bob", email="bob@example.com"))
    assert "User with email bob@example.com already exists." in html(page)
    review = http.post(form_action(page), {"submitAction": "updateProfile"})
    assert review.status_code == 302
    review = http.get(review["Location"])
    assert 'id="kc-update-profile-form"' in html(review) and 'value="bob@example.com"' in html(review)
    again = http.post(form_action(review), {"username": "bob", "email": "robert@example.org", "firstName": "Robert",
                                            "lastName": "B"})
    assert "User with username bob already exists. How do you want to continue?" in html(again)
    login = http.post(form_action(again), {"submitAction": "linkAccount"})
    assert "Authenticate to link your account" in html(login)


def test_review_then_a_new_unique_account(realm, web_app, idp, bob):
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bob", email="bob@example.com"))
    review = http.get(http.post(form_action(page), {"submitAction": "updateProfile"})["Location"])
    taken = http.post(form_action(review), {"username": "bob", "email": "bob@example.com", "firstName": "Bob",
                                            "lastName": "B"})
    assert 'id="linkAccount"' in html(taken)  # unchanged values are the provider's: still bob's account
    review = http.get(http.post(form_action(taken), {"submitAction": "updateProfile"})["Location"])
    done = http.post(form_action(review), {"username": "robert", "email": "robert@example.org", "firstName": "Robert",
                                           "lastName": "B"})
    assert "code" in redirect_query(done)
    robert = User.objects.get(realm=realm, username="robert")
    assert FederatedIdentity.objects.get().user_id == robert.pk and robert.email_verified is False


def test_a_username_changed_to_another_accounts_is_refused_on_review(realm, web_app, idp, bob):
    http = HttpClient()
    page = answered(http, realm, idp, identity(last_name=""))
    taken = http.post(form_action(page), {"username": "bob", "email": "alice@example.com", "firstName": "Alice",
                                          "lastName": "L"})
    assert "Username already exists." in html(taken)


def test_duplicate_emails_allowed_creates_another_user(realm, web_app, idp, bob):
    realm.duplicate_emails_allowed = True
    realm.save()
    resp = answered(HttpClient(), realm, idp, identity(username="alice", email="bob@example.com"))
    assert "code" in redirect_query(resp)
    assert User.objects.get(realm=realm, username="alice").email == "bob@example.com"


def test_an_existing_username_is_an_existing_account(realm, web_app, idp, bob):
    page = answered(HttpClient(), realm, idp, identity(username="bob", email="other@example.com"))
    assert "User with username bob already exists. How do you want to continue?" in html(page)


def _flow_with(realm, alias, *steps):
    """A first broker login flow of the given steps (REQUIRED, in order), for the provider."""
    flow = AuthenticationFlow.objects.create(realm=realm, alias=alias, provider_id="basic-flow", top_level=True)
    for priority, provider_id in enumerate(steps):
        AuthenticationExecution.objects.create(realm=realm, flow=flow, authenticator=provider_id,
                                               requirement="REQUIRED", priority=priority)
    realm_cache.clear()
    return flow


def test_automatic_linking_only_where_an_admin_put_it(realm, web_app, idp, bob):
    _flow_with(realm, "auto link", "idp-detect-existing-broker-user", "idp-auto-link")
    idp.first_broker_login_flow_alias = "auto link"
    idp.save()
    realm_cache.clear()
    resp = answered(HttpClient(), realm, idp, identity(username="bobby", email="bob@example.com"))
    assert "code" in redirect_query(resp)
    assert FederatedIdentity.objects.get().user_id == bob.pk


def test_detect_existing_broker_user_refuses_someone_unknown(realm, web_app, idp):
    _flow_with(realm, "existing only", "idp-detect-existing-broker-user", "idp-auto-link")
    idp.first_broker_login_flow_alias = "existing only"
    idp.save()
    realm_cache.clear()
    page = answered(HttpClient(), realm, idp, identity(username="nobody", email="nobody@example.com"))
    assert page.status_code == 401
    assert "User nobody authenticated with identity provider upstream does not exist." in html(page)
    assert not User.objects.filter(username="nobody").exists() and not FederatedIdentity.objects.exists()


def test_create_user_if_unique_alone_says_the_account_exists(realm, web_app, idp, bob):
    """REQUIRED on its own, an existing account is Keycloak's 409 page: nothing else could link it."""
    _flow_with(realm, "unique only", "idp-create-user-if-unique")
    idp.first_broker_login_flow_alias = "unique only"
    idp.save()
    realm_cache.clear()
    page = answered(HttpClient(), realm, idp, identity(username="bobby", email="bob@example.com"))
    assert page.status_code == 409
    assert "User with email bob@example.com already exists. Please login to account management" in html(page)
    assert Event.objects.filter(realm=realm, error="federated_identity_account_exists", user_id=bob.pk).exists()


def test_override_link_only_when_confirmed(realm, web_app, idp, bob):
    other = IdentityProvider.objects.create(realm=realm, alias="other", provider_id="oidc")
    FederatedIdentity.objects.create(realm=realm, user=bob, identity_provider=idp, subject="old-sub",
                                     user_name="old-bob")
    FederatedIdentity.objects.create(realm=realm, user=bob, identity_provider=other, subject="x", user_name="x")
    _flow_with(realm, "override", "idp-detect-existing-broker-user", "idp-confirm-override-link", "idp-auto-link")
    idp.first_broker_login_flow_alias = "override"
    idp.save()
    realm_cache.clear()
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="new-bob", email="bob@example.com"))
    assert page.status_code == 200 and 'id="confirmOverride"' in html(page)
    assert ("You are trying to link your account bob with the upstream account new-bob. But your account is "
            "already linked with different upstream account old-bob.") in html(page)
    unchanged = http.post(form_action(page), {"submitAction": "something else"})
    assert 'id="confirmOverride"' in html(unchanged)
    assert FederatedIdentity.objects.get(identity_provider=idp).subject == "old-sub"
    done = http.post(form_action(unchanged), {"submitAction": "confirmOverride"})
    assert "code" in redirect_query(done)
    link = FederatedIdentity.objects.get(identity_provider=idp)
    assert (link.user_id, link.subject, link.user_name) == (bob.pk, "sub-1", "new-bob")
    assert FederatedIdentity.objects.get(identity_provider=other).subject == "x"  # the other provider's stays
    override = Event.objects.get(realm=realm, type="FEDERATED_IDENTITY_OVERRIDE_LINK")
    assert override.details["previous_identity_provider_identity"] == "old-bob"


def test_an_account_linked_to_another_account_there_is_not_relinked_without_confirmation(realm, web_app, idp, bob):
    """The default flow has no override step: the link to bob's other account at the provider
    stays, and the sign-in ends on Keycloak's unexpected-error page."""
    FederatedIdentity.objects.create(realm=realm, user=bob, identity_provider=idp, subject="old-sub",
                                     user_name="old-bob")
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="new-bob", email="bob@example.com"))
    login = http.post(form_action(page), {"submitAction": "linkAccount"})
    refused = http.post(form_action(login), {"password": PASSWORD})
    assert refused.status_code == 400 and "Unexpected error when authenticating with identity provider" in html(refused)
    assert FederatedIdentity.objects.get().subject == "old-sub"


def test_no_review_button_where_no_review_ran(realm, web_app, idp, bob):
    """Keycloak hides "Review profile" when the flow's review step did not run; a forged
    ``updateProfile`` does not restart the flow either."""
    _flow_with(realm, "no review", "idp-detect-existing-broker-user", "idp-confirm-link", "idp-username-password-form")
    idp.first_broker_login_flow_alias = "no review"
    idp.save()
    realm_cache.clear()
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bobby", email="bob@example.com"))
    assert 'id="linkAccount"' in html(page) and 'id="updateProfile"' not in html(page)
    forged = http.post(form_action(page), {"submitAction": "updateProfile"})
    assert forged.status_code == 200 and 'id="linkAccount"' in html(forged)
    login = http.post(form_action(forged), {"submitAction": "linkAccount"})
    assert "code" in redirect_query(http.post(form_action(login), {"password": PASSWORD}))
    assert FederatedIdentity.objects.get().user_id == bob.pk


def test_a_disabled_provider_stops_first_broker_login(realm, web_app, idp, bob):
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bobby", email="bob@example.com"))
    IdentityProvider.objects.filter(pk=idp.pk).update(enabled=False)
    realm_cache.clear()
    refused = http.post(form_action(page), {"submitAction": "linkAccount"})
    assert refused.status_code == 400
    assert "Unexpected error when authenticating with identity provider" in html(refused)
    assert not FederatedIdentity.objects.exists()


def test_email_as_username(realm, web_app, idp):
    realm.registration_email_as_username = True
    realm.save()
    assert "code" in redirect_query(answered(HttpClient(), realm, idp, identity()))
    assert User.objects.filter(realm=realm, username="alice@example.com").exists()


def test_an_email_that_is_another_accounts_username_is_that_account(realm, web_app, idp):
    """Where people sign in with their e-mail, an account named by the identity's address is the
    identity's too (it would otherwise be shadowed)."""
    create_user(realm, "alice@example.com", password=PASSWORD)
    realm.login_with_email_allowed = True
    realm.save()
    page = answered(HttpClient(), realm, idp, identity(username="alice", email="alice@example.com"))
    assert "User with username alice@example.com already exists." in html(page)
