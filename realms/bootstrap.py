"""First-start setup: the bootstrap admin of the master realm and, in dev mode, a demo realm."""
import logging
import os

from django.db import transaction

from .crypto import random_secret
from .models import Realm, Role, User
from .representation import import_realm
from .services import create_realm

logger = logging.getLogger("idp.bootstrap")

DEMO_REALM = "demo"
DEMO_CLIENT = "demo-app"
DEMO_REDIRECT_URIS = ["http://localhost:8000/callback", "http://127.0.0.1/callback"]


def master_realm():
    return Realm.objects.filter(name="master").first() or create_realm("master")


@transaction.atomic
def ensure_bootstrap_admin(username=None, password=None):
    """Create the master realm's admin from IDP_BOOTSTRAP_ADMIN_USERNAME / _PASSWORD once.

    An existing user is never changed (a restart with the variables still set must not reset
    a password the admin has since changed). Returns the user created, or None."""
    username = username if username is not None else os.environ.get("IDP_BOOTSTRAP_ADMIN_USERNAME", "")
    password = password if password is not None else os.environ.get("IDP_BOOTSTRAP_ADMIN_PASSWORD", "")
    if not username:
        return None
    if not password:
        raise ValueError("IDP_BOOTSTRAP_ADMIN_PASSWORD is required with IDP_BOOTSTRAP_ADMIN_USERNAME")
    realm = master_realm()
    if User.objects.filter(realm=realm, username=username).exists():
        return None
    user = User(realm=realm, username=username, enabled=True)
    user.set_password(password)
    user.save()
    for name in ("admin", "create-realm"):
        role, _ = Role.objects.get_or_create(realm=realm, client=None, name=name)
        user.roles.add(role)
    if realm.default_role_id:
        user.roles.add(realm.default_role_id)
    logger.info("bootstrap admin %r created in realm master", username)
    return user


def ensure_demo_realm():
    """A realm to try things with in dev mode: a public PKCE client and one user, imported from
    a Keycloak representation like any other realm.

    Returns the demo user's generated password when the realm is created, else None."""
    if Realm.objects.filter(name=DEMO_REALM).exists():
        return None
    password = random_secret(12)
    import_realm({
        "realm": DEMO_REALM,
        "displayName": "Demo",
        "enabled": True,
        "clients": [{
            "clientId": DEMO_CLIENT,
            "name": "Demo application",
            "publicClient": True,
            "standardFlowEnabled": True,
            "redirectUris": DEMO_REDIRECT_URIS,
            "webOrigins": ["+"],
            "attributes": {"pkce.code.challenge.method": "S256", "post.logout.redirect.uris": "+"},
        }],
        "users": [{
            "username": "alice", "email": "alice@example.org", "emailVerified": True,
            "firstName": "Alice", "lastName": "Demo", "enabled": True,
            "credentials": [{"type": "password", "value": password}],
            "realmRoles": [f"default-roles-{DEMO_REALM}"],
        }],
    })
    return password
