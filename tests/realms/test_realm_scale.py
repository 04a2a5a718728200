"""A thousand realms within 10 % of one (decision 0107): each process keeps the configuration and
keys of the realms it served last, up to IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT, and starting reads
no realm but the one asked."""
import base64
import gc
import weakref

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from idp.config import _setting_problems
from realms.data import keys, realm_cache
from realms.data.shared_cache import GENERATIONS, LocalCopies
from realms.models import Realm
from realms.representation import import_realm
from realms.representation.bootstrap import admin_exists, ensure_bootstrap_admin

pytestmark = pytest.mark.django_db

SECRET = "scale-secret-0123456789abcdefghijklmnop"
BASIC = "Basic " + base64.b64encode(f"app:{SECRET}".encode()).decode()


@pytest.fixture
def bounded():
    loads, cap = [], [2]

    def load(key):
        loads.append(key)
        return key.upper()

    copies = LocalCopies("test-bounded", load, check_seconds=60, max_entries=lambda: cap[0])
    for key in "abcd":
        caches[GENERATIONS].delete(copies.generation_key(key))
    return copies, loads, cap


def test_past_the_cap_the_least_recently_used_copy_is_dropped(bounded):
    copies, loads, _ = bounded
    assert [copies.get(k) for k in "aba"] == ["A", "B", "A"]  # a used last, b least recently
    copies.get("c")
    assert loads == ["a", "b", "c"]
    copies.get("a")
    assert loads == ["a", "b", "c"]  # kept
    copies.get("b")
    assert loads == ["a", "b", "c", "b"]  # dropped for c, read again (and c, used before a, goes)
    copies.get("a")
    assert loads == ["a", "b", "c", "b"]


def test_the_cap_is_read_on_each_load(bounded):
    copies, loads, cap = bounded
    cap[0] = 3
    for key in "abc":
        copies.get(key)
    copies.get("a")
    assert loads == ["a", "b", "c"]
    cap[0] = 1
    copies.get("d")  # keeps d alone
    for key in "abc":
        copies.get(key)
    assert loads == ["a", "b", "c", "d", "a", "b", "c"]


def test_each_copy_let_go_is_handed_to_dropped_once():
    let_go = []
    copies = LocalCopies("test-dropped", lambda key: object(), check_seconds=60, max_entries=lambda: 2,
                         dropped=let_go.append)
    for key in "abc":
        caches[GENERATIONS].delete(copies.generation_key(key))
    a, b, c = (copies.get(k) for k in "abc")  # past the cap: a goes
    assert let_go == [a]
    copies.invalidate("b")  # a change here
    assert let_go == [a, b]
    caches[GENERATIONS].add(copies.generation_key("c"), 0, timeout=None)
    caches[GENERATIONS].incr(copies.generation_key("c"))  # another process's change, seen at the next check
    copies.check_seconds = 0
    reloaded = copies.get("c")
    assert reloaded is not c and let_go == [a, b, c]
    copies.clear()
    assert let_go == [a, b, c, reloaded]


def test_a_change_still_drops_a_copy_kept_under_the_cap(bounded):
    copies, loads, _ = bounded
    copies.get("a")
    copies.invalidate("a")
    copies.get("a")
    assert loads == ["a", "a"]


def make_realm(name):
    import_realm({"realm": name, "clients": [{"clientId": "app", "secret": SECRET, "serviceAccountsEnabled": True}]})


def token(client, name):
    response = client.post(f"/realms/{name}/protocol/openid-connect/token", {"grant_type": "client_credentials"},
                           HTTP_AUTHORIZATION=BASIC)
    assert response.status_code == 200, response.content
    return response


def test_a_process_keeps_the_configuration_and_keys_of_at_most_the_setting_s_realms(client, settings):
    settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = 2
    realm_cache.clear()
    keys._copies.clear()
    for name in ("scale-a", "scale-b", "scale-c"):
        make_realm(name)
    for name in ("scale-a", "scale-b", "scale-c", "scale-b"):
        token(client, name)
    kept = {Realm.objects.get(pk=pk).name for pk in realm_cache._configs._entries}
    assert kept == {"scale-b", "scale-c"}
    assert {Realm.objects.get(pk=pk).name for pk in keys._copies._entries} == kept
    # scale-a, dropped, answers as before: its configuration and keys read again.
    with CaptureQueriesContext(connection) as cold:
        token(client, "scale-a")
    with CaptureQueriesContext(connection) as warm:
        token(client, "scale-a")
    assert len(cold) > len(warm)
    assert len(realm_cache._configs._entries) == len(keys._copies._entries) == 2


@pytest.mark.parametrize("value, refused", [("0", True), ("-5", True), ("many", True), ("1", False), ("500", False)])
def test_the_setting_is_refused_unless_a_whole_number_of_one_or_more(monkeypatch, value, refused):
    monkeypatch.setenv("IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT", value)
    named = [p for p in _setting_problems() if p.startswith("IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT")]
    assert bool(named) is refused


def start_path_queries(client):
    """The database work of ``manage.py start`` and of a worker's first token, in one realm."""
    realm_cache.clear()
    keys._copies.clear()
    with CaptureQueriesContext(connection) as captured:
        call_command("createcachetable", verbosity=0)
        call_command("migrate", interactive=False, verbosity=0)
        ensure_bootstrap_admin("scale-admin", "a-long-bootstrap-password")
        assert admin_exists()
        token(client, "scale-0")
    return len(captured)


def test_start_reads_no_realm_but_the_one_asked(client):
    make_realm("scale-0")
    ensure_bootstrap_admin("scale-admin", "a-long-bootstrap-password")
    start_path_queries(client)  # the first run makes what start makes once (content types ...)
    one = start_path_queries(client)
    Realm.objects.bulk_create(Realm(name=f"scale-{n}") for n in range(1, 50))
    make_realm("scale-50")  # one realm with everything an import makes
    assert start_path_queries(client) == one
    assert len(realm_cache._configs._entries) == len(keys._copies._entries) == 1


def test_stored_keys_load_without_checking_them_again_and_still_sign():
    """RSA's consistency checks ran when the key was stored; a realm read again after it was
    dropped from the cache does not pay them (most of its first request's CPU)."""
    from jwcrypto import jws

    make_realm("scale-keys")
    realm = Realm.objects.get(name="scale-keys")
    keys._copies.clear()
    kid, key = keys.realm_keys(realm).signer("RS256")
    assert key.unsafe_skip_rsa_key_validation is True
    signed = jws.JWS(b"payload")
    signed.add_signature(key, alg="RS256", protected={"alg": "RS256", "kid": kid})
    check = jws.JWS()
    check.deserialize(signed.serialize())
    check.verify(keys.realm_keys(realm).by_kid[kid][1].public())
    assert check.payload == b"payload"


def test_a_realm_the_cache_lets_go_is_freed_without_the_cycle_collector(client, settings):
    """OIDC's share of a realm's configuration refers back to it; a realm dropped past the cap
    or changed must still be freed when the cache lets it go, not at the next full collection,
    which a worker serving many realms in turn waits for with megabytes of them (decision 0107)."""
    settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = 2
    realm_cache.clear()
    names = [f"scale-free-{n}" for n in range(4)]
    for name in names:
        make_realm(name)
    made = {}
    gc.collect()
    gc.disable()
    try:
        for name in names:
            token(client, name)
            config = realm_cache.get_realm(name)
            made[name] = (weakref.ref(config), weakref.ref(config.extension("openid-connect", None)))
        del config
        alive = {name for name, refs in made.items() if any(ref() is not None for ref in refs)}
        assert alive == set(names[2:])
        Realm.objects.filter(name=names[3]).first().save()  # a change lets the realm go too
        alive = {name for name, refs in made.items() if any(ref() is not None for ref in refs)}
        assert alive == {names[2]}
    finally:
        gc.enable()


def test_a_request_holding_a_dropped_realm_keeps_nothing_in_it():
    make_realm("scale-held")
    config = realm_cache.get_realm("scale-held")
    realm_cache.clear()
    first = config.extension("held", lambda c: object())
    assert config.extension("held", lambda c: object()) is not first  # computed, not kept
    assert config._extensions == {}
