"""Forgot password (the reset-credentials flow) and self-registration (the registration flow),
driven through the login pages with the e-mail captured by a real SMTP server."""
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client as HttpClient
from django.test.utils import CaptureQueriesContext

from realms.models import Credential, Event, User
from tests.oidc.browser.conftest import PASSWORD
from tests.passwords import holds_password

from .conftest import link_in

pytestmark = pytest.mark.django_db

AUTH = "/realms/acme/protocol/openid-connect/auth"
PARAMS = {"client_id": "web-app", "redirect_uri": "https://app.example/cb", "response_type": "code",
          "scope": "openid", "state": "st"}
NEW_PASSWORD = "a-new-Password-42"


def html(resp):
    return resp.content.decode()


def form_action(resp):
    return re.search(r'<form[^>]*action="([^"]+)"', html(resp)).group(1).replace("&amp;", "&")


def link(resp, element_id):
    return re.search(rf'id="{element_id}" href="([^"]+)"', html(resp)).group(1).replace("&amp;", "&")


def redirect_query(resp):
    assert resp.status_code == 302, html(resp)[:500]
    return parse_qs(urlsplit(resp["Location"]).query)


def follow_token(http, url, send=None):
    """Open an e-mailed link: the page saying what it does, then its button."""
    path = url.split("://", 1)[1].split("/", 1)[1]
    page = http.get("/" + path)
    assert page.status_code == 200, html(page)[:400]
    assert 'id="kc-proceed"' in html(page)
    return (send or (lambda f, *a: f(*a)))(http.post, form_action(page))


# --- Forgot password ---------------------------------------------------------------------------

def test_login_page_links_follow_the_realm_switches(client, realm, web_app):
    page = client.get(AUTH, PARAMS)
    assert "kc-forgot-password" not in html(page) and "kc-register" not in html(page)
    realm.reset_password_allowed = realm.registration_allowed = True
    realm.save()
    page = client.get(AUTH, PARAMS)
    assert "Forgot Password?" in html(page) and "kc-register" in html(page)


def test_reset_link_refused_when_the_realm_does_not_allow_it(client, realm, web_app):
    page = client.get(AUTH, PARAMS)
    url = form_action(page).replace("/authenticate?", "/reset-credentials?")
    resp = client.get(url)
    assert resp.status_code == 403 and "Reset Credential not allowed" in html(resp)


def test_forgot_password_by_email_then_signed_in(realm, web_app, bob, mailbox, send):
    realm.reset_password_allowed = True
    realm.save()
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    assert "kc-reset-password-form" in html(form)
    sent = send(http.post, form_action(form), {"username": "bob@example.com"})
    assert "You should receive an email shortly" in html(sent)
    message, = mailbox.wait()
    assert message["Subject"] == "Reset password" and message["To"] == "bob@example.com"
    # The link in the same browser: a new password, then the application gets its code.
    update = follow_token(http, link_in(message))
    assert 'id="kc-passwd-update-form"' in html(update)
    refused = http.post(form_action(update), {"password-new": "short", "password-confirm": "other"})
    assert "Passwords" in html(refused)
    done = http.post(form_action(update), {"password-new": NEW_PASSWORD, "password-confirm": NEW_PASSWORD})
    assert redirect_query(done)["code"]
    bob.refresh_from_db()
    assert holds_password(bob, NEW_PASSWORD)
    types = set(Event.objects.filter(realm=realm, user_id=bob.pk).values_list("type", flat=True))
    assert {"SEND_RESET_PASSWORD", "RESET_PASSWORD", "LOGIN"} <= types


def test_unknown_and_known_users_get_the_same_answer(realm, web_app, bob, mailbox, send):
    realm.reset_password_allowed = True
    realm.save()
    answers = []
    for name in ("nobody@example.com", "bob"):
        http = HttpClient()
        form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
        resp = send(http.post, form_action(form), {"username": name})
        answers.append((resp.status_code, re.sub(r'(tab=|value=")[^"&]+', "", html(resp))))
    assert answers[0] == answers[1]
    assert len(mailbox.wait()) == 1 and mailbox.messages[0]["To"] == "bob@example.com"


def test_reset_link_is_single_use_and_expires(realm, web_app, bob, mailbox, send, time_machine):
    realm.reset_password_allowed = True
    realm.attributes = {"actionTokenGeneratedByUserLifespan.reset-credentials": "120"}
    realm.save()
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    send(http.post, form_action(form), {"username": "bob"})
    url = link_in(mailbox.wait()[0])
    assert "2 minutes" in mailbox.messages[0].get_body(preferencelist=("plain",)).get_content()
    assert 'id="kc-passwd-update-form"' in html(follow_token(HttpClient(), url))  # another browser
    page = HttpClient().get("/" + url.split("://", 1)[1].split("/", 1)[1])
    again = HttpClient().post(form_action(page))
    assert again.status_code == 400 and "Action expired." in html(again)
    # A second link, used after its 120 seconds.
    mailbox.clear()
    cache.delete(f"idp:reset-mail:{bob.pk}")  # the one-mail-a-minute limit, not under test here
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    send(http.post, form_action(form), {"username": "bob"})
    url = link_in(mailbox.wait()[0])
    time_machine.move_to(time.time() + 121)
    late = HttpClient().get("/" + url.split("://", 1)[1].split("/", 1)[1])
    assert late.status_code == 400 and "Action expired." in html(late)


def test_reset_mail_is_not_sent_twice_within_the_limit(realm, web_app, bob, mailbox, send):
    realm.reset_password_allowed = True
    realm.save()
    for _ in range(2):
        http = HttpClient()
        form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
        send(http.post, form_action(form), {"username": "bob"})
    mailbox.wait()
    assert mailbox.stays_at(1)


def test_locked_out_user_gets_no_reset_mail(realm, web_app, bob, mailbox, send, monkeypatch):
    from realms.signin import bruteforce

    realm.reset_password_allowed = True
    realm.save()
    monkeypatch.setattr(bruteforce, "is_locked", lambda realm, user: True)
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    resp = send(http.post, form_action(form), {"username": "bob"})
    assert "You should receive an email shortly" in html(resp)
    assert mailbox.stays_at(0)


def test_reset_otp_removes_the_device_and_asks_for_a_new_one(realm, web_app, bob, mailbox, send):
    from realms.credentials import get_credential_type
    from realms.credentials.otp import generate_secret

    get_credential_type(Credential.OTP).create(bob, generate_secret(), label="phone")
    realm.reset_password_allowed = True
    realm.save()
    http = HttpClient()
    form = http.get(link(http.get(AUTH, PARAMS), "kc-forgot-password"))
    send(http.post, form_action(form), {"username": "bob"})
    update = follow_token(http, link_in(mailbox.wait()[0]))
    after = http.post(form_action(update), {"password-new": NEW_PASSWORD, "password-confirm": NEW_PASSWORD})
    assert 'id="kc-totp-settings-form"' in html(after)  # CONFIGURE_TOTP before the application
    assert not bob.credentials.filter(type=Credential.OTP).exists()


# --- Registration ------------------------------------------------------------------------------

def register_page(http):
    return http.get(link(http.get(AUTH, PARAMS), "kc-register"))


FORM = {"username": "alice", "email": "alice@example.com", "firstName": "Alice", "lastName": "Liddell",
        "password": PASSWORD, "password-confirm": PASSWORD}


def test_register_then_signed_in(realm, web_app):
    realm.registration_allowed = True
    realm.save()
    http = HttpClient()
    page = register_page(http)
    assert 'id="kc-register-form"' in html(page)
    done = http.post(form_action(page), FORM)
    assert redirect_query(done)["code"]
    alice = User.objects.get(realm=realm, username="alice")
    assert alice.email == "alice@example.com" and holds_password(alice, PASSWORD) and not alice.email_verified
    assert alice.roles.filter(pk=realm.default_role_id).exists()
    assert Event.objects.filter(realm=realm, type="REGISTER", user_id=alice.pk).exists()


def test_registration_errors_next_to_their_fields(realm, web_app, bob):
    realm.registration_allowed = True
    realm.password_policy = "length(12) and digits(2)"
    realm.save()
    http = HttpClient()
    page = register_page(http)
    resp = http.post(form_action(page), {**FORM, "email": "bob@example.com", "firstName": "",
                                         "password": "short1", "password-confirm": "short1"})
    text = html(resp)
    assert resp.status_code == 400
    assert re.search(r'id="input-error-email"[^>]*>Email already exists.<', text)
    assert re.search(r'id="input-error-firstName"[^>]*>Please specify first name.<', text)
    assert re.search(r'id="input-error-password"[^>]*>Invalid password: minimum length 12.<', text)
    resp = http.post(form_action(page), {**FORM, "username": "bob"})
    assert re.search(r'id="input-error-username"[^>]*>Username already exists.<', html(resp))
    resp = http.post(form_action(page), {**FORM, "password-confirm": "x"})
    assert "Passwords don&#x27;t match." in html(resp) or "Passwords don't match." in html(resp)
    assert not User.objects.filter(realm=realm, username="alice").exists()


def test_email_as_username_and_duplicate_emails(realm, web_app, bob):
    realm.registration_allowed = realm.registration_email_as_username = True
    realm.save()
    http = HttpClient()
    page = register_page(http)
    assert 'name="username"' not in html(page)
    done = http.post(form_action(page), {**FORM, "username": "ignored"})
    assert redirect_query(done)["code"]
    assert User.objects.filter(realm=realm, username="alice@example.com").exists()
    realm.registration_email_as_username, realm.duplicate_emails_allowed = False, True
    realm.save()
    http = HttpClient()
    page = register_page(http)
    done = http.post(form_action(page), {**FORM, "username": "bob2", "email": "bob@example.com"})
    assert redirect_query(done)["code"]


def test_registration_refused_when_not_allowed(realm, web_app):
    http = HttpClient()
    url = form_action(http.get(AUTH, PARAMS)).replace("/authenticate?", "/registration?")
    assert http.get(url).status_code == 403


def test_terms_in_the_registration_form_when_enabled(realm, web_app, monkeypatch):
    from realms.signin import flows

    realm.registration_allowed = True
    realm.save()
    form_flow = flows.Flow("registration form", (
        flows.step("registration-user-creation", flows.REQUIRED),
        flows.step("registration-password-action", flows.REQUIRED),
        flows.step("registration-terms-and-conditions", flows.REQUIRED)))
    registration = flows.Flow("registration", (flows.Execution(flows.REQUIRED, "registration-page-form", form_flow),))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda r, ref: registration if ref == "registration" else None])
    http = HttpClient()
    page = register_page(http)
    resp = http.post(form_action(page), FORM)
    assert "You must agree to our terms and conditions." in html(resp)
    with CaptureQueriesContext(connection) as queries:
        done = http.post(form_action(page), {**FORM, "termsAccepted": "on"})
    assert redirect_query(done)["code"]
    accepted = User.objects.get(realm=realm, username="alice").attributes["terms_and_conditions"]
    assert abs(int(accepted[0]) - time.time()) < 60
    # The acceptance goes into the new user's row: the row is written once, never updated.
    assert not [q for q in queries.captured_queries if q["sql"].startswith('UPDATE "realms_user"')]


def test_recaptcha_cannot_be_honoured_so_registration_is_refused(realm, web_app, monkeypatch):
    from realms.signin import flows

    realm.registration_allowed = True
    realm.save()
    form_flow = flows.Flow("registration form", (
        flows.step("registration-user-creation", flows.REQUIRED),
        flows.step("registration-recaptcha-action", flows.REQUIRED)))
    registration = flows.Flow("registration", (flows.Execution(flows.REQUIRED, "registration-page-form", form_flow),))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda r, ref: registration if ref == "registration" else None])
    http = HttpClient()
    resp = register_page(http)
    assert resp.status_code == 501 and 'id="kc-register-form"' not in html(resp)


def test_register_with_verify_email_then_the_link_signs_in(realm, web_app, mailbox, send):
    realm.registration_allowed = realm.verify_email = True
    realm.save()
    http = HttpClient()
    page = register_page(http)
    verify = send(http.post, form_action(page), FORM)
    assert 'id="kc-verify-email-form"' in html(verify) and "alice@example.com" in html(verify)
    message, = mailbox.wait()
    assert message["Subject"] == "Verify email"
    resend = send(http.post, form_action(verify), {"resend": "true"})
    assert 'id="kc-verify-email-form"' in html(resend)
    mailbox.wait(2)
    done = follow_token(http, link_in(mailbox.messages[1]))
    assert redirect_query(done)["code"]
    assert User.objects.get(realm=realm, username="alice").email_verified


def test_import_says_recaptcha_cannot_be_honoured(db, fresh_caches):
    from realms.representation import import_realm

    result = import_realm({"realm": "captcha", "registrationAllowed": True, "authenticationFlows": [
        {"alias": "registration form", "authenticationExecutions": [
            {"authenticator": "registration-user-creation", "requirement": "REQUIRED"},
            {"authenticator": "registration-recaptcha-action", "requirement": "REQUIRED"}]}]})
    assert any("registration-recaptcha-action is enabled but reCAPTCHA is not supported" in w
               for w in result.warnings)


def test_oidc_registrations_endpoint_opens_on_the_registration_page(realm, web_app):
    url = "/realms/acme/protocol/openid-connect/registrations"
    assert HttpClient().get(url, PARAMS).status_code == 403
    realm.registration_allowed = True
    realm.save()
    http = HttpClient()
    page = http.get(url, PARAMS)
    assert 'id="kc-register-form"' in html(page)
    assert redirect_query(http.post(form_action(page), FORM))["state"] == ["st"]
