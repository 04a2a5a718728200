"""A real SMTP server (aiosmtpd on loopback), started once per test run, and the mailbox of what
it received; a realm "acme" sending through it, with a client and a user."""
import email
import email.policy
import re
import socket
import threading
import time

import pytest
from aiosmtpd.controller import Controller

from realms.models import Realm, Role
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.realms.test_admin_rest_api import PASSWORD as ADMIN_PASSWORD
from tests.realms.test_admin_rest_api import Api, token


class Mailbox:
    def __init__(self):
        self.messages = []
        self.envelopes = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        with self._lock:
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"

    def clear(self):
        with self._lock:
            self.messages.clear()
            self.envelopes.clear()

    def wait(self, count=1, timeout=10.0):
        """The first ``count`` messages, once they have arrived (e-mail leaves from a thread)."""
        deadline = time.monotonic() + timeout
        while len(self.messages) < count:
            assert time.monotonic() < deadline, f"{len(self.messages)} of {count} e-mails arrived"
            time.sleep(0.02)
        return self.messages[:count]

    def stays_at(self, count, seconds=0.5):
        """No more than ``count`` messages arrive within ``seconds`` (a bounded wait for an absence)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert len(self.messages) <= count, [m["Subject"] for m in self.messages]
            time.sleep(0.02)
        return len(self.messages) == count


def text_of(message):
    return message.get_body(preferencelist=("plain",)).get_content()


def link_in(message):
    return re.search(r"(https?://\S+/login-actions/action-token\?\S+)", text_of(message)).group(1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def smtp_server():
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=_free_port())
    controller.start()
    yield controller, box
    controller.stop()


@pytest.fixture
def mailbox(smtp_server):
    _, box = smtp_server
    box.clear()
    yield box
    box.clear()


@pytest.fixture
def smtp_settings(smtp_server, settings):
    controller, _ = smtp_server
    # The server is on loopback: production's outbound policy refuses it unless allowed (decision 0118).
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    return {"host": "127.0.0.1", "port": str(controller.port), "from": "idp@acme.example",
            "fromDisplayName": "ACME Sign-in"}


@pytest.fixture
def realm(db, fresh_caches, smtp_settings):
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.smtp_server = smtp_settings
    realm.save()
    return realm


@pytest.fixture
def web_app(realm):
    return make_client(realm, "web-app", redirect_uris=["https://app.example/cb"])


@pytest.fixture
def bob(realm):
    return create_user(realm, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob",
                       last_name="Builder")


@pytest.fixture
def send(django_capture_on_commit_callbacks):
    """Run a request and what it hands over after its commit (the e-mail)."""
    def run(call, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)
    return run


@pytest.fixture
def admin_api(realm):
    """The Admin API as a master admin."""
    master = Realm.objects.get(name="master")
    user = create_user(master, "api-root", password=ADMIN_PASSWORD)
    user.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return Api(token("master", "api-root"))
