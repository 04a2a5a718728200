"""Rotating IDP_SECRET_KEY: the old key moved to IDP_SECRET_KEY_FALLBACKS keeps what it signed and
sealed valid, new values use the new key, ``manage.py rotate_secret_key`` re-encrypts the secrets
at rest so the old key can go; without the fallback, the old values are refused. The start-time
check names each bad key, one line each, never the key itself."""
import io
import json
import os

import pytest
from cryptography.fernet import InvalidToken
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.core.management.base import CommandError

from idp.config import _setting_problems
from tests.idp.test_modes import base_env, manage
from tests.oidc.test_refresh_hmac_keys import header, refresh, refused
from tests.realms.test_admin_rest_api import PASSWORD, acme, issue  # noqa: F401 (fixture)

NEW = "new-key-" + "n7" * 25


@pytest.fixture
def rotated(settings):
    """(old key, switch): ``switch(fallback)`` makes NEW the key, with the old one as a fallback or not."""
    old = settings.SECRET_KEY

    def switch(fallback):
        settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW, [old] if fallback else []

    return old, switch


def _realm_with_every_sealed_secret():
    from realms.data import crypto
    from realms.models import Component, Credential, FederatedIdentity, IdentityProvider, User
    from realms.representation.importer import import_realm
    from webhooks.models import Endpoint, EndpointSecret

    realm = import_realm({"realm": "rot", "enabled": True,
                          "smtpServer": {"host": "smtp.example.org", "from": "a@example.org", "password": "smtp-pass"},
                          "clients": [{"clientId": "app", "publicClient": False, "secret": "client-secret-1"}],
                          "users": [{"username": "ann", "enabled": True}]}).realm
    user = User.objects.get(realm=realm, username="ann")
    Credential.objects.create(user=user, type=Credential.OTP, secret_data=crypto.encrypt(json.dumps({"value": "seed"})))
    idp = IdentityProvider.objects.create(realm=realm, alias="up", provider_id="oidc", config={"clientSecret": "idp-pass"})
    FederatedIdentity.objects.create(realm=realm, user=user, identity_provider=idp, subject="s", token=crypto.encrypt("tok"))
    Component.objects.create(realm=realm, name="ldap", provider_id="ldap", provider_type="storage",
                             config={"bindCredential": ["$enc$" + crypto.encrypt("bind-pass")], "host": ["h"]})
    endpoint = Endpoint.objects.create(realm=realm, url="https://hooks.example.org/in")
    secret = EndpointSecret(endpoint=endpoint)
    secret.secret = "whsec_x"
    secret.save()
    return realm


def _read_every_sealed_secret(realm):
    from realms.data import crypto
    from realms.models import Client, Component, Credential, FederatedIdentity, IdentityProvider, Realm, RealmKey
    from realms.users.storage import open_config
    from webhooks.models import EndpointSecret

    return {
        "client": Client.objects.get(realm=realm, client_id="app").get_secret(),
        "keys": sorted({bool(crypto.decrypt(key.private_key_encrypted)) for key in RealmKey.objects.filter(realm=realm)}),
        "otp": json.loads(crypto.decrypt(Credential.objects.get(user__realm=realm, type="otp").secret_data))["value"],
        "smtp": Realm.objects.get(pk=realm.pk).smtp_server["password"],
        "idp": IdentityProvider.objects.get(realm=realm).config["clientSecret"],
        "token": crypto.decrypt(FederatedIdentity.objects.get(realm=realm).token),
        "ldap": open_config(Component.objects.get(realm=realm, name="ldap"))["bindCredential"],
        "webhook": EndpointSecret.objects.get(endpoint__realm=realm).secret,
    }


EXPECTED = {"client": "client-secret-1", "keys": [True], "otp": "seed", "smtp": "smtp-pass", "idp": "idp-pass",
            "token": "tok", "ldap": ["bind-pass"], "webhook": "whsec_x"}


@pytest.mark.django_db
def test_secrets_at_rest_need_the_fallback_until_rotate_secret_key_reseals_them(rotated, fresh_caches):
    from realms.data import crypto

    _, switch = rotated
    realm = _realm_with_every_sealed_secret()
    switch(fallback=False)
    with pytest.raises(InvalidToken):
        _read_every_sealed_secret(realm)

    switch(fallback=True)
    assert _read_every_sealed_secret(realm) == EXPECTED
    assert crypto.reseal(crypto.encrypt("new")) is None  # new values are sealed with the new key
    out = io.StringIO()
    call_command("rotate_secret_key", stdout=out)
    counts = dict(line.rsplit(": ", 1) for line in out.getvalue().splitlines()[:-1])
    # Every column had this realm's row under the old key (other realms' rows too: the master realm).
    assert all(int(count.split()[0]) >= 1 for count in counts.values()), counts
    assert set(counts) == {"client secrets", "component settings", "identity provider settings",
                           "identity provider tokens", "OTP credentials", "realm SMTP settings", "realm keys",
                           "webhook secrets"}

    switch(fallback=False)  # the old key dropped: everything is read under the new one alone
    assert _read_every_sealed_secret(realm) == EXPECTED
    out = io.StringIO()
    call_command("rotate_secret_key", stdout=out)  # again: nothing left to do
    assert all(line.endswith(": 0 re-encrypted") for line in out.getvalue().splitlines()[:-1]), out.getvalue()


@pytest.mark.django_db
def test_rotate_secret_key_names_what_no_key_opens(rotated, fresh_caches):
    old, switch = rotated
    _realm_with_every_sealed_secret()
    switch(fallback=False)  # as if the fallback were dropped before the command ran
    with pytest.raises(CommandError) as refused:
        call_command("rotate_secret_key", stdout=io.StringIO())
    assert "client secrets: " in str(refused.value) and "values no key opens" in str(refused.value)
    assert old not in str(refused.value)


@pytest.mark.django_db
def test_signed_values_hold_under_a_fallback_and_fail_without(rotated, fresh_caches, rf):
    from oidc import dpop
    from realms.models import User
    from realms.representation.importer import import_realm
    from realms.sso import sessions, sso_cookie

    old, switch = rotated
    realm = import_realm({"realm": "rot", "enabled": True, "users": [{"username": "ann", "enabled": True}]}).realm
    user = User.objects.get(realm=realm, username="ann")
    user_session = sessions.create_user_session(realm, user)
    cookie = sso_cookie._signer(realm).sign(user_session.pk)
    nonce = dpop.nonce("rot")
    console = _console_session(user, user.get_session_auth_hash())

    def accepted():
        request = rf.get("/", HTTP_COOKIE=f"{sso_cookie.COOKIE}={cookie}")
        request.session = SessionStore(console.session_key)
        return {"sso cookie": sso_cookie.session_from_request(request, realm) is not None,
                "dpop nonce": dpop._nonce_valid("rot", nonce),
                "console session": get_user(request).is_authenticated}

    switch(fallback=True)
    assert accepted() == {"sso cookie": True, "dpop nonce": True, "console session": True}
    assert sso_cookie._signer(realm).sign(user_session.pk) != cookie  # new ones under the new key
    assert dpop.nonce("rot") != nonce
    switch(fallback=False)
    # Django moved the session above to the new key on its first use: another one of the old key.
    console = _console_session(user, user._get_session_auth_hash(secret=old))
    assert accepted() == {"sso cookie": False, "dpop nonce": False, "console session": False}


def _console_session(user, auth_hash):
    """A console (Django) session of ``user`` signed in under the key that made ``auth_hash``."""
    console = SessionStore()
    console[SESSION_KEY], console[HASH_SESSION_KEY] = str(user.pk), auth_hash
    console[BACKEND_SESSION_KEY] = "realms.administration.console_auth.ConsoleBackend"
    console.save()
    return console


@pytest.mark.django_db
def test_links_signed_under_the_old_key(rotated, fresh_caches):
    from webhooks import portal
    from webhooks.models import Endpoint

    _, switch = rotated
    realm = _realm_with_every_sealed_secret()
    endpoint = Endpoint.objects.get(realm=realm)
    url, _ = portal.issue_link(None, endpoint)
    token = url.rsplit("#", 1)[1]  # the link's token is its fragment
    switch(fallback=True)
    assert portal.open_link("rot", token)[0] == endpoint
    switch(fallback=False)
    with pytest.raises(portal.LinkRefused):
        portal.open_link("rot", token)


@pytest.mark.django_db
def test_a_refresh_token_signed_with_the_key_derived_from_the_old_secret(rotated, fresh_caches, acme):
    """A realm without an ``hmac-generated`` key signs refresh tokens with a key derived from
    SECRET_KEY (decision 0067): a token of the old key refreshes under the fallback, the answer is
    signed with the new key's, and the old token is refused once the fallback is gone."""
    from realms.users.accounts import create_user

    _, switch = rotated
    create_user(acme, "ann", password=PASSWORD)
    old_token = issue("acme", "ann")["refresh_token"]
    switch(fallback=True)
    call_command("rotate_secret_key", stdout=io.StringIO())  # the realm's signing keys under the new key
    answer = refresh(old_token)
    assert answer.status_code == 200, answer.content
    new_token = answer.json()["refresh_token"]
    assert header(new_token)["kid"] != header(old_token)["kid"]
    switch(fallback=False)
    assert refused(old_token)
    assert refresh(new_token).status_code == 200


def test_the_start_check_names_each_bad_fallback(monkeypatch):
    monkeypatch.setenv("IDP_SECRET_KEY", "k" * 60)
    monkeypatch.setenv("IDP_SECRET_KEY_FALLBACKS", f"{'a' * 50},short,,{'k' * 60}")
    problems = [p for p in _setting_problems() if p.startswith("IDP_SECRET_KEY")]
    assert problems == ["IDP_SECRET_KEY_FALLBACKS: key 2 has 5 characters, at least 50 are needed",
                        "IDP_SECRET_KEY_FALLBACKS: key 3 is empty",
                        "IDP_SECRET_KEY_FALLBACKS: key 4 is IDP_SECRET_KEY itself (a fallback is an earlier key)"]
    assert not any("short" in p or "kkkk" in p for p in _setting_problems())  # no key is ever shown
    monkeypatch.setenv("IDP_SECRET_KEY", "k" * 49)
    monkeypatch.setenv("IDP_SECRET_KEY_FALLBACKS", "a" * 50)
    assert [p for p in _setting_problems() if p.startswith("IDP_SECRET_KEY")] == [
        "IDP_SECRET_KEY: 49 characters, at least 50 are needed"]


def test_start_refuses_a_bad_fallback_in_one_line(tmp_path):
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1", IDP_SECRET_KEY="s" * 50,
                   IDP_SECRET_KEY_FALLBACKS="too-short", IDP_DB_URL=os.environ.get("IDP_TEST_DB_URL", ""),
                   IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"], IDP_VAR_DIR=str(tmp_path))
    proc = manage("start", env=env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in out, out
    assert out.strip().splitlines() == [
        "CommandError: IDP_SECRET_KEY_FALLBACKS: key 1 has 9 characters, at least 50 are needed"], out
