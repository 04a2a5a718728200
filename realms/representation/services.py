"""Realm-level operations shared by the admin console, bootstrap and the protocols.

A created realm is an import of a minimal representation, so it gets exactly the built-ins
(clients, roles, client scopes and mappers, an RS256 key) an imported realm gets.
"""
from ..models import ClientScopeLink, Realm
from . import REALM_FIELDS, import_realm

MASTER = "master"


def _json_settings(fields):
    """Model field names -> RealmRepresentation keys (policy dicts are spread out)."""
    by_field = {f: k for k, (f, _) in REALM_FIELDS.items()}
    data = {}
    for name, value in fields.items():
        if name in ("otp_policy", "webauthn_policy"):
            data.update(value)
        elif name in by_field:
            data[by_field[name]] = value
        else:
            raise TypeError(f"create_realm() got an unknown realm field {name!r}")
    return data


def create_realm(name, **fields) -> Realm:
    """A new realm with Keycloak's built-ins; ``fields`` are Realm model fields.

    Raises RepresentationError if the realm exists or a value is invalid."""
    return import_realm({**_json_settings(fields), "realm": name}).realm


def add_default_client_scopes(client):
    """Link the realm's default and optional client scopes of the client's protocol (what
    Keycloak does for every new client). Scopes already linked are left as they are."""
    linked = set(client.scope_links.values_list("client_scope_id", flat=True))
    rows = [
        ClientScopeLink(client=client, client_scope=link.client_scope, default=link.default)
        for link in client.realm.default_scope_links.select_related("client_scope")
        if link.client_scope.protocol == client.protocol and link.client_scope_id not in linked
    ]
    ClientScopeLink.objects.bulk_create(rows)


def ensure_master_realm(sender=None, using="default", **kwargs):
    """post_migrate hook: a ``master`` realm exists after migrations (also in test databases)."""
    from django.db import connections

    if Realm._meta.db_table not in connections[using].introspection.table_names():
        return
    if not Realm.objects.using(using).filter(name=MASTER).exists():
        create_realm(MASTER)
