"""The brokered sign-in's set-up, beside ``bench/oidc/setup_realm.py``'s ``bench`` realm: a realm
``upstream`` (served by a second server) with the client ``downstream`` and the user
``bench-user`` (the same password), and in ``bench`` the OpenID Connect identity provider
``upstream`` pointing at it, with ``bench``'s ``bench-user`` already linked to the upstream user
(the benchmark measures the sign-in of a linked user, what every sign-in after the first is).

Usage: setup.py DOWNSTREAM_BASE_URL UPSTREAM_BASE_URL"""
import os
import sys

import django

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.broker.settings")
django.setup()

from bench.oidc.users import PASSWORD, REALM, USER  # noqa: E402
from realms.models import FederatedIdentity, IdentityProvider, Realm, User  # noqa: E402
from realms.representation import import_realm  # noqa: E402

UPSTREAM, ALIAS, CLIENT, SECRET = "upstream", "upstream", "downstream", "downstream-secret-0123456789abcdef"
down, up = sys.argv[1], sys.argv[2]

if not Realm.objects.filter(name=UPSTREAM).exists():
    import_realm({
        "realm": UPSTREAM,
        "clients": [{"clientId": CLIENT, "secret": SECRET, "standardFlowEnabled": True,
                     "redirectUris": [f"{down}/realms/{REALM}/broker/{ALIAS}/endpoint"]}],
        "users": [{"username": USER, "enabled": True, "email": "bench@example.org", "emailVerified": True,
                   "firstName": "Bench", "lastName": "User",
                   "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{UPSTREAM}"]}],
    })
realm = Realm.objects.get(name=REALM)
issuer = f"{up}/realms/{UPSTREAM}"
idp, _ = IdentityProvider.objects.update_or_create(realm=realm, alias=ALIAS, defaults={
    "provider_id": "oidc", "display_name": "Upstream", "config": {
        "issuer": issuer, "authorizationUrl": f"{issuer}/protocol/openid-connect/auth",
        "tokenUrl": f"{issuer}/protocol/openid-connect/token",
        "userInfoUrl": f"{issuer}/protocol/openid-connect/userinfo",
        "jwksUrl": f"{issuer}/protocol/openid-connect/certs", "useJwksUrl": "true", "validateSignature": "true",
        "clientId": CLIENT, "clientSecret": SECRET, "clientAuthMethod": "client_secret_post",
        "pkceEnabled": "true", "pkceMethod": "S256", "defaultScope": "openid", "syncMode": "IMPORT"}})
upstream_user = User.objects.get(realm__name=UPSTREAM, username=USER)
FederatedIdentity.objects.get_or_create(realm=realm, identity_provider=idp, user=User.objects.get(realm=realm, username=USER),
                                        defaults={"subject": upstream_user.pk, "user_name": USER})
print("ok")
