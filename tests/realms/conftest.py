"""Fixtures of the sign-in tests (storage providers, one-time codes): realm "acme" with events
on, a confidential client allowed the password grant, and the user bob with a password."""
import pytest

from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD, make_client


@pytest.fixture
def realm(db):
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.save()
    return realm


@pytest.fixture
def web_app(realm):
    return make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)


@pytest.fixture
def bob(realm):
    return create_user(realm, "bob", password=PASSWORD, email="bob@example.com")
