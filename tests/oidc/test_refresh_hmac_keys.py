"""Refresh tokens are signed with the realm's HMAC key (Keycloak's ``hmac-generated`` component),
rotated through the Admin API: the active HS512 key with the highest priority signs, every enabled
one verifies, so a rotation keeps earlier refresh tokens alive while disabling or deleting a key
refuses the tokens it signed. A realm without such a key keeps its key derived from SECRET_KEY,
which goes on verifying the refresh tokens it signed before the realm's first HMAC key."""
import base64
import json

import pytest
from django.test import Client

from realms.models import RealmKey
from realms.users.accounts import create_user
from tests.realms.test_admin_key_providers import KEY_PROVIDER
from tests.realms.test_admin_rest_api import PASSWORD, acme, created_id, issue, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def header(jwt):
    head = jwt.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))


def refresh(token):
    return Client().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "refresh_token", "client_id": "admin-cli", "refresh_token": token})


def hmac_key(master_api, name, **config):
    body = {"name": name, "providerId": "hmac-generated", "providerType": KEY_PROVIDER,
            "config": {k: [v] for k, v in config.items()}}
    return created_id(master_api("post", "acme/components", body))


def refused(token):
    resp = refresh(token)
    return resp.status_code == 400 and resp.json()["error"] == "invalid_grant"


def test_rotation_signs_with_the_new_key_and_keeps_earlier_tokens(master_api, acme):
    create_user(acme, "ann", password=PASSWORD)
    derived = issue("acme", "ann")["refresh_token"]
    assert header(derived)["alg"] == "HS512"
    assert not RealmKey.objects.filter(realm=acme, algorithm="HS512").exists()  # the derived key signed it

    first_id = hmac_key(master_api, "hmac-1", priority="100")
    first = RealmKey.objects.get(pk=first_id)
    by_first = issue("acme", "ann")["refresh_token"]
    assert header(by_first) == {"alg": "HS512", "typ": "JWT", "kid": first.kid}
    assert refresh(derived).status_code == 200  # issued before the realm's first HMAC key

    second_id = hmac_key(master_api, "hmac-2", priority="200")
    second = RealmKey.objects.get(pk=second_id)
    by_second = issue("acme", "ann")["refresh_token"]
    assert header(by_second)["kid"] == second.kid != first.kid
    answer = refresh(by_second)
    assert answer.status_code == 200
    assert header(answer.json()["refresh_token"])["kid"] == second.kid  # a refresh is signed anew
    assert refresh(by_first).status_code == 200  # the rotation invalidates nothing

    # Passive: no longer signs, still verifies.
    assert master_api("put", f"acme/components/{second_id}", {"name": "hmac-2", "config": {"active": ["false"]}}
                      ).status_code == 204
    assert header(issue("acme", "ann")["refresh_token"])["kid"] == first.kid
    assert refresh(by_second).status_code == 200

    # Disabled: the tokens it signed are refused, the others' still refresh.
    assert master_api("put", f"acme/components/{second_id}", {"name": "hmac-2", "config": {"enabled": ["false"]}}
                      ).status_code == 204
    assert refused(by_second)
    assert refresh(by_first).status_code == 200 and refresh(derived).status_code == 200
    # Enabled again, they verify again: disabling kept the secret.
    assert master_api("put", f"acme/components/{second_id}", {"name": "hmac-2", "config": {"enabled": ["true"]}}
                      ).status_code == 204
    assert refresh(by_second).status_code == 200

    # Deleted: its tokens refused for good. The other key is passive, so the derived key signs again.
    assert master_api("delete", f"acme/components/{first_id}").status_code == 204
    assert refused(by_first)
    assert refresh(by_second).status_code == 200
    after = issue("acme", "ann")["refresh_token"]
    assert header(after)["kid"] == header(derived)["kid"] and refresh(after).status_code == 200

def test_a_new_secret_size_is_a_new_secret_and_refuses_the_old_tokens(master_api, acme):
    create_user(acme, "ann", password=PASSWORD)
    key_id = hmac_key(master_api, "sized", priority="100", secretSize="32")
    old = RealmKey.objects.get(pk=key_id)
    assert len(old.secret) == 32
    token = issue("acme", "ann")["refresh_token"]
    assert master_api("put", f"acme/components/{key_id}", {"name": "sized", "config": {"secretSize": ["128"]}}
                      ).status_code == 204
    new = RealmKey.objects.get(pk=key_id)
    assert len(new.secret) == 128 and new.kid != old.kid and new.priority == 100
    assert refused(token)  # as in Keycloak: the old secret is gone with its size
    assert header(issue("acme", "ann")["refresh_token"])["kid"] == new.kid
