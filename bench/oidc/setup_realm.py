"""Create (or reuse) the benchmark realms. ``bench``: a confidential client with a service
account, the standard flow and direct access grants, an audience for the demo API, one user
whose password is hashed with the production hasher (Argon2id, OWASP minimum parameters), and
``TOTP_USERS`` users with that password and a TOTP credential each (the code flow with a second
factor). ``bench-es256``: the client and the one user again, ES256 its Default Signature Algorithm.
``bench-passkeys``: the same client, "Enable Passkeys" on, and ``PASSKEY_USERS`` users
with a passkey each (bench/soft_authenticator.py, from a seed). Who they are: ``users.py``."""
import os
import sys
from urllib.parse import urlsplit

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.db import transaction  # noqa: E402

from bench.oidc.users import (  # noqa: E402
    CLIENT,
    ES256_REALM,
    PASSKEY_REALM,
    PASSKEY_USERS,
    PASSWORD,
    REALM,
    REDIRECT,
    SECRET,
    TOTP_USERS,
    USER,
    passkey_seed,
    passkey_user,
    passkey_user_id,
    totp_secret,
    totp_user,
)
from bench.soft_authenticator import SoftAuthenticator  # noqa: E402
from realms.credentials import get_credential_type  # noqa: E402
from realms.models import Credential, Realm  # noqa: E402
from realms.representation import import_realm  # noqa: E402
from realms.users.accounts import create_user  # noqa: E402


def client_rep():
    return {"clientId": CLIENT, "secret": SECRET, "serviceAccountsEnabled": True, "directAccessGrantsEnabled": True,
            "standardFlowEnabled": True, "redirectUris": [REDIRECT],
            "protocolMappers": [{"name": "aud", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
                                 "config": {"included.custom.audience": "demo-api", "access.token.claim": "true"}}]}


if not Realm.objects.filter(name=REALM).exists():
    realm = import_realm({
        "realm": REALM, "clients": [client_rep()],
        "users": [{"username": USER, "enabled": True, "email": "bench@example.org", "firstName": "Bench",
                   "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{REALM}"]}],
    }).realm
    # The same Argon2id hash for every TOTP user: one hash to compute, each check as costly.
    password_hash = Credential.objects.get(user__realm=realm, user__username=USER, type=Credential.PASSWORD)
    otp = get_credential_type(Credential.OTP)
    with transaction.atomic():
        for n in range(TOTP_USERS):
            user = create_user(realm, totp_user(n))
            Credential.objects.create(user=user, type=Credential.PASSWORD, secret_data=password_hash.secret_data,
                                      credential_data=password_hash.credential_data)
            otp.create(user, totp_secret(n))

if not Realm.objects.filter(name=ES256_REALM).exists():
    import_realm({"realm": ES256_REALM, "defaultSignatureAlgorithm": "ES256", "clients": [client_rep()],
                  "users": [{"username": USER, "enabled": True, "email": "bench@example.org", "firstName": "Bench",
                             "credentials": [{"type": "password", "value": PASSWORD}],
                             "realmRoles": [f"default-roles-{ES256_REALM}"]}]})

if not Realm.objects.filter(name=PASSKEY_REALM).exists():
    realm = import_realm({"realm": PASSKEY_REALM, "clients": [client_rep()],
                          "webAuthnPolicyPasswordlessPasskeysEnabled": True}).realm
    rp_id = urlsplit(settings.IDP_BASE_URL).hostname
    with transaction.atomic():
        for n in range(PASSKEY_USERS):
            user = create_user(realm, passkey_user(n), id=passkey_user_id(n))
            authenticator = SoftAuthenticator.from_seed(passkey_seed(n), rp_id)
            Credential.objects.create(user=user, type=Credential.WEBAUTHN_PASSWORDLESS, secret_data="{}",
                                      credential_data=authenticator.keycloak_credential_data())
sys.stdout.write("ok\n")
