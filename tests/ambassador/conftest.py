"""Fixtures for the ambassador tests. Only test_idp_tokens uses the database (our identity provider)."""
from __future__ import annotations

import pytest

from .helpers import CA, LoopThread, Proxy, Upstream


@pytest.fixture(scope="session")
def lt():
    t = LoopThread()
    yield t
    t.stop()


@pytest.fixture
def upstream(lt):
    made = []

    def make(name="u", **kw):
        u = Upstream(lt, name, **kw)
        made.append(u)
        return u
    yield make
    for u in made:
        u.kill()


@pytest.fixture
def proxy(lt, tmp_path):
    made = []

    def make(cfg, **kw):
        p = Proxy(lt, tmp_path, cfg, **kw)
        made.append(p)
        return p
    yield make
    for p in made:
        if not p.app.stopped.is_set():
            p.stop()


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = CA(d)
    other = CA(d, "Other CA")
    server = ca.issue("server", dns=["localhost", "orders.internal"], ips=["127.0.0.1"])
    client = ca.issue("orders-caller", client=True)
    wrong = other.issue("impostor", dns=["localhost", "orders.internal"], ips=["127.0.0.1"])
    return {"dir": d, "ca": ca, "other": other, "server": server, "client": client, "wrong": wrong}
