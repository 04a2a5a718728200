"""Keycloak's UPDATE_EMAIL (docs/decisions/0040): with the action on and e-mail verification, a
new address is confirmed by a single-use link sent to it (checked again when followed), the old
one kept until then; the profile form and the Account REST API no longer change it. And the
locale a user picks on a sign-in page (kc_locale) stored as their ``locale`` attribute, used by
their later e-mails. E-mail captured by a real SMTP server."""
import json

import pytest
from django.test import Client as HttpClient

from realms.administration.flow_admin import next_required_action_priority
from realms.models import Client, Event, RequiredActionProvider, User, UserSession
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD

from .conftest import link_in, text_of
from .test_required_actions import must, sign_in
from .test_reset_and_registration import AUTH, PARAMS, follow_token, form_action, html, link, redirect_query

pytestmark = pytest.mark.django_db
NEW = "robert@example.org"
UPDATE_EMAIL = {**PARAMS, "kc_action": "UPDATE_EMAIL"}


@pytest.fixture
def update_email_on(realm):
    """UPDATE_EMAIL registered in the realm (Keycloak's register-required-action), with the
    realm verifying addresses."""
    RequiredActionProvider.objects.create(realm=realm, alias="UPDATE_EMAIL", name="Update Email",
                                          provider_id="UPDATE_EMAIL", enabled=True, default_action=False,
                                          priority=next_required_action_priority(realm))
    realm.verify_email = True
    realm.save()
    User.objects.filter(realm=realm, username="bob").update(email_verified=True)


def ask_for_new_address(http, send, address=NEW, **form):
    page = sign_in(http, UPDATE_EMAIL)
    assert 'id="kc-update-email-form"' in html(page) and 'value="bob@example.com"' in html(page)
    return send(http.post, form_action(page), {"email": address, **form})


def path_of(url):
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


# --- UPDATE_EMAIL ------------------------------------------------------------------------------

def test_the_new_address_gets_a_link_and_the_old_one_stays_until_it_is_followed(realm, web_app, bob, mailbox, send,
                                                                                  update_email_on):
    sent = ask_for_new_address(HttpClient(), send)
    assert "Confirmation email sent" in html(sent) and f"A confirmation email has been sent to {NEW}" in html(sent)
    message, = mailbox.wait()
    assert message["To"] == NEW and message["Subject"] == "Verify new email"
    assert f"To update your acme account with email address {NEW}" in text_of(message)
    bob.refresh_from_db()
    assert (bob.email, bob.email_verified) == ("bob@example.com", True)
    assert Event.objects.get(realm=realm, type="SEND_VERIFY_EMAIL", user_id=bob.pk).details["email"] == NEW

    done = follow_token(HttpClient(), link_in(message))  # another browser
    assert f"The account email has been successfully updated to {NEW}" in html(done)
    assert "Email updated" in html(done)
    bob.refresh_from_db()
    assert (bob.email, bob.email_verified) == (NEW, True)
    event = Event.objects.get(realm=realm, type="UPDATE_EMAIL", user_id=bob.pk)
    assert event.details == {"previous_email": "bob@example.com", "updated_email": NEW}


def test_the_link_is_used_once(realm, web_app, bob, mailbox, send, update_email_on):
    ask_for_new_address(HttpClient(), send)
    url = link_in(mailbox.wait()[0])
    http = HttpClient()
    page = http.get(path_of(url))
    follow_token(http, url)
    # Even with the old address back (so the link would apply again), it was spent.
    User.objects.filter(pk=bob.pk).update(email="bob@example.com")
    again = http.post(form_action(page))
    assert again.status_code == 400 and "Action expired." in html(again)
    bob.refresh_from_db()
    assert bob.email == "bob@example.com"


def test_an_address_taken_meanwhile_is_refused_when_the_link_is_followed(realm, web_app, bob, mailbox, send,
                                                                           update_email_on):
    ask_for_new_address(HttpClient(), send)
    url = link_in(mailbox.wait()[0])
    carol = create_user(realm, "carol", email=NEW)
    http = HttpClient()
    page = http.get(path_of(url))
    assert page.status_code == 400 and "Email already exists." in html(page)
    bob.refresh_from_db()
    assert bob.email == "bob@example.com"
    # A refused link stays unused: once the address is free again it still works.
    carol.delete()
    follow_token(http, url)
    bob.refresh_from_db()
    assert bob.email == NEW


def test_a_link_for_an_address_changed_since_is_stale(realm, web_app, bob, mailbox, send, update_email_on):
    ask_for_new_address(HttpClient(), send)
    User.objects.filter(pk=bob.pk).update(email="other@example.com")
    page = HttpClient().get(path_of(link_in(mailbox.wait()[0])))
    assert page.status_code == 400 and "old stale link" in html(page)


def test_followed_in_the_same_browser_the_application_gets_its_answer(realm, web_app, bob, mailbox, send,
                                                                        update_email_on):
    http = HttpClient()
    ask_for_new_address(http, send)
    done = follow_token(http, link_in(mailbox.wait()[0]))
    query = redirect_query(done)
    assert query["kc_action"] == ["UPDATE_EMAIL"] and query["kc_action_status"] == ["success"] and query["code"]


def test_an_address_in_use_is_refused_on_the_form(realm, web_app, bob, mailbox, send, update_email_on):
    create_user(realm, "carol", email="carol@example.com")
    resp = ask_for_new_address(HttpClient(), send, "carol@example.com")
    assert 'id="kc-update-email-form"' in html(resp) and "Email already exists." in html(resp)
    assert mailbox.stays_at(0, 0.2)


def test_without_verification_the_change_is_made_at_once(realm, web_app, bob, mailbox, send, update_email_on):
    realm.verify_email = False
    realm.save()
    done = ask_for_new_address(HttpClient(), send)
    assert redirect_query(done)["kc_action_status"] == ["success"]
    bob.refresh_from_db()
    assert (bob.email, bob.email_verified) == (NEW, False)
    assert Event.objects.filter(realm=realm, type="UPDATE_EMAIL", user_id=bob.pk).exists()
    assert mailbox.stays_at(0, 0.2)


def test_sign_out_from_other_devices_when_the_link_is_followed(realm, web_app, bob, mailbox, send, update_email_on):
    elsewhere = create_user_session(realm, bob)
    ask_for_new_address(HttpClient(), send, **{"logout-sessions": "on"})
    assert UserSession.objects.filter(pk=elsewhere.pk).exists()  # nothing changes before the link
    follow_token(HttpClient(), link_in(mailbox.wait()[0]))
    assert not UserSession.objects.filter(user=bob).exists()


def test_sign_out_from_other_devices_keeps_this_browsers_session(realm, web_app, bob, send, update_email_on):
    realm.verify_email = False
    realm.save()
    elsewhere = create_user_session(realm, bob)
    http = HttpClient()
    redirect_query(sign_in(http))
    this_browser = UserSession.objects.filter(user=bob).exclude(pk=elsewhere.pk).get()
    page = http.get(AUTH, UPDATE_EMAIL)
    assert 'id="logout-sessions"' in html(page)
    redirect_query(http.post(form_action(page), {"email": NEW, "logout-sessions": "on"}))
    assert list(UserSession.objects.filter(user=bob).values_list("pk", flat=True)) == [this_browser.pk]


def test_without_the_choice_other_sessions_stay(realm, web_app, bob, mailbox, send, update_email_on):
    elsewhere = create_user_session(realm, bob)
    ask_for_new_address(HttpClient(), send)
    follow_token(HttpClient(), link_in(mailbox.wait()[0]))
    assert UserSession.objects.filter(pk=elsewhere.pk).exists()


def test_update_email_is_off_in_a_new_realm(realm, web_app, bob):
    http = HttpClient()
    sign_in(http)
    assert redirect_query(http.get(AUTH, UPDATE_EMAIL))["kc_action_status"] == ["error"]


def test_with_update_email_on_the_profile_form_leaves_the_address_alone(realm, web_app, bob, update_email_on):
    must(bob, "UPDATE_PROFILE")
    http = HttpClient()
    page = sign_in(http)
    assert 'id="kc-update-profile-form"' in html(page) and 'id="email"' not in html(page)
    refused = http.post(form_action(page), {"email": NEW, "firstName": "Bob", "lastName": "B"})  # a forged field
    assert 'id="kc-update-profile-form"' in html(refused)
    done = http.post(form_action(page), {"firstName": "Robert", "lastName": "B"})
    assert redirect_query(done)["code"]
    bob.refresh_from_db()
    assert (bob.email, bob.first_name, bob.email_verified) == ("bob@example.com", "Robert", True)


def _account_token(realm, username="bob"):
    Client.objects.filter(realm=realm, client_id="account-console").update(direct_access_grants_enabled=True)
    resp = HttpClient().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": username, "password": PASSWORD})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


def test_the_account_rest_api_refuses_a_new_address_with_update_email_on(realm, web_app, bob, update_email_on):
    api = HttpClient(HTTP_AUTHORIZATION=f"Bearer {_account_token(realm)}", HTTP_ACCEPT="application/json")
    profile = api.get("/realms/acme/account/?userProfileMetadata=true").json()
    email_meta, = [a for a in profile["userProfileMetadata"]["attributes"] if a["name"] == "email"]
    assert email_meta["readOnly"] is True
    body = {"username": "bob", "email": NEW, "firstName": "Bob", "lastName": "B"}
    resp = api.post("/realms/acme/account/", json.dumps(body), content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["errors"] == [{"field": "email", "errorMessage": "error-user-attribute-read-only",
                                      "params": ["${email}"]}]
    same = api.post("/realms/acme/account/", json.dumps({**body, "email": "bob@example.com", "firstName": "Rob"}),
                    content_type="application/json")
    assert same.status_code == 204
    bob.refresh_from_db()
    assert (bob.email, bob.first_name) == ("bob@example.com", "Rob")


def test_the_account_console_offers_update_email_instead_of_the_field(realm, web_app, bob, update_email_on):
    http = HttpClient()
    redirect_query(sign_in(http))
    page = html(http.get("/realms/acme/account/"))
    assert "readonly" in page.split('id="email"')[1].split(">")[0]
    target = link(http.get("/realms/acme/account/"), "update-email")
    assert "kc_action=UPDATE_EMAIL" in target


# --- The locale chosen on a sign-in page -------------------------------------------------------

@pytest.fixture
def german(realm):
    realm.internationalization_enabled = True
    realm.supported_locales = ["en", "de"]
    realm.default_locale = "en"
    realm.reset_password_allowed = True
    realm.save()


def test_the_locale_picked_at_sign_in_is_stored_and_a_later_reset_mail_uses_it(realm, web_app, bob, german,
                                                                                 mailbox, send):
    redirect_query(sign_in(HttpClient(), {**PARAMS, "kc_locale": "de"}))
    bob.refresh_from_db()
    assert bob.attributes["locale"] == ["de"]
    event = Event.objects.get(realm=realm, type="UPDATE_PROFILE", user_id=bob.pk)
    assert event.details == {"pref.previous.locale": "", "pref.updated.locale": "de"}
    # Another browser, no cookie, English asked for by the browser: the e-mail is the user's.
    http = HttpClient(HTTP_ACCEPT_LANGUAGE="en")
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    send(http.post, form_action(form), {"username": "bob"})
    message, = mailbox.wait()
    assert message["Subject"] == "Passwort zurücksetzen"
    assert "Es wurde eine Änderung der Anmeldeinformationen" in text_of(message)


def test_an_unsupported_locale_is_ignored(realm, web_app, bob, german):
    redirect_query(sign_in(HttpClient(), {**PARAMS, "kc_locale": "fr"}))
    bob.refresh_from_db()
    assert "locale" not in (bob.attributes or {})


def test_nothing_is_stored_without_internationalization_or_with_the_action_off(realm, web_app, bob, german):
    RequiredActionProvider.objects.filter(realm=realm, alias="update_user_locale").update(enabled=False)
    redirect_query(sign_in(HttpClient(), {**PARAMS, "kc_locale": "de"}))
    bob.refresh_from_db()
    assert "locale" not in (bob.attributes or {})
    RequiredActionProvider.objects.filter(realm=realm, alias="update_user_locale").update(enabled=True)
    realm.internationalization_enabled = False
    realm.save()
    redirect_query(sign_in(HttpClient(), {**PARAMS, "kc_locale": "de"}))
    bob.refresh_from_db()
    assert "locale" not in (bob.attributes or {})


def test_update_user_locale_is_not_an_application_initiated_action(realm, web_app, bob, german):
    http = HttpClient()
    redirect_query(sign_in(http))
    query = redirect_query(http.get(AUTH, {**PARAMS, "kc_action": "update_user_locale"}))
    assert query["kc_action_status"] == ["error"]



def test_a_reset_asked_for_on_a_german_page_is_mailed_in_german(realm, web_app, bob, german, mailbox, send):
    http = HttpClient()
    form = http.get(link(http.get(AUTH, {**PARAMS, "kc_locale": "de"}), "kc-forgot-password"))
    send(http.post, form_action(form), {"username": "bob"})
    assert mailbox.wait()[0]["Subject"] == "Passwort zurücksetzen"
    bob.refresh_from_db()
    assert "locale" not in (bob.attributes or {})  # stored only once the user has signed in
