"""Fixtures of the SAML tests: a live server with realm ``acme`` (Keycloak's built-ins), a user
with a password (set once per test that signs in: Argon2 is slow on purpose), and a pysaml2
service provider registered as a SAML client of the realm."""
import pytest
import requests

from realms.models import Client, Group
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user
from saml import constants as c

from .sp import PASSWORD, key_pair, new_browser, pysaml2_sp

SP_ENTITY = "https://sp.example/saml/metadata"


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    pass


@pytest.fixture(scope="session")
def sp_keys():
    return key_pair("pysaml2-sp")


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")  # a loopback literal: no name lookup


@pytest.fixture
def realm(db):
    # In a transaction rolled back after the test; a test of the live server (its threads read
    # what was committed) gets Django's TransactionTestCase instead: pytest-django picks it when
    # ``live_server`` is among the test's fixtures.
    return create_realm("acme", events_enabled=True)


@pytest.fixture
def user(realm):
    user = create_user(realm, "alice", password=PASSWORD, email="alice@example.org", first_name="Alice",
                       last_name="Liddell", attributes={"department": ["research"]})
    group = Group.objects.create(realm=realm, name="staff")
    user.groups.add(Group.objects.create(realm=realm, name="ops", parent=group))
    return user


def make_saml_client(realm, entity_id, base, cert_b64, **attributes):
    client = Client.objects.create(
        realm=realm, client_id=entity_id, protocol=c.PROTOCOL, redirect_uris=[f"{base}/sp/*"],
        attributes={c.ATTR_SIGNING_CERTIFICATE: cert_b64, c.ATTR_ACS_POST: f"{base}/sp/acs",
                    c.ATTR_SLO_REDIRECT: f"{base}/sp/slo", **attributes})
    add_default_client_scopes(client)
    for name, mapper, config in (
        ("email", "saml-user-property-mapper", {"user.attribute": "email", "attribute.name": "email",
                                                "attribute.nameformat": "Basic"}),
        ("department", "saml-user-attribute-mapper", {"user.attribute": "department",
                                                      "attribute.name": "department"}),
        ("groups", "saml-group-membership-mapper", {"attribute.name": "groups", "single": "true",
                                                    "full.path": "true"}),
    ):
        client.protocol_mappers.create(name=name, protocol=c.PROTOCOL, protocol_mapper=mapper, config=config)
    return client


@pytest.fixture
def idp_metadata(base, realm):
    response = requests.get(f"{base}/realms/acme/protocol/saml/descriptor", timeout=10)
    assert response.status_code == 200
    return response.text


@pytest.fixture
def sp_factory(tmp_path, base, realm, idp_metadata, sp_keys):
    """``sp_factory(**client attributes)``: the SAML client row and a pysaml2 SP for it."""
    key_pem, cert_pem, cert_b64 = sp_keys

    def factory(entity_id=SP_ENTITY, sp_options=None, **attributes):
        client = make_saml_client(realm, entity_id, base, cert_b64, **attributes)
        sp = pysaml2_sp(tmp_path, entity_id=entity_id, acs=f"{base}/sp/acs", slo=f"{base}/sp/slo",
                        idp_metadata=idp_metadata, key_pem=key_pem, cert_pem=cert_pem, **(sp_options or {}))
        return client, sp

    return factory


@pytest.fixture
def browser():
    with new_browser() as session:
        yield session


IDP_ENTITY = "{base}/realms/acme"
