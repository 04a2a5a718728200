"""First-start setup: the bootstrap admin of the master realm and, in dev mode, a demo realm."""
import logging
import os

from django.db import transaction

from ..data.crypto import random_secret
from ..errors import RealmsError
from ..models import Client, Realm, Role, User, has_realm_role
from ..users.accounts import create_user, enable_service_account
from . import import_realm
from .services import add_default_client_scopes, create_realm

logger = logging.getLogger("idp.bootstrap")

DEMO_REALM = "demo"
DEMO_CLIENT = "demo-app"
DEMO_REDIRECT_URIS = ["http://localhost:8000/callback", "http://127.0.0.1/callback"]
DEMO_CALLBACK_PATH = "/demo/callback"  # the server's own demo page (oidc.demo)


def master_realm():
    return Realm.objects.filter(name="master").first() or create_realm("master")


# Keycloak 26 marks the admins bootstrap-admin creates as temporary (the console says so).
TEMPORARY_ADMIN = "is_temporary_admin"
ADMIN_ROLES = ("admin", "create-realm")


class BootstrapError(RealmsError, ValueError):
    """An admin that cannot be created (a name taken, no password)."""


def _grant_admin(realm, user):
    for name in ADMIN_ROLES:
        role, _ = Role.objects.get_or_create(realm=realm, client=None, name=name)
        user.roles.add(role)


@transaction.atomic
def create_admin_user(username, password, *, temporary=True):
    """A master-realm user holding the admin roles (Keycloak's ``bootstrap-admin user``)."""
    if not username:
        raise BootstrapError("a username is required")
    if not password:
        raise BootstrapError("a password is required")
    realm = master_realm()
    if User.objects.filter(realm=realm, username__iexact=username).exists():
        raise BootstrapError(f"user '{username}' already exists in realm master")
    user = create_user(realm, username, password=password, enabled=True,
                       attributes={TEMPORARY_ADMIN: ["true"]} if temporary else {})
    _grant_admin(realm, user)
    logger.info("admin user %r created in realm master", username)
    return user


@transaction.atomic
def create_admin_service(client_id, secret):
    """A confidential master-realm client whose service account holds the admin roles
    (Keycloak's ``bootstrap-admin service``)."""
    if not client_id:
        raise BootstrapError("a client id is required")
    if not secret:
        raise BootstrapError("a client secret is required")
    realm = master_realm()
    if Client.objects.filter(realm=realm, client_id=client_id).exists():
        raise BootstrapError(f"client '{client_id}' already exists in realm master")
    client = Client(realm=realm, client_id=client_id, public_client=False, standard_flow_enabled=False,
                    service_accounts_enabled=True, attributes={TEMPORARY_ADMIN: "true"})
    client.set_secret(secret)
    client.save()
    add_default_client_scopes(client)  # the tokens carry its subject and roles, as any new client's
    _grant_admin(realm, enable_service_account(client))
    logger.info("admin service client %r created in realm master", client_id)
    return client


def admin_exists():
    """Whether any enabled master-realm user or service account holds the admin role."""
    realm = Realm.objects.filter(name="master").first()
    return realm is not None and any(
        has_realm_role(user, "admin") for user in User.objects.filter(realm=realm, enabled=True))


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
    if User.objects.filter(realm=master_realm(), username__iexact=username).exists():
        return None
    return create_admin_user(username, password, temporary=False)


NO_ADMIN_WARNING = (
    "WARNING: realm master has no administrator, so nobody can sign in to the admin console. Create one with\n"
    "  manage.py bootstrap_admin user --username NAME --password:env VARIABLE\n"
    "or start once with IDP_BOOTSTRAP_ADMIN_USERNAME and IDP_BOOTSTRAP_ADMIN_PASSWORD set.")


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


def ensure_demo_callback(base):
    """Let the demo client redirect to this server's demo callback page at ``base`` (the port
    is known only at start). Returns that redirect URI."""
    uri = base + DEMO_CALLBACK_PATH
    client = Client.objects.filter(realm__name=DEMO_REALM, client_id=DEMO_CLIENT).first()
    if client is not None and uri not in client.redirect_uris:
        client.redirect_uris = [*client.redirect_uris, uri]
        client.save(update_fields=["redirect_uris"])
    return uri
