"""Create (or reuse) the benchmark realm: a confidential client with a service account, the
standard flow and direct access grants, an audience for the demo API, and one user whose
password is hashed with the production hasher (Argon2id, OWASP minimum parameters)."""
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

from realms.models import Realm  # noqa: E402
from realms.representation import import_realm  # noqa: E402

REALM, CLIENT, SECRET = "bench", "bench-app", "bench-secret-0123456789abcdefghijklmnop"
USER, PASSWORD = "bench-user", "bench-password-1"
REDIRECT = "http://127.0.0.1/cb"

if not Realm.objects.filter(name=REALM).exists():
    import_realm({
        "realm": REALM,
        "clients": [{
            "clientId": CLIENT, "secret": SECRET, "serviceAccountsEnabled": True, "directAccessGrantsEnabled": True,
            "standardFlowEnabled": True, "redirectUris": [REDIRECT],
            "protocolMappers": [{"name": "aud", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
                                 "config": {"included.custom.audience": "demo-api", "access.token.claim": "true"}}],
        }],
        "users": [{"username": USER, "enabled": True, "email": "bench@example.org", "firstName": "Bench",
                   "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{REALM}"]}],
    })
sys.stdout.write("ok\n")
