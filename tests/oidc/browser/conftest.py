"""Fixtures of the browser-side OIDC tests: a realm made by create_realm (Keycloak's built-ins
and a key), a confidential and a public client with the realm's default client scopes, and a
user. Passwords are Argon2id (slow on purpose): only the tests that sign in set one."""
import pytest

from realms.models import Client
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    pass


@pytest.fixture
def realm(db):
    return create_realm("acme")


def make_client(realm, client_id, **fields):
    client = Client(realm=realm, client_id=client_id, **fields)
    if client.confidential:
        client.set_secret(f"secret-of-{client_id}")
    client.save()
    add_default_client_scopes(client)
    return client


@pytest.fixture
def client_app(realm):
    return make_client(realm, "web-app", redirect_uris=["https://app.example/cb"],
                       attributes={"post.logout.redirect.uris": "+"})


@pytest.fixture
def public_app(realm):
    return make_client(realm, "spa", public_client=True,
                       redirect_uris=["https://spa.example/cb", "http://127.0.0.1/native"])


@pytest.fixture
def user(realm):
    return create_user(realm, "alice", email="alice@example.com", first_name="Alice", last_name="Liddell")


@pytest.fixture
def user_with_password(realm):
    return create_user(realm, "bob", password=PASSWORD, email="bob@example.com")
