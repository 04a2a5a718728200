"""Fixtures of the OIDC/OAuth 2 brokering tests: the upstream oidc-provider and a JSON server
(each started once per run), the realm's provider pointing at them, and helpers that run one trip
through a type (``trip``: our redirect to the provider; ``answer``: the type's verdict on the
provider's answer at our broker endpoint)."""
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import RequestFactory

from federation.broker import jose
from realms.brokering.broker import endpoint_url
from realms.brokering.providers import BrokerRequest, get_provider_type
from realms.models import IdentityProvider

from .upstream import JsonServer, OidcUpstream

ALIAS = "upstream"
STATE = "state-1.tab-1.app"
REDIRECT_URI = f"http://testserver/realms/acme/broker/{ALIAS}/endpoint"


@pytest.fixture(scope="session")
def upstream(tmp_path_factory):
    server = OidcUpstream(tmp_path_factory.mktemp("oidc-upstream"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def _json_server():
    server = JsonServer()
    yield server
    server.stop()


@pytest.fixture
def json_server(_json_server):
    _json_server.reset()
    yield _json_server
    _json_server.reset()


@pytest.fixture(autouse=True)
def _loopback(outbound_loopback):
    """The upstreams are on loopback: the outbound client's test exception; no JWKS kept between tests."""
    jose.forget_jwks()
    yield
    jose.forget_jwks()


@pytest.fixture
def rf():
    return RequestFactory()


@pytest.fixture
def make_idp(realm):
    """``make_idp(provider_id, config, fields=None)``: the realm's provider, its config checked by the type."""

    def factory(config, provider_id="oidc", fields=None, alias=ALIAS):
        provider_type = get_provider_type(provider_id)
        return IdentityProvider.objects.create(realm=realm, alias=alias, provider_id=provider_id, **(fields or {}),
                                               config=provider_type.clean_config(config))

    return factory


@pytest.fixture
def oidc_idp(upstream, make_idp):
    """``oidc_idp(client_metadata=None, fields=None, **config)``: a client registered upstream and
    the realm's ``oidc`` provider using it."""

    def factory(client_metadata=None, fields=None, provider_id="oidc", **config):
        client = upstream.register(REDIRECT_URI, **(client_metadata or {}))
        return make_idp(upstream.config(client, **config), provider_id=provider_id, fields=fields)

    return factory


@pytest.fixture
def trip(rf, realm):
    """``trip(idp, **broker_fields)``: our redirect for a fresh BrokerRequest -> (broker, URL)."""

    def begin(idp, **broker_fields):
        request = rf.get("/")
        broker = BrokerRequest(alias=idp.alias, state=STATE, redirect_uri=endpoint_url(request, realm, idp.alias),
                               **broker_fields)
        response = get_provider_type(idp.provider_id).login(request, realm, idp, broker)
        assert response.status_code == 302
        return broker, response["Location"]

    return begin


@pytest.fixture
def answer(rf, realm):
    """``answer(idp, broker, url)``: the type's verdict on the provider sending the browser to ``url``."""

    def get(idp, broker, url):
        parts = urlsplit(url)
        request = rf.get(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})
        return get_provider_type(idp.provider_id).authenticated(request, realm, idp, broker)

    return get


@pytest.fixture
def sign_in(upstream, trip, answer):
    """``sign_in(idp, login="ada", **broker_fields)``: one whole trip -> (broker, BrokeredIdentity)."""

    def run(idp, login="ada", **broker_fields):
        broker, url = trip(idp, **broker_fields)
        back = upstream.sign_in(url, login)
        assert back.startswith(broker.redirect_uri), back
        return broker, answer(idp, broker, back)

    return run


def query_of(url):
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
