"""Fixtures of the browser-side OIDC tests: one realm with a key, a confidential and a public
client, and a user. Passwords are Argon2id (slow on purpose): only the tests that sign in set one."""
import pytest
from django.core.cache import cache

from realms import keys
from realms.models import Client, Realm, User


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def realm(db):
    realm = Realm.objects.create(name="acme")
    keys.generate_key(realm)
    return realm


@pytest.fixture
def client_app(realm):
    client = Client(realm=realm, client_id="web-app", redirect_uris=["https://app.example/cb"],
                    attributes={"post.logout.redirect.uris": "+"})
    client.set_secret("s3cret-of-web-app")
    client.save()
    return client


@pytest.fixture
def public_app(realm):
    return Client.objects.create(
        realm=realm, client_id="spa", public_client=True,
        redirect_uris=["https://spa.example/cb", "http://127.0.0.1/native"],
    )


@pytest.fixture
def user(realm):
    return User.objects.create(realm=realm, username="alice", email="alice@example.com",
                               first_name="Alice", last_name="Liddell")
