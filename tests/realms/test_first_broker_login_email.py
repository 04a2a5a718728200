"""First broker login's ``idp-email-verification`` (Keycloak's IdpEmailVerificationAuthenticator
and IdpVerifyAccountLinkActionToken) against a real SMTP server: the existing account's owner
confirms the link by following the e-mailed link, in the browser that signed in or in another;
nothing links before, a page reload sends nothing new, "re-send" does, and a used link is spent."""
import re

import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.brokering.linking import VERIFY_LINK
from realms.http import action_tokens
from realms.models import Event, FederatedIdentity, User
from realms.sso import auth_sessions
from realms.users.accounts import create_user
from tests.realms.test_first_broker_login import answered, identity, idp  # noqa: F401 (fixture)
from tests.selfservice.conftest import link_in, mailbox, send, smtp_server, smtp_settings, text_of  # noqa: F401
from tests.selfservice.test_reset_and_registration import follow_token, form_action, html, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def smtp_realm(realm, smtp_settings):
    realm.smtp_server = smtp_settings
    realm.save()
    return realm


def _email_page(http, realm, idp, send):
    page = answered(http, realm, idp, identity(username="bobby", email="bob@example.com"))
    assert 'id="linkAccount"' in html(page)
    return send(http.post, form_action(page), {"submitAction": "linkAccount"})


def test_the_link_followed_in_the_same_browser_links_and_signs_in(smtp_realm, web_app, idp, bob, mailbox, send):
    http = HttpClient()
    page = _email_page(http, smtp_realm, idp, send)
    assert page.status_code == 200 and 'id="instruction1"' in html(page)
    assert "An email with instructions to link Upstream ID account bobby with your acme account" in html(page)
    (message,) = mailbox.wait(1)
    assert message["To"] == "bob@example.com" and message["Subject"] == "Link Upstream ID"
    assert 'Someone wants to link your "acme" account with "Upstream ID" account of user bobby.' in text_of(message)
    assert not FederatedIdentity.objects.exists()
    # A reload sends nothing new; "continue" before the link was followed links nothing.
    reload = send(http.post, form_action(page), {"continue": "true"})
    assert 'id="instruction1"' in html(reload) and mailbox.stays_at(1) and not FederatedIdentity.objects.exists()
    done = follow_token(http, link_in(message), send)
    assert "code" in redirect_query(done)
    link = FederatedIdentity.objects.get()
    assert (link.user_id, link.user_name) == (bob.pk, "bobby")
    assert User.objects.get(pk=bob.pk).email_verified is True
    assert Event.objects.filter(realm=smtp_realm, type="SEND_IDENTITY_PROVIDER_LINK", user_id=bob.pk).exists()
    assert Event.objects.filter(realm=smtp_realm, type="IDENTITY_PROVIDER_LINK_ACCOUNT", user_id=bob.pk).exists()
    # The link is used once.
    again = follow_token(HttpClient(), link_in(message))
    assert again.status_code == 400 and not User.objects.filter(username="bobby").exists()


def test_the_link_followed_in_another_browser_lets_the_first_continue(smtp_realm, web_app, idp, bob, mailbox, send):
    http = HttpClient()
    page = _email_page(http, smtp_realm, idp, send)
    (message,) = mailbox.wait(1)
    elsewhere = follow_token(HttpClient(), link_in(message), send)
    assert elsewhere.status_code == 200
    assert "You successfully verified your email. Please go back to your original browser" in html(elsewhere)
    assert not FederatedIdentity.objects.exists()
    done = send(http.post, form_action(page), {"continue": "true"})
    assert "code" in redirect_query(done)
    assert FederatedIdentity.objects.get().user_id == bob.pk


def test_resend_sends_the_link_again(smtp_realm, web_app, idp, bob, mailbox, send):
    http = HttpClient()
    page = _email_page(http, smtp_realm, idp, send)
    mailbox.wait(1)
    again = send(http.post, form_action(page), {"resend": "true"})
    assert 'id="instruction1"' in html(again)
    assert len(mailbox.wait(2)) == 2


def test_without_smtp_the_password_confirms_instead(realm, web_app, idp, bob, mailbox):
    http = HttpClient()
    page = answered(http, realm, idp, identity(username="bobby", email="bob@example.com"))
    login = http.post(form_action(page), {"submitAction": "linkAccount"})
    assert "Authenticate to link your account with Upstream ID" in html(login) and mailbox.stays_at(0)


def test_a_changed_email_on_review_skips_the_email(smtp_realm, web_app, idp, bob, mailbox, send):
    """The review changed the e-mail: a link to the existing account's address proves nothing
    about it (Keycloak passes the step over); the password confirms instead."""
    http = HttpClient()
    page = answered(http, smtp_realm, idp, identity(username="bob", email="bob@example.com", last_name=""))
    confirm = http.post(form_action(page), {"username": "bob", "email": "bobby@example.org", "firstName": "B",
                                            "lastName": "B"})
    assert "User with username bob already exists." in html(confirm)
    login = send(http.post, form_action(confirm), {"submitAction": "linkAccount"})
    assert "Authenticate to link your account" in html(login) and mailbox.stays_at(0)


def test_a_link_for_an_address_the_account_no_longer_has_is_refused(smtp_realm, web_app, idp, bob, mailbox, send):
    http = HttpClient()
    _email_page(http, smtp_realm, idp, send)
    (message,) = mailbox.wait(1)
    path = "/" + link_in(message).split("://", 1)[1].split("/", 1)[1]
    key = re.search(r"key=([^&]+)", path).group(1)
    head, payload, signature = key.split(".")
    tampered = http.get(path.replace(key, f"{head}.{payload}.{signature[::-1]}"))
    assert tampered.status_code == 400 and "id=\"kc-proceed\"" not in html(tampered)
    User.objects.filter(pk=bob.pk).update(email="bob@elsewhere.example")
    refused = http.get(path)
    assert refused.status_code == 400 and not FederatedIdentity.objects.exists()


def test_a_link_for_another_account_does_not_confirm_this_sign_in(smtp_realm, web_app, idp, bob, mailbox, send):
    """A valid link of another account opened in the browser of this sign-in proves nothing
    about bob's account: the sign-in waits on, nothing is linked."""
    carol = create_user(smtp_realm, "carol", password="x-password-1", email="carol@example.com")
    http = HttpClient()
    page = _email_page(http, smtp_realm, idp, send)
    tab = re.search(r"tab=([^&\"]+)", form_action(page)).group(1)
    root = http.cookies[auth_sessions.COOKIE].value
    request = RequestFactory().get("/")
    token = action_tokens.create(smtp_realm, carol, VERIFY_LINK, lifespan=300, client_id="web-app", request=request,
                                 eml=carol.email, idpu="bobby", idpa=idp.alias, idpuid="sub-1", oasid=f"{root}.{tab}")
    shown = follow_token(http, action_tokens.link(smtp_realm, token, request, client_id="web-app"), send)
    assert shown.status_code == 200 and "go back to your original browser" in html(shown)
    waiting = send(http.post, form_action(page), {"continue": "true"})
    assert 'id="instruction1"' in html(waiting) and not FederatedIdentity.objects.exists()
