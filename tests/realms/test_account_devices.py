"""The account console's device activity as a person reads it: when each session was last used as a
date and time in the page's language (never epoch seconds), and the applications by their names
(Keycloak's built-in clients are named ``${client_account}``: the theme's text for that key), as
on the applications page and the consent page. The Account REST API keeps Keycloak's raw values."""
import re
from datetime import UTC, datetime

import pytest
from django.test import Client as HttpClient

from realms.models import Client, UserSession
from realms.sso.sessions import create_user_session, get_or_create_client_session
from tests.realms.test_signin import PASSWORD, redirect_query, sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
DEVICES = "/realms/acme/account/account-security/device-activity"
LAST_USED = datetime(2026, 3, 5, 7, 4, 9, tzinfo=UTC)


@pytest.fixture
def other_session(realm, bob):
    """A second session of bob's, last used on 5 March 2026 at 07:04 UTC, in the account console."""
    realm.sso_session_idle_timeout = realm.sso_session_max_lifespan = 10 * 365 * 86400  # still live today
    realm.internationalization_enabled, realm.supported_locales = True, ["en", "de"]
    realm.save()
    session = create_user_session(realm, bob, ip_address="192.0.2.7")
    get_or_create_client_session(session, Client.objects.get(realm=realm, client_id="account"))
    UserSession.objects.filter(pk=session.pk).update(started=LAST_USED, last_refresh=LAST_USED)
    return session


def signed_in(web_app):
    http = HttpClient()
    redirect_query(sign_in(http, "bob", PASSWORD))
    return http


def session_block(page, ip):
    text = page.content.decode()
    start = text.index(ip)
    return text[text.rindex('<div class="session"', 0, start):text.index("</div>", start)]


def test_last_access_is_a_date_and_the_application_its_name(web_app, other_session):
    page = signed_in(web_app).get(DEVICES)
    assert page.status_code == 200
    block = session_block(page, "192.0.2.7")
    assert '<time datetime="2026-03-05T07:04:09+00:00">5 Mar 2026, 07:04 UTC</time>' in block
    assert "<dd>Account</dd>" in block
    text = re.sub(r"<[^>]+>", " ", page.content.decode())
    assert "${" not in text and not re.search(r"\b1\d{9}\b", text)  # no message key, no epoch number


def test_in_german_the_month_and_the_application_are_german(web_app, other_session, bob):
    bob.attributes = {"locale": ["de"]}
    bob.save()
    page = signed_in(web_app).get(DEVICES)
    block = session_block(page, "192.0.2.7")
    assert "Letzter Zugriff" in block and ">5 Mär 2026, 07:04 UTC</time>" in block
    assert "<dd>Clientkonto</dd>" in block


def test_the_account_rest_api_keeps_keycloaks_values(web_app, other_session, realm):
    """The Account REST API answers what Keycloak's does: epoch seconds and the client's raw name,
    which the account UI resolves."""
    from realms.account.api import device_reps, live_sessions

    live, clients = live_sessions(realm, other_session.user)
    (rep,) = [s for d in device_reps(live, "", clients) for s in d["sessions"] if s["ipAddress"] == "192.0.2.7"]
    assert rep["lastAccess"] == int(LAST_USED.timestamp())
    assert rep["clients"] == [{"clientId": "account", "clientName": "${client_account}"}]


def test_applications_and_consent_show_the_clients_name(web_app, realm, bob):
    web_app.name = "${client_account}"
    web_app.consent_required = True
    web_app.save()
    http = HttpClient()
    consent = sign_in(http, "bob", PASSWORD)
    text = consent.content.decode()
    assert consent.status_code == 200 and 'id="consent-intro"' in text, text[:500]
    assert "Account" in text.split('id="consent-intro"')[1].split("</p>")[0] and "${" not in text
    action = re.search(r'<form method="post" action="([^"]+)"', text).group(1).replace("&amp;", "&")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text).group(1)
    assert http.post(action, {"consent": "accept", "csrfmiddlewaretoken": csrf}).status_code == 302
    page = http.get("/realms/acme/account/applications").content.decode()
    names = re.findall(r'<h2 id="app-\d+">([^<]*)</h2>', page)
    assert "Account" in names and not any("${" in name for name in names), names
