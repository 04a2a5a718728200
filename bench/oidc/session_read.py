"""The refresh's read of the two session copies (``sessions.session_with_client``), taken apart
in one process: Django's ``cache.get_many`` against the same ``MGET`` on the redis-py client that
Django's cache holds, with redis-py's Python reply parser and with hiredis (when installed), the
unpickling, and a ``PING`` (the round trip alone). CPU per call (``time.process_time``), best of
three rounds of ``N`` calls, each read in turn so that the machine's load falls on all alike.

Usage: session_read.py [N]   (env as cpu.py's; the realm made by setup_realm.py)
"""
import json
import pickle
import sys
import time

import redis
from django.core.cache import cache
from redis.connection import ConnectionPool
from redis.utils import HIREDIS_AVAILABLE

from bench.oidc.cpu import ISSUER, token  # before the models: cpu.py sets Django up
from bench.oidc.users import CLIENT, PASSWORD, REALM, USER
from oidc.realm_cache import get_realm
from oidc.tokens import decode
from realms.models import Client
from realms.sso import sessions


def client_with(parser):
    """A redis-py client on Django's own server, with this reply parser."""
    django_client = cache._cache.get_client()
    kwargs = dict(django_client.connection_pool.connection_kwargs, parser_class=parser)
    return redis.Redis(connection_pool=ConnectionPool(**kwargs))


def main():
    n = int(sys.argv[1]) if sys.argv[1:] else 5000
    body = json.loads(token({"grant_type": "password", "username": USER, "password": PASSWORD, "scope": "openid"}))
    token({"grant_type": "refresh_token", "refresh_token": body["refresh_token"]})  # the client session's copy put
    realm = get_realm(REALM).realm
    sid = decode(realm, body["refresh_token"], ISSUER)["sid"]
    client_pk = Client.objects.get(realm=realm, client_id=CLIENT).pk
    keys = [sessions.cache_key(sid), sessions.client_cache_key(sid, client_pk)]
    made = [cache.make_key(k) for k in keys]
    django_client = cache._cache.get_client()
    python_parser = client_with(redis.connection._RESP2Parser)
    reads = {
        "Django cache.get_many": lambda: cache.get_many(keys),
        "keys made, MGET, unpickled (Django's client)": lambda: [
            pickle.loads(v) for v in django_client.mget([cache.make_key(k) for k in keys])],
        "MGET alone (Django's client)": lambda: django_client.mget(made),
        "MGET alone, Python parser": lambda: python_parser.mget(made),
        "PING (Django's client)": django_client.ping,
    }
    if HIREDIS_AVAILABLE:
        hiredis_parser = client_with(redis.connection._HiredisParser)
        reads["MGET alone, hiredis parser"] = lambda: hiredis_parser.mget(made)
    values = django_client.mget(made)
    assert all(values), "the two copies are in Redis"
    reads["unpickling the two copies"] = lambda: [pickle.loads(v) for v in values]
    print(f"the session copies' read, CPU per call, best of 3 x {n} ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())},"
          f" load average {' '.join(open('/proc/loadavg').read().split()[:3])}; Django's parser: "
          f"{django_client.connection_pool.connection_kwargs.get('parser_class', 'default').__name__};"
          f" copies {len(values[0])} + {len(values[1])} bytes)")
    best = dict.fromkeys(reads, float("inf"))
    for _ in range(3):
        for name, read in reads.items():
            for _ in range(n // 10):
                read()
            started = time.process_time()
            for _ in range(n):
                read()
            best[name] = min(best[name], (time.process_time() - started) / n)
    for name, seconds in best.items():
        print(f"  {name:46s} {seconds * 1e6:6.1f} µs")


if __name__ == "__main__":
    main()
