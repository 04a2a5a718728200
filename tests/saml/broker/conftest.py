"""Fixtures of the SAML brokering tests: the upstream pysaml2 identity provider (started once per
run on a free loopback port), the realm's ``saml`` identity provider pointing at it, and helpers
that run one trip through the type (``begin``, ``answer``)."""
import base64
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import RequestFactory

from realms.brokering.broker import endpoint_url
from realms.brokering.providers import BrokerRequest, get_provider_type
from realms.models import IdentityProvider
from saml.broker import descriptor
from saml.broker.config import clean_config

from .upstream import UpstreamIdp

ALIAS = "upstream"
STATE = "state-1.tab-1.app"


@pytest.fixture(scope="session")
def upstream(tmp_path_factory):
    server = UpstreamIdp(tmp_path_factory.mktemp("upstream-idp"))
    yield server
    server.stop()


@pytest.fixture
def rf():
    return RequestFactory()


@pytest.fixture
def saml_type():
    return get_provider_type("saml")


@pytest.fixture
def make_idp(realm, upstream, rf):
    """``make_idp(upstream_options=None, fields=None, **config)``: the realm's provider (Keycloak's config keys,
    checked by the type) and the upstream trusting our SP metadata."""

    def factory(upstream_options=None, fields=None, **config):
        values = {"idpEntityId": upstream.entity_id, "singleSignOnServiceUrl": upstream.sso,
                  "singleLogoutServiceUrl": upstream.slo, "signingCertificate": upstream.cert_b64,
                  "validateSignature": "true", "wantAuthnRequestsSigned": "true", "wantAssertionsSigned": "true",
                  "postBindingResponse": "true", "postBindingAuthnRequest": "true", "postBindingLogout": "true",
                  "principalType": "SUBJECT", **config}
        idp = IdentityProvider.objects.create(realm=realm, alias=ALIAS, provider_id="saml", **(fields or {}),
                                              config=clean_config({k: v for k, v in values.items() if v is not None}))
        upstream.trust(descriptor.document(rf.get("/"), realm, idp).decode(), **(upstream_options or {}))
        upstream.user = {"name_id": "u-1001", "attributes": {"mail": ["ada@example.org"], "givenName": ["Ada"],
                                                             "sn": ["Lovelace"], "eduPersonAffiliation": ["staff", "member"]}}
        return idp

    return factory


def saml_request_of(response):
    """(SAMLRequest, RelayState, binding, extra) of our answer that sends the browser upstream."""
    if response.status_code == 302:
        query = parse_qs(urlsplit(response["Location"]).query)
        return query["SAMLRequest"][0], query.get("RelayState", [""])[0], "redirect", query
    from ..sp import form_fields

    _, fields = form_fields(response.content.decode())
    return fields["SAMLRequest"], fields.get("RelayState", ""), "post", fields


@pytest.fixture
def trip(rf, realm, saml_type):
    """``trip(idp)``: our AuthnRequest for a fresh BrokerRequest -> (broker, our HTTP answer)."""

    def begin(idp, **broker_fields):
        request = rf.get("/")
        broker = BrokerRequest(alias=idp.alias, state=STATE, redirect_uri=endpoint_url(request, realm, idp.alias),
                               **broker_fields)
        return broker, saml_type.login(request, realm, idp, broker)

    return begin


@pytest.fixture
def answer(rf, realm, saml_type):
    """``answer(idp, broker, response_xml)``: the type's verdict on a POSTed SAMLResponse."""

    def post(idp, broker, text, *, relay_state=STATE):
        encoded = base64.b64encode(text.encode() if isinstance(text, str) else text).decode()
        request = rf.post(f"/realms/{realm.name}/broker/{idp.alias}/endpoint",
                          {"SAMLResponse": encoded, "RelayState": relay_state})
        return saml_type.authenticated(request, realm, idp, broker)

    return post
