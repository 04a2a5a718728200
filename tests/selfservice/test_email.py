"""The realm's SMTP settings and e-mail: the password encrypted at rest, Keycloak's
testSMTPConnection, messages built from the realm's settings and e-mail theme, and the Celery
task that retries while the SMTP server is down."""
import smtplib

import pytest
from django.db import connection

from realms.http import email
from realms.models import Realm, Role
from realms.tasks import send_email
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import PASSWORD, Api, token

from .conftest import text_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(realm):
    master = Realm.objects.get(name="master")
    user = create_user(master, "api-root", password=PASSWORD, email="root@ops.example")
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return Api(token("master", "api-root"))


def test_smtp_password_is_encrypted_at_rest_and_read_back(realm):
    realm.smtp_server = {**realm.smtp_server, "auth": "true", "user": "mailer", "password": "smtp-Secret-9"}
    realm.save()
    with connection.cursor() as cursor:
        cursor.execute("SELECT CAST(smtp_server AS text) FROM realms_realm WHERE id = %s", [realm.pk])
        raw = cursor.fetchone()[0]
    assert "smtp-Secret-9" not in raw and "fernet:" in raw
    assert Realm.objects.get(pk=realm.pk).smtp_server["password"] == "smtp-Secret-9"


def test_a_password_stored_before_encryption_is_still_read(realm):
    with connection.cursor() as cursor:
        cursor.execute("""UPDATE realms_realm SET smtp_server = '{"host": "h", "password": "plain-1"}' WHERE id = %s""",
                       [realm.pk])
    assert Realm.objects.get(pk=realm.pk).smtp_server["password"] == "plain-1"


def test_test_smtp_connection_sends_to_the_calling_admin(realm, admin_api, mailbox, smtp_settings):
    resp = admin_api("post", "acme/testSMTPConnection", {**smtp_settings, "replyTo": "help@acme.example",
                                                         "envelopeFrom": "bounces@acme.example"})
    assert resp.status_code == 204, resp.content
    message, = mailbox.wait()
    assert message["Subject"] == "[KEYCLOAK] - SMTP test message"
    assert message["To"] == "root@ops.example"
    assert message["From"] == "ACME Sign-in <idp@acme.example>" and message["Reply-To"] == "help@acme.example"
    assert mailbox.envelopes[0][0] == "bounces@acme.example"  # envelopeFrom is the SMTP sender
    assert text_of(message).strip() == "This is a test message"


def test_test_smtp_connection_failures_are_keycloaks(realm, admin_api, mailbox, smtp_settings):
    dead = {**smtp_settings, "port": "1"}  # nothing listens there
    resp = admin_api("post", "acme/testSMTPConnection", dead)
    assert resp.status_code == 500 and resp.json() == {"errorMessage": "Failed to send email"}
    admin = Realm.objects.get(name="master").user_set.get(username="api-root")
    admin.email = ""
    admin.save()
    resp = admin_api("post", "acme/testSMTPConnection", smtp_settings)
    assert resp.status_code == 500 and resp.json() == {"errorMessage": "Logged in user does not have an e-mail."}


def test_test_smtp_connection_with_the_mask_uses_the_stored_password(realm, admin_api, monkeypatch, smtp_settings):
    realm.smtp_server = {**smtp_settings, "auth": "true", "user": "mailer", "password": "stored-Secret-1"}
    realm.save()
    used = {}
    monkeypatch.setattr(email, "send_now", lambda smtp, *args: used.update(smtp))
    resp = admin_api("post", "acme/testSMTPConnection", {**smtp_settings, "auth": "true", "user": "mailer",
                                                         "password": "**********"})
    assert resp.status_code == 204
    assert used["password"] == "stored-Secret-1"


def test_test_smtp_connection_needs_manage_realm(realm, mailbox, smtp_settings):
    from tests.realms.test_admin_rest_api import realm_admin

    viewer = realm_admin(realm, "viewer", "view-realm")
    assert viewer("post", "acme/testSMTPConnection", smtp_settings).status_code == 403


def test_subject_and_body_come_from_the_realm_texts(realm):
    realm.localization_texts = {"en": {"emailTestSubject": "Hello from ACME"}}
    realm.save()
    subject, text_body, html_body = email.render(realm, "en", "email-test", "emailTestSubject")
    assert subject == "Hello from ACME" and "This is a test message" in text_body
    assert "<p>This is a test message</p>" in html_body


def test_expiration_is_written_as_keycloak_does(realm):
    assert email.expiration_text(realm, "en", 300) == "5 minutes"
    assert email.expiration_text(realm, "en", 43200) == "12 hours"
    assert email.expiration_text(realm, "en", 86400) == "1 day"
    assert email.expiration_text(realm, "en", 90) == "90 seconds"


def test_the_celery_task_retries_while_the_server_is_down(realm, monkeypatch, mailbox, smtp_server):
    calls = []

    def down(*args):
        calls.append(args)
        raise smtplib.SMTPServerDisconnected("gone")

    monkeypatch.setattr(email, "send_now", down)
    result = send_email.apply(args=(realm.pk, "bob@example.com", "s", "t", "<p>t</p>"))
    assert len(calls) == send_email.max_retries + 1  # eager apply runs every retry at once
    assert isinstance(result.result, smtplib.SMTPServerDisconnected)
    monkeypatch.undo()
    send_email.apply(args=(realm.pk, "bob@example.com", "subject-2", "t", ""))
    assert mailbox.wait()[0]["Subject"] == "subject-2"


def test_production_hands_the_message_to_celery_without_the_password(realm, bob_user, settings, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    from idp.celery import app

    realm.smtp_server = {**realm.smtp_server, "auth": "true", "user": "u", "password": "never-in-the-broker"}
    realm.save()
    settings.IDP_EMAIL_IN_PROCESS = False
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        email.send_to_user(realm, bob_user, "email-test", "emailTestSubject")
    (name, args), = sent
    assert name == "realms.send_email" == send_email.name and name in app.tasks
    assert args[:3] == (realm.pk, "bob@example.com", "[KEYCLOAK] - SMTP test message")
    assert "never-in-the-broker" not in repr(args)


@pytest.fixture
def bob_user(realm):
    return create_user(realm, "bob", email="bob@example.com")


def test_the_consoles_test_connection_button_sends_through_the_saved_settings(realm, mailbox, client):
    from django.urls import reverse

    master = Realm.objects.get(name="master")
    admin = create_user(master, "console-root", password=PASSWORD, email="console@ops.example")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    client.force_login(admin)
    url = reverse("admin:realms_realm_smtp_test", args=[realm.pk])
    assert client.get(url).status_code == 405
    client.post(url)
    message, = mailbox.wait()
    assert message["To"] == "console@ops.example" and message["Subject"] == "[KEYCLOAK] - SMTP test message"
    realm.smtp_server = {**realm.smtp_server, "port": "1"}  # nothing listens there
    realm.save()
    page = client.post(url, follow=True)
    assert "Failed to send email" in page.content.decode()


# --- TLS, StartTLS and authentication against real servers ----------------------------------------

class _Recorder:
    """What each delivery looked like to the server: encrypted, authenticated, the message."""

    def __init__(self):
        self.sessions = []

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        encrypted = server.transport.get_extra_info("ssl_object") is not None
        self.sessions.append((encrypted, bool(session.authenticated), envelope.content))
        return "250 OK"


@pytest.fixture
def tls_servers(tmp_path, monkeypatch):
    """Two SMTP servers on loopback with a certificate of a throw-away CA the process trusts:
    implicit TLS (Keycloak's "Enable SSL"), and plain with STARTTLS and AUTH required."""
    import ssl

    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    from tests.servers import make_tls_files

    from .conftest import _free_port

    ca, cert, key = make_tls_files(tmp_path, names=("localhost",), ips=("127.0.0.1",))
    monkeypatch.setenv("SSL_CERT_FILE", ca)  # read by ssl.create_default_context(), as Django's backend uses
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.maximum_version = ssl.TLSVersion.TLSv1_2  # aiosmtpd's STARTTLS answers QUIT late over TLS 1.3

    def password_check(server, session, envelope, mechanism, auth_data):
        return AuthResult(success=(auth_data.login, auth_data.password) == (b"mailer", b"smtp-Secret-7"))

    recorder = _Recorder()
    implicit = Controller(recorder, hostname="127.0.0.1", port=_free_port(), ssl_context=context)
    starttls = Controller(recorder, hostname="127.0.0.1", port=_free_port(), tls_context=context,
                          require_starttls=True, auth_required=True, authenticator=password_check)
    implicit.start()
    starttls.start()
    yield implicit.port, starttls.port, recorder
    implicit.stop()
    starttls.stop()


def test_smtp_over_tls_starttls_with_authentication(realm, admin_api, tls_servers, monkeypatch):
    implicit, starttls, recorder = tls_servers
    base = {"host": "127.0.0.1", "from": "idp@acme.example"}

    def test_connection(**smtp):
        return admin_api("post", "acme/testSMTPConnection", {**base, **smtp}).status_code

    assert test_connection(port=str(implicit), ssl="true") == 204
    assert test_connection(port=str(starttls), starttls="true", auth="true", user="mailer",
                           password="smtp-Secret-7") == 204
    assert [(encrypted, authenticated) for encrypted, authenticated, _ in recorder.sessions] == [
        (True, False), (True, True)]
    # Each setting does something: without it nothing is sent (the server checks the password).
    assert test_connection(port=str(starttls), auth="true", user="mailer", password="smtp-Secret-7") == 500
    assert test_connection(port=str(starttls), starttls="true") == 500
    # The server's certificate is checked: one of a CA the machine does not trust is refused.
    monkeypatch.delenv("SSL_CERT_FILE")
    assert test_connection(port=str(implicit), ssl="true") == 500
    assert len(recorder.sessions) == 2
