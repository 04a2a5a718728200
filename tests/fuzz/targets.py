"""Fuzz targets: one per parser that reads outside input.

Each target is ``run(state, data: bytes)`` on a ``state`` its ``setup()`` made once (a realm,
clients, keys, an admin token). The bytes are the attacker's: a query string, a form body, an
XML message, a JSON document, a YAML file, the bytes of an HTTP connection. A target asserts the
parser's contract: it returns, raises the module's own error type, or answers below 500 through
its view; any other exception, a 500 or a slow input is a finding. The same functions are driven
by hypothesis in the test suite (``test_fuzz.py``) and by atheris in ``scripts/fuzz.sh``.

Seeds live in ``corpus/<target>/``. Where a target reads several things from one input, its first
byte picks the mode (``data[0] % modes``): seed files start with an ASCII digit for that. In seeds,
``@NOW@`` becomes the current Unix time (or SAML instant) and ``@ID@`` a fresh id, so that a seed
passes the freshness and replay checks and the fuzzer reaches the code behind them.
"""
import asyncio
import base64
import functools
import hashlib
import hmac
import itertools
import json
import resource
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timezone
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
REALM = "fz"
PASSWORD = "fuzz-password-1"
SECRET = "fuzz-secret-" + "x" * 24
SAML_ISSUER = "https://sp.example/saml/metadata"
MAX_GROWTH_MB = 256  # the most one input may add to the process's peak memory
_ids = itertools.count()


@dataclass
class Target:
    name: str
    setup: Callable[[], object]
    run: Callable[[object, bytes], None]
    db: bool = True  # needs the database (each input runs in a transaction rolled back after it)
    # (offset, loader): the seeds from this offset on are a document the loader reads (json.loads,
    # yaml.safe_load); the fuzzer then also mutates the document's values, not only its bytes.
    document: tuple | None = None
    seconds: float = 2.0  # the most one input may take

    def seeds(self):
        return [p.read_bytes() for p in sorted((CORPUS / self.name).iterdir()) if p.is_file()]


def _mode(data, modes):
    return (data[0] % modes, data[1:]) if data else (0, b"")


def _fill(data: bytes, now: bytes) -> bytes:
    while b"@ID@" in data:
        data = data.replace(b"@ID@", b"_fz%d" % next(_ids), 1)
    return data.replace(b"@NOW@", now)


def _unix_now():
    return str(int(time.time())).encode()


def _saml_now():
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ").encode()


def _below_500(response):
    assert response.status_code < 500, (response.status_code, response.content[:2000])
    return response


def _oauth_error_shape(response):
    """RFC 6749 §5.2: an error answer of a token endpoint is JSON with an ``error`` string."""
    _below_500(response)
    if response.status_code >= 400:
        body = json.loads(response.content)
        assert isinstance(body.get("error"), str), body


# Shared state: one realm with clients of every kind ---------------------------------------------

@dataclass
class State:
    http: object
    rs_key: object = None  # the private key of the private_key_jwt client
    admin_token: str = ""  # a master-realm admin's access token, for the Admin API
    webhook_id: str = ""


def _realm():
    """Realm ``fz``: a confidential, a public, a client_secret_jwt and a private_key_jwt client, a
    SAML service provider that need not sign, and a user with a password."""
    from django.test import Client as HttpClient
    from jwcrypto import jwk

    from realms.data import realm_cache
    from realms.representation import import_realm  # the import service's entry point
    from saml import constants as c

    realm_cache.clear()
    rs_key = jwk.JWK.generate(kty="RSA", size=2048, kid="fz-rs")
    import_realm({
        "realm": REALM, "enabled": True, "eventsEnabled": True,
        "clients": [
            {"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True,
             "directAccessGrantsEnabled": True, "redirectUris": ["https://app.example/cb",
                                                                  "https://wild.example/app/*"]},
            {"clientId": "spa", "publicClient": True, "redirectUris": ["http://127.0.0.1/cb"],
             "attributes": {"pkce.code.challenge.method": "S256"}},
            {"clientId": "jwt-secret", "secret": SECRET, "clientAuthenticatorType": "client-secret-jwt",
             "serviceAccountsEnabled": True},
            {"clientId": "jwt-key", "clientAuthenticatorType": "client-jwt", "serviceAccountsEnabled": True,
             "attributes": {"jwks.string": json.dumps({"keys": [rs_key.export_public(as_dict=True)]})}},
            {"clientId": SAML_ISSUER, "protocol": c.PROTOCOL, "redirectUris": ["https://sp.example/*"],
             "attributes": {c.ATTR_CLIENT_SIGNATURE: "false", c.ATTR_ACS_POST: "https://sp.example/acs",
                            c.ATTR_SLO_REDIRECT: "https://sp.example/slo"}},
        ],
        "users": [{"username": "alice", "enabled": True, "email": "alice@example.org",
                   "credentials": [{"type": "password", "value": PASSWORD}]}],
    })
    return State(http=HttpClient(), rs_key=rs_key)


# OIDC ---------------------------------------------------------------------------------------------

def run_authorize(state, data):
    """The authorization request: the bytes are the query string."""
    response = state.http.get(f"/realms/{REALM}/protocol/openid-connect/auth",
                              QUERY_STRING=data.decode("latin-1"))
    _below_500(response)


def run_token(state, data):
    """The token request: the first line is the Authorization header, the rest the form body."""
    header, _, body = data.partition(b"\n")
    extra = {"HTTP_AUTHORIZATION": header.decode("latin-1")} if header else {}
    response = state.http.post(f"/realms/{REALM}/protocol/openid-connect/token", data=_fill(body, _unix_now()),
                               content_type="application/x-www-form-urlencoded", **extra)
    _oauth_error_shape(response)


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def run_client_assertion(state, data):
    """A client assertion JWT at the token endpoint. Mode 0: the bytes are the JWT as sent. Mode 1:
    header JSON, a newline, claims JSON, signed HS256 with the client secret (so the claim checks
    behind the signature are reached). Mode 2: the same signed RS256 with the client's key."""
    mode, data = _mode(data, 3)
    if mode == 0:
        assertion = data
    else:
        header, _, claims = _fill(data, _unix_now()).partition(b"\n")
        signing_input = _b64(header) + b"." + _b64(claims)
        if mode == 1:
            signature = hmac.new(SECRET.encode(), signing_input, hashlib.sha256).digest()
        else:
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import padding

            key = state.rs_key.get_op_key("sign")
            signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        assertion = signing_input + b"." + _b64(signature)
    from urllib.parse import quote_from_bytes

    body = (b"grant_type=client_credentials&client_assertion_type="
            b"urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion="
            + quote_from_bytes(assertion).encode())
    response = state.http.post(f"/realms/{REALM}/protocol/openid-connect/token", data=body,
                               content_type="application/x-www-form-urlencoded")
    _oauth_error_shape(response)


# SAML ---------------------------------------------------------------------------------------------

def run_saml(state, data):
    """SAML messages at the realm's one endpoint. Modes 0-3: the bytes are an XML message sent as
    SAMLRequest (Redirect, POST) or SAMLResponse (Redirect, POST), encoded for its binding; 4 and 5:
    the bytes are the raw query string or form body (RelayState, Signature, SigAlg, encodings)."""
    from urllib.parse import quote_from_bytes

    mode, data = _mode(data, 6)
    url = f"/realms/{REALM}/protocol/saml"
    xml = _fill(data, _saml_now())
    if mode in (0, 2):
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        encoded = base64.b64encode(compressor.compress(xml) + compressor.flush())
        param = "SAMLRequest" if mode == 0 else "SAMLResponse"
        response = state.http.get(url, QUERY_STRING=f"{param}={quote_from_bytes(encoded)}&RelayState=fz")
    elif mode in (1, 3):
        param = b"SAMLRequest" if mode == 1 else b"SAMLResponse"
        body = param + b"=" + quote_from_bytes(base64.b64encode(xml)).encode() + b"&RelayState=fz"
        response = state.http.post(url, data=body, content_type="application/x-www-form-urlencoded")
    elif mode == 4:
        response = state.http.get(url, QUERY_STRING=xml.decode("latin-1"))
    else:
        response = state.http.post(url, data=xml, content_type="application/x-www-form-urlencoded")
    _below_500(response)


# Realm import -------------------------------------------------------------------------------------

def run_realm_import(state, data):
    """A realm representation (JSON) through the import service. Bytes that are not JSON are the
    JSON parser's business (the command and console answer them before importing)."""
    from realms.representation import RepresentationError, import_realm

    try:
        representation = json.loads(data)
    except (ValueError, RecursionError):
        return
    try:
        import_realm(representation)
    except RepresentationError:
        pass


# Webhook admin API --------------------------------------------------------------------------------

def _admin_token():
    """A master-realm admin's access token, for the Admin API."""
    from django.test import Client as HttpClient

    from realms.models import Realm, Role
    from realms.users.accounts import create_user

    master = Realm.objects.get(name="master")
    admin = create_user(master, "fz-admin", password=PASSWORD)
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    response = HttpClient().post("/realms/master/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": "fz-admin", "password": PASSWORD})
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def _webhook_endpoint():
    """The id of a webhook endpoint of realm ``fz``."""
    from realms.models import Realm
    from webhooks import services

    endpoint, _ = services.create_endpoint(Realm.objects.get(name=REALM), "https://hooks.example/in")
    return endpoint.pk


def _webhook_state():
    state = _realm()
    state.admin_token, state.webhook_id = _admin_token(), _webhook_endpoint()
    return state


def run_webhook_api(state, data):
    """The JSON body of the webhook subscription API: mode 0 creates (POST), 1 updates (PUT),
    2 redelivers, 3 rotates the secret. Outbound calls (the ownership handshake) are refused
    without a name lookup: the fuzzer must not reach the network."""
    from unittest import mock

    from realms.http import outbound

    mode, body = _mode(data, 4)
    base = f"/admin/realms/{REALM}/webhooks"
    method, path = [("post", base), ("put", f"{base}/{state.webhook_id}"),
                    ("post", f"{base}/{state.webhook_id}/redeliver"),
                    ("post", f"{base}/{state.webhook_id}/rotate-secret")][mode]
    with mock.patch.object(outbound, "resolve", side_effect=outbound.socket.gaierror("fuzz: no DNS")):
        response = getattr(state.http, method)(path, data=body, content_type="application/json",
                                               HTTP_AUTHORIZATION=f"Bearer {state.admin_token}")
    _below_500(response)
    if response.status_code >= 400:
        body = json.loads(response.content)  # Keycloak's error shape: error or errorMessage
        assert isinstance(body.get("errorMessage", body.get("error")), str)


# Ambassador ---------------------------------------------------------------------------------------

def run_ambassador_config(state, data):
    """The proxy's YAML configuration file: a Config or ConfigError listing the mistakes."""
    from ambassador.configfile import ConfigError, load

    path = Path(state.name) / "ambassador.yaml"
    path.write_bytes(data)
    try:
        load(path)
    except ConfigError:
        pass


class _Transport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data):
        self.written += data

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


class _Server:
    """What a client connection needs of ``HTTPProxy``; ``begin`` reads the request the way the
    proxy does before forwarding (route match, retry hints, hop-by-hop names) and answers it."""

    def __init__(self, loop):
        from ambassador.config import RetryConfig

        self.loop = loop
        self.clients = set()
        self.retry_buffer = 64 * 1024
        self.draining = False
        self.retry = RetryConfig()
        self.calls = 0

    def begin(self, cc, call):
        from ambassador import downstream, telemetry
        from ambassador.retry import max_retries

        cc.call = call
        self.calls += 1
        telemetry._path_json(call.url)
        downstream._connection_names(call.lc.get(b"connection", b""))
        max_retries(self.retry, call.method_s, call.lc)
        cc.finish(cc.keeps_alive(call))

    def client_lost(self, call):
        pass


def _ambassador_http_state():
    return asyncio.new_event_loop()


@functools.cache
def _checked_conn():
    """The proxy's client connection, recording any exception raised inside its callbacks."""
    from ambassador import downstream

    class Conn(downstream.ClientConn):
        errors = None

    for name in ("on_url", "on_header", "on_headers_complete", "on_body", "on_message_complete"):
        def checked(self, *args, _name=name):
            try:
                return getattr(downstream.ClientConn, _name)(self, *args)
            except BaseException as exc:
                self.errors.append(exc)
                raise
        setattr(Conn, name, checked)
    return Conn


def run_ambassador_http(loop, data):
    """Bytes a client sends on a connection to the proxy, in two reads (split at the first byte's
    value), through the proxy's httptools callbacks. A parser error is the proxy's 400/501; an
    exception inside a callback of ours (which httptools would hide as a parser error) is a finding."""
    conn = _checked_conn()(_Server(loop))
    conn.errors = errors = []
    transport = _Transport()
    conn.connection_made(transport)
    cut = data[0] if data else 0
    for chunk in (data[:cut], data[cut:]):
        if chunk and not conn.closed:
            conn.data_received(chunk)
    conn.connection_lost(None)
    assert not errors, errors
    if transport.written:
        status = transport.written.split(b" ", 2)[1]
        assert transport.written.startswith(b"HTTP/1.1 ") and status in (b"400", b"501"), transport.written[:200]


def _yaml_load(data):
    import yaml

    return yaml.safe_load(data)


# The registry -------------------------------------------------------------------------------------

TARGETS = {t.name: t for t in (
    Target("authorize", _realm, run_authorize),
    Target("token", _realm, run_token),
    Target("client_assertion", _realm, run_client_assertion),
    Target("saml", _realm, run_saml),
    Target("realm_import", lambda: None, run_realm_import, document=(0, json.loads), seconds=5.0),
    Target("webhook_api", _webhook_state, run_webhook_api, document=(1, json.loads)),
    Target("ambassador_config", lambda: tempfile.TemporaryDirectory(prefix="fz-ambassador-"),
           run_ambassador_config, db=False, document=(0, _yaml_load)),
    Target("ambassador_http", _ambassador_http_state, run_ambassador_http, db=False),
)}


def run_one(target, state, data):
    """One input, its database work rolled back, its time and memory bounded."""
    from django.core.cache import cache
    from django.db import transaction

    from realms.data import realm_cache

    started, peak = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if target.db:
        with transaction.atomic():
            try:
                target.run(state, data)
            finally:
                transaction.set_rollback(True)
                cache.clear()  # realm caches, jti and brute-force counters: each input starts alike
                realm_cache.clear()
    else:
        target.run(state, data)
    elapsed = time.monotonic() - started
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) // 1024
    assert elapsed < target.seconds, f"{target.name}: one input took {elapsed:.1f}s"
    assert grown < MAX_GROWTH_MB, f"{target.name}: one input raised the peak memory by {grown} MB"
