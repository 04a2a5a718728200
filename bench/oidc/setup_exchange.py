"""Create (or reuse) the token-exchange benchmark realm ``bench-exchange``: ``bench-front`` gets a
user's token by the password grant (its audience mapper names ``bench-app``), and ``bench-app``
(enabled for standard token exchange, the same secret as the main realm's) exchanges it."""
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

from bench.oidc.users import CLIENT, PASSWORD, SECRET, USER  # noqa: E402
from realms.models import Realm  # noqa: E402
from realms.representation import import_realm  # noqa: E402

REALM, FRONT = "bench-exchange", "bench-front"

if not Realm.objects.filter(name=REALM).exists():
    import_realm({
        "realm": REALM,
        "clients": [
            {"clientId": FRONT, "secret": SECRET, "directAccessGrantsEnabled": True, "standardFlowEnabled": False,
             "protocolMappers": [{"name": "aud", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
                                  "config": {"included.client.audience": CLIENT, "access.token.claim": "true"}}]},
            {"clientId": CLIENT, "secret": SECRET, "standardFlowEnabled": False, "serviceAccountsEnabled": True,
             "attributes": {"standard.token.exchange.enabled": "true"}},
        ],
        "users": [{"username": USER, "enabled": True, "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{REALM}"]}],
    })
sys.stdout.write("ok\n")
