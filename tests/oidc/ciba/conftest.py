"""Fixtures for the CIBA tests: a realm whose clients may use CIBA, and real loopback HTTP
servers as the authentication channel and as a client's notification endpoint (the server's
calls to them go through realms.http.outbound under the ``outbound_loopback`` rules)."""
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client as HttpClient

from realms.models import Realm, User
from realms.representation import import_realm
from tests.oidc.endpoints.conftest import basic

SECRET = "ciba-secret-" + "x" * 20


class Recorder:
    """A loopback HTTP server that records each POST (path, headers, JSON body) and answers
    ``status``; ``then(record)`` runs after the answer is sent (a channel calling back)."""

    def __init__(self, status=201):
        self.status = status
        self.requests = []
        self.then = None
        self.arrived = threading.Event()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                record = {"path": self.path, "headers": dict(self.headers), "json": json.loads(raw or b"null")}
                recorder.requests.append(record)
                self.send_response(recorder.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                recorder.arrived.set()
                if recorder.then is not None:
                    threading.Thread(target=recorder.then, args=(record,), daemon=True).start()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def last(self):
        return self.requests[-1]

    def bearer(self, index=-1):
        return self.requests[index]["headers"]["Authorization"].split(" ", 1)[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def channel(settings, outbound_loopback):
    recorder = Recorder()
    settings.IDP_CIBA_HTTP_AUTH_CHANNEL_URI = recorder.url + "ciba/authenticate"
    yield recorder
    recorder.close()


@pytest.fixture
def notification_server(outbound_loopback):
    recorder = Recorder(status=204)
    yield recorder
    recorder.close()


def representation(name, *, notification_endpoint="http://127.0.0.1:9/none", attributes=None):
    ciba = {"oidc.ciba.grant.enabled": "true"}
    return {
        "realm": name, "enabled": True, "eventsEnabled": True, "attributes": {"cibaInterval": "0", **(attributes or {})},
        "clients": [
            {"clientId": "ciba-app", "secret": SECRET, "attributes": ciba},
            {"clientId": "other-app", "secret": SECRET, "attributes": ciba},
            {"clientId": "ciba-ping", "secret": SECRET, "attributes": {
                **ciba, "ciba.backchannel.token.delivery.mode": "ping",
                "ciba.backchannel.client.notification.endpoint": notification_endpoint}},
            {"clientId": "plain-app", "secret": SECRET},
            {"clientId": "spa", "publicClient": True, "attributes": ciba},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org", "emailVerified": True,
             "firstName": "Alice", "lastName": "Liddell", "realmRoles": [f"default-roles-{name}"]},
            {"username": "bob", "enabled": False, "email": "bob@example.org"},
        ],
    }


@pytest.fixture
def realm(db, fresh_caches):
    return import_realm(representation("c" + uuid.uuid4().hex[:10])).realm


@pytest.fixture
def http():
    return HttpClient()


@pytest.fixture
def alice(realm):
    return User.objects.get(realm=realm, username="alice")


def set_realm_attributes(realm, **attributes):
    from realms.data import realm_cache

    realm = Realm.objects.get(pk=realm.pk)
    realm.attributes = {**(realm.attributes or {}), **attributes}
    realm.save()
    realm_cache.clear()


def set_client_attributes(realm, client_id, **attributes):
    from realms.data import realm_cache
    from realms.models import Client

    client = Client.objects.get(realm=realm, client_id=client_id)
    client.attributes = {**client.attributes, **attributes}
    client.save()
    realm_cache.clear()


def auth_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/ext/ciba/auth"


def callback_url(realm):
    return auth_url(realm) + "/callback"


def token_url(realm):
    return f"/realms/{realm.name}/protocol/openid-connect/token"


def start(http, realm, client_id="ciba-app", secret=SECRET, **params):
    data = {"scope": "openid", "login_hint": "alice", **params}
    data = {k: v for k, v in data.items() if v is not None}
    return http.post(auth_url(realm), data, HTTP_AUTHORIZATION=basic(client_id, secret))


def poll(http, realm, auth_req_id, client_id="ciba-app", secret=SECRET):
    data = {"grant_type": "urn:openid:params:grant-type:ciba"}
    if auth_req_id is not None:
        data["auth_req_id"] = auth_req_id
    return http.post(token_url(realm), data, HTTP_AUTHORIZATION=basic(client_id, secret))


def answer(http, realm, bearer, status="SUCCEED"):
    headers = {"HTTP_AUTHORIZATION": "Bearer " + bearer} if bearer else {}
    return http.post(callback_url(realm), json.dumps({"status": status}), content_type="application/json", **headers)
