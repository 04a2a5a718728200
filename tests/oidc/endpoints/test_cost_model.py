"""The cost model (docs/cost-model.md): database queries and shared-cache (Redis) calls per
request type once the realm's configuration is cached, held exactly. A change that adds a query
or a round trip to one of these paths fails here and must say why in the model."""
from dataclasses import dataclass, field

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from .conftest import SECRET, basic, code_for, exchange, refresh, url

# Every Django cache method that is one round trip to Redis in production.
_CALLS = ("get", "set", "add", "delete", "get_many", "set_many", "delete_many", "incr", "decr", "touch",
          "has_key", "get_or_set")


@dataclass
class Cost:
    queries: list = field(default_factory=list)
    cache_calls: list = field(default_factory=list)

    @property
    def counts(self):
        return len(self.queries), len(self.cache_calls)


@pytest.fixture
def measure(monkeypatch):
    """``with measure() as cost``: the queries and the calls to both shared caches inside."""
    import contextlib

    @contextlib.contextmanager
    def run():
        cost = Cost()
        depth = [0]
        for alias in ("default", "generations"):
            backend = caches[alias]
            for name in _CALLS:
                real = getattr(backend, name)

                def counted(*args, _real=real, _name=name, _alias=alias, **kwargs):
                    if depth[0] == 0:  # get_or_set calls get and add: one call counted, as sent
                        cost.cache_calls.append(f"{_alias}.{_name}")
                    depth[0] += 1
                    try:
                        return _real(*args, **kwargs)
                    finally:
                        depth[0] -= 1

                monkeypatch.setattr(backend, name, counted)
        with CaptureQueriesContext(connection) as queries:
            yield cost
        cost.queries = [q["sql"] for q in queries.captured_queries
                        if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
        monkeypatch.undo()

    return run


def _warm(http, realm, alice):
    """One of each request first: the realm's configuration, keys and clients cached."""
    auth = {"HTTP_AUTHORIZATION": basic("app", SECRET)}
    assert http.post(url(realm, "token"), {"grant_type": "client_credentials"}, **auth).status_code == 200
    code, _ = code_for(realm, alice)
    body = exchange(http, realm, code).json()
    assert refresh(http, realm, body["refresh_token"]).status_code == 200
    assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}").status_code == 200
    assert http.post(url(realm, "token/introspect"), {"token": body["access_token"]}, **auth).status_code == 200
    return auth


# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    "client_credentials": (0, 0),  # everything from the configuration cached in the process
    # The code marked used (one UPDATE ... RETURNING), the new SSO session with its user (missed in
    # the cache, then put there: get and set), the client session.
    "authorization_code": (3, 2),
    "refresh_token": (1, 1),  # the client session; the SSO session from the cache
    "userinfo": (1, 2),  # the client session; the SSO session and the revocation marks
    "introspection": (1, 1),  # the client session; the SSO session and the revocation marks at once
}


def test_queries_and_cache_calls_per_request_type(http, realm, alice, measure):
    auth = _warm(http, realm, alice)
    found = {}
    with measure() as cost:
        assert http.post(url(realm, "token"), {"grant_type": "client_credentials"}, **auth).status_code == 200
    found["client_credentials"] = cost
    code, _ = code_for(realm, alice)
    with measure() as cost:
        response = exchange(http, realm, code)
    assert response.status_code == 200
    found["authorization_code"] = cost
    body = response.json()
    with measure() as cost:
        refreshed = refresh(http, realm, body["refresh_token"])
    assert refreshed.status_code == 200
    found["refresh_token"] = cost
    access = refreshed.json()["access_token"]
    with measure() as cost:
        assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {access}").status_code == 200
    found["userinfo"] = cost
    with measure() as cost:
        assert http.post(url(realm, "token/introspect"), {"token": access}, **auth).status_code == 200
    found["introspection"] = cost
    counts = {name: cost.counts for name, cost in found.items()}
    detail = {name: (cost.queries, cost.cache_calls) for name, cost in found.items()}
    assert counts == EXPECTED, detail
