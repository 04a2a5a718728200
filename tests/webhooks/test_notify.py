"""Disabling an endpoint tells the realm's admins by email when the realm has an SMTP server
(a real SMTP conversation with a small sink on loopback)."""
import socketserver
import threading

import pytest

from realms.models import Realm, Role, User
from webhooks import delivery, services
from webhooks.models import Delivery
from webhooks.outbox import publish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


class _Sink(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"220 sink\r\n")
        data = False
        while line := self.rfile.readline():
            if data:
                if line == b".\r\n":
                    data = False
                    self.wfile.write(b"250 ok\r\n")
                else:
                    self.server.mail.append(line.decode())
                continue
            cmd = line[:4].upper()
            if cmd == b"DATA":
                data = True
                self.wfile.write(b"354 go\r\n")
            elif cmd == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            elif cmd == b"RCPT":
                self.server.rcpt.append(line.decode().strip().split(":", 1)[1])
                self.wfile.write(b"250 ok\r\n")
            else:
                self.wfile.write(b"250 ok\r\n")


@pytest.fixture
def smtp():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Sink)
    server.daemon_threads = True
    server.mail, server.rcpt = [], []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _disable_by_410(realm, smtp_host, smtp_port, receiver_server, monkeypatch, commit_callbacks):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    realm.smtp_server = {"host": smtp_host, "port": str(smtp_port), "from": "idp@example.org"}
    realm.save()
    master = Realm.objects.get(name="master")
    admin = User.objects.create(realm=master, username="ops", email="ops@example.org")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    User.objects.create(realm=master, username="nobody", email="nobody@example.org")
    receiver_server.script = [(410, {}, b"")]
    endpoint, _ = services.create_endpoint(realm, receiver_server.url(), [])
    message = publish(realm, "auth.login", {}, endpoints=[endpoint])
    with commit_callbacks(execute=True):
        delivery.attempt(Delivery.objects.get(message=message).pk)
    return endpoint


def test_410_emails_the_admins(realm, smtp, receiver_server, monkeypatch, django_capture_on_commit_callbacks):
    endpoint = _disable_by_410(realm, "127.0.0.1", smtp.server_address[1], receiver_server, monkeypatch,
                               django_capture_on_commit_callbacks)
    assert smtp.rcpt == ["<ops@example.org>"]
    text = "".join(smtp.mail)
    assert "Webhook endpoint disabled in realm wh-realm" in text and endpoint.url in text


def test_the_admins_email_goes_through_the_outbound_policy(realm, receiver_server, monkeypatch, caplog,
                                                          django_capture_on_commit_callbacks):
    """A realm's SMTP server the policy refuses (a cloud metadata address) is never contacted."""
    with caplog.at_level("WARNING", logger="idp.webhooks"):
        _disable_by_410(realm, "169.254.169.254", 25, receiver_server, monkeypatch, django_capture_on_commit_callbacks)
    assert "could not email the admins of realm wh-realm: 169.254.169.254 resolves to a non-public address" in caplog.text
