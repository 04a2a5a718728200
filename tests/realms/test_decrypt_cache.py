"""The process-wide cache of opened secrets (``realms.data.crypto``) keeps what is opened again
and again, a client's secret, and not a realm's keys, which the realm keys cache holds opened for
the realms a process keeps (decision 0107: with a thousand realms it held each one's RSA key)."""
import pytest

from realms.data import crypto, keys
from realms.models import Client
from realms.representation.services import create_realm

pytestmark = pytest.mark.django_db


def test_realm_keys_are_opened_outside_the_cache_and_client_secrets_inside(fresh_caches):
    realm = create_realm("sealed")
    client = Client.objects.create(realm=realm, client_id="app")
    client.set_secret("s3cret-value")
    keys.generate_key(realm, "HS512")
    crypto._decrypt_cached.cache_clear()
    loaded = keys.realm_keys(realm)
    assert loaded.signer("RS256") is not None and loaded.hmac_signer is not None  # opened
    assert crypto._decrypt_cached.cache_info().currsize == 0
    assert client.get_secret() == client.get_secret() == "s3cret-value"
    assert crypto._decrypt_cached.cache_info()[:2] == (1, 1)  # (hits, misses)
