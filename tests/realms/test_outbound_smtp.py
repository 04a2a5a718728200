"""A realm's SMTP server goes through the outbound address policy (``outbound.check_host``, decision
0118): a loopback, private or metadata address is refused under production's defaults, at the
Admin API's testSMTPConnection (Keycloak's error shape) and when a message is sent (no retry);
allowed when ``IDP_OUTBOUND_ALLOWED_NETWORKS`` covers it, the connection then going to the checked
address while TLS verifies the configured name. Real aiosmtpd servers on loopback."""
import smtplib

import pytest

from realms.http import email, outbound
from realms.tasks import send_email
from tests.selfservice.conftest import mailbox, realm, smtp_server, smtp_settings
from tests.selfservice.test_email import admin_api, tls_servers

pytestmark = pytest.mark.django_db


def _resolving(monkeypatch, answers):
    """DNS as the test wants it: ``answers`` maps a name to its addresses."""
    real = outbound.resolve
    monkeypatch.setattr(outbound, "resolve", lambda host, port: answers[host] if host in answers else real(host, port))


def test_check_host_is_the_one_policy(settings, monkeypatch):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    _resolving(monkeypatch, {"mail.acme.test": ["10.0.0.5"], "mixed.acme.test": ["93.184.216.34", "10.0.0.7"],
                             "public.acme.test": ["93.184.216.34"]})
    for host in ("127.0.0.1", "mail.acme.test", "mixed.acme.test", "169.254.169.254", "::1"):
        with pytest.raises(outbound.TargetRefused, match="non-public"):
            outbound.check_host(host, 25)
    assert outbound.check_host("public.acme.test", 25) == ["93.184.216.34"]
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["10.0.0.0/24"]
    assert outbound.check_host("mail.acme.test", 25) == ["10.0.0.5"]
    with pytest.raises(outbound.TargetRefused, match="cannot resolve"):
        outbound.check_host("no-such-host.invalid", 25)


def test_test_smtp_connection_refuses_a_loopback_server_under_production_defaults(realm, admin_api, mailbox,
                                                                                  smtp_settings, settings,
                                                                                  monkeypatch):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []  # production
    resp = admin_api("post", "acme/testSMTPConnection", smtp_settings)
    assert resp.status_code == 500
    assert resp.json() == {"errorMessage": "Failed to send email: SMTP server refused by the outbound policy: "
                                           "127.0.0.1 resolves to a non-public address"}
    # A name resolving to the cloud metadata address: the classic probe of an internal port.
    _resolving(monkeypatch, {"metadata.acme.test": ["169.254.169.254"]})
    resp = admin_api("post", "acme/testSMTPConnection", {**smtp_settings, "host": "metadata.acme.test", "port": "80"})
    assert resp.status_code == 500 and "outbound policy" in resp.json()["errorMessage"]
    assert mailbox.messages == []
    # Allowed by configuration: the same settings send.
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert admin_api("post", "acme/testSMTPConnection", smtp_settings).status_code == 204
    assert mailbox.wait()[0]["Subject"] == "[KEYCLOAK] - SMTP test message"


def test_a_real_send_goes_to_the_checked_address(realm, mailbox, smtp_settings, settings, monkeypatch):
    # The name exists only in the policy's answer: the connection can only have gone to that address.
    _resolving(monkeypatch, {"mail.acme.test": ["127.0.0.1"]})
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    email.send_now({**smtp_settings, "host": "mail.acme.test"}, "bob@example.com", "via policy", "t", "")
    assert mailbox.wait()[0]["Subject"] == "via policy"


def test_tls_verifies_the_configured_name_not_the_address(realm, admin_api, tls_servers, settings, monkeypatch):
    implicit, starttls, recorder = tls_servers  # certificate for "localhost" and 127.0.0.1
    _resolving(monkeypatch, {"localhost": ["127.0.0.1"], "mail.acme.test": ["127.0.0.1"]})
    base = {"from": "idp@acme.example", "port": str(implicit), "ssl": "true"}
    assert admin_api("post", "acme/testSMTPConnection", {**base, "host": "localhost"}).status_code == 204
    # Same checked address, a name the certificate does not carry: refused by the TLS check.
    assert admin_api("post", "acme/testSMTPConnection", {**base, "host": "mail.acme.test"}).status_code == 500
    starttls_body = {"from": "idp@acme.example", "port": str(starttls), "starttls": "true", "auth": "true",
                     "user": "mailer", "password": "smtp-Secret-7"}
    assert admin_api("post", "acme/testSMTPConnection", {**starttls_body, "host": "localhost"}).status_code == 204
    assert admin_api("post", "acme/testSMTPConnection",
                     {**starttls_body, "host": "mail.acme.test"}).status_code == 500
    assert [encrypted for encrypted, _, _ in recorder.sessions] == [True, True]


def test_a_refused_server_is_not_retried(realm, mailbox, settings, monkeypatch):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    checks, connects = [], []
    check_host = outbound.check_host
    monkeypatch.setattr(outbound, "check_host", lambda *args, **kw: checks.append(args) or check_host(*args, **kw))
    monkeypatch.setattr(smtplib.socket, "create_connection", lambda *args, **kw: connects.append(args))
    result = send_email.apply(args=(realm.pk, "bob@example.com", "s", "t", ""))
    assert result.state == "FAILURE" and isinstance(result.result, outbound.TargetRefused)
    assert not isinstance(result.result, email.TRANSIENT)
    # Tried once (eager apply would have run every retry at once), and no socket was opened.
    assert len(checks) == 1 and connects == []
