"""Token injection against our own identity provider: the ambassador gets access tokens from a
realm's token endpoint (client-credentials grant of a confidential client with a service account),
and the upstream validates every bearer token locally against the realm's JWKS, as a resource
server in production would (oidc.resource_server)."""
from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
import requests

from oidc.resource_server import BearerValidator
from realms.models import Client, ProtocolMapper
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import enable_service_account

from .helpers import Resp, metric_value

pytestmark = pytest.mark.django_db(transaction=True)

AUDIENCE = "orders-api"
SECRET = "orders-caller-" + "s" * 24


def make_realm(lifespan: int):
    realm = create_realm("amb" + uuid.uuid4().hex[:8], access_token_lifespan=lifespan)
    client = Client(realm=realm, client_id="orders-caller", service_accounts_enabled=True,
                    standard_flow_enabled=False)
    client.set_secret(SECRET)
    client.save()
    add_default_client_scopes(client)
    enable_service_account(client)
    ProtocolMapper.objects.create(client=client, name="orders audience", protocol_mapper="oidc-audience-mapper",
                                  config={"included.custom.audience": AUDIENCE, "access.token.claim": "true"})
    return realm


class ResourceServer:
    """An upstream that accepts a call only with a valid bearer token of the realm (no leeway, so a
    token used after its expiry is refused)."""

    def __init__(self, upstream, issuer: str):
        self.validator = BearerValidator(issuer=issuer, audience=AUDIENCE, leeway=0)
        self.seen: list[tuple[str, bool]] = []
        self.u = upstream("api", handler=self.handle)

    async def handle(self, req):
        auth = req.h.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        try:
            claims = await asyncio.to_thread(self.validator.validate, token)
        except Exception as e:  # every refusal is the same answer to the caller
            self.seen.append((token, False))
            return Resp(401, json.dumps({"error": "invalid_token", "why": str(e)}).encode())
        self.seen.append((token, True))
        return Resp(200, json.dumps({"azp": claims.get("azp"), "sub": claims.get("sub"),
                                     "exp": claims["exp"]}).encode())


def proxy_cfg(u, live_server, realm, **token):
    t = {"token_url": f"{live_server.url}/realms/{realm.name}/protocol/openid-connect/token",
         "client_id": "orders-caller", "client_secret": SECRET}
    t.update(token)
    return {"upstreams": {"orders": {"instances": [u.addr], "token": t}},
            "routes": [{"match": {"path_prefix": "/"}, "upstream": "orders", "retry": {"max": 0}}]}


def test_service_account_token_from_our_idp_is_injected_and_cached(live_server, upstream, proxy):
    realm = make_realm(300)
    api = ResourceServer(upstream, f"{live_server.url}/realms/{realm.name}")
    p = proxy(proxy_cfg(api.u, live_server, realm))
    for _ in range(5):
        r = requests.get(p.url + "/orders/1", headers={"Authorization": "Bearer the-client-own"}, timeout=10)
        assert r.status_code == 200, r.text
        assert r.json()["azp"] == "orders-caller"
    assert len({t for t, _ in api.seen}) == 1 and all(ok for _, ok in api.seen)
    assert metric_value(p.metrics(), "ambassador_token_refreshes_total", outcome="ok") == 1

    wrong = proxy(proxy_cfg(api.u, live_server, realm, client_secret="not-the-secret"))
    r = requests.get(wrong.url + "/orders/1", timeout=10)
    assert r.status_code == 502 and r.json()["error"] == "token_unavailable"
    assert "invalid_client" in r.json()["detail"]


def test_expiring_token_is_renewed_without_a_failed_call(live_server, upstream, proxy):
    # A 5 s realm lifespan. The IdP counts expiry from a whole-second clock, so a token may live
    # up to a second less than expires_in says; renewing at 60 % keeps a clear margin.
    realm = make_realm(5)
    api = ResourceServer(upstream, f"{live_server.url}/realms/{realm.name}")
    p = proxy(proxy_cfg(api.u, live_server, realm, renew_at=0.6))
    end = time.monotonic() + 6.5
    while time.monotonic() < end:
        r = requests.get(p.url + "/orders/1", timeout=10)
        assert r.status_code == 200, r.text
        time.sleep(0.1)
    tokens = list(dict.fromkeys(t for t, _ in api.seen))
    assert len(tokens) >= 2  # the first token expired during the run and was replaced
    assert all(ok for _, ok in api.seen)  # the upstream never saw an expired token: no failed call
    assert metric_value(p.metrics(), "ambassador_token_refreshes_total", outcome="ok") == len(tokens)
