"""Permission tickets (``realms.models.PermissionTicket``): what owners of user-managed resources
shared, and the requests awaiting them."""
from django.db.models import Q

from ..models import PermissionTicket

WHOLE = ""  # a ticket's scope for the whole resource


def shared_with(client, user):
    """{resource id: scope names (``WHOLE`` for all)} the owners granted ``user`` on the resource
    server ``client``."""
    shared = {}
    for resource_id, scope in PermissionTicket.objects.filter(
            client=client, requester=user, granted_at__isnull=False).values_list("resource_id", "scope"):
        shared.setdefault(resource_id, set()).add(scope)
    return shared


def request(client, resource, requester, scopes):
    """Keycloak's ``submit_request``: a pending ticket per scope asked (the whole resource when
    none) on a user-managed resource of another user; those already there are kept."""
    owner_id = resource.get("owner", {}).get("id")
    if not resource.get("ownerManagedAccess") or owner_id in (None, requester.pk):
        return 0
    made = 0
    for scope in scopes or [WHOLE]:
        _, created = PermissionTicket.objects.get_or_create(
            client=client, resource_id=resource["_id"], scope=scope, requester=requester,
            defaults={"realm_id": client.realm_id, "owner_id": owner_id})
        made += created
    return made


def forget(client, resource_id=None, scope=None):
    """The tickets of a resource or a scope that is gone."""
    where = Q(client=client)
    if resource_id is not None:
        where &= Q(resource_id=resource_id)
    if scope is not None:
        where &= Q(scope=scope)
    PermissionTicket.objects.filter(where).delete()
