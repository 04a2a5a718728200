"""User-managed access as the account console offers it (Keycloak's account ResourcesService and
ResourceService): the resources a user owns on the realm's resource servers, whom they are
shared with, the requests awaiting their owner, and what others shared with the user. A share is
a granted permission ticket (``tickets``), the very rows the UMA grant reads, so a share or a
revoke here changes what the other user's next UMA request is granted."""
from django.db.models import Q
from django.utils import timezone

from ..administration.admin_permissions import PERMISSIONS_CLIENT
from ..errors import RealmsError
from ..models import Client, PermissionTicket, User
from .tickets import WHOLE


class Refused(RealmsError, ValueError):
    """A share Keycloak refuses: ``code`` is its error (``invalid_permissions``, ``invalid_scope``)."""

    def __init__(self, code, detail=""):
        super().__init__(code)
        self.code, self.detail = code, detail


class UnknownUser(RealmsError, LookupError):
    """No user of the realm has that username or e-mail (Keycloak's NotFoundException)."""


def servers(realm):
    """The realm's resource servers (the admin-permissions client's settings are no resources)."""
    return Client.objects.filter(realm=realm, authorization_services_enabled=True).exclude(
        client_id=PERMISSIONS_CLIENT).order_by("client_id")


def owned(realm, user, name=None):
    """[(resource server, resource)] the user owns, ``name`` a case-insensitive part of its name."""
    return [(client, r) for client in servers(realm) for r in client.authorization_settings.get("resources", [])
            if r.get("owner", {}).get("id") == user.pk and (not name or name.lower() in r["name"].lower())]


def find(realm, resource_id):
    """(resource server, resource) of that id, or (None, None)."""
    for client in servers(realm):
        for r in client.authorization_settings.get("resources", []):
            if r["_id"] == resource_id:
                return client, r
    return None, None


def find_user(realm, value):
    """The user named by username, else by e-mail (Keycloak's ResourceService.getUser)."""
    user = User.objects.filter(realm=realm, username=(value or "").lower()).first() or User.objects.filter(
        realm=realm, email__iexact=value or "").exclude(email="").first()
    if user is None:
        raise UnknownUser(value)
    return user


def _by_requester(tickets):
    """{requester: [scope names]} in the requesters' username order."""
    out = {}
    for ticket in tickets.select_related("requester").order_by("requester__username", "scope"):
        scopes = out.setdefault(ticket.requester, [])
        if ticket.scope != WHOLE:
            scopes.append(ticket.scope)
    return out


def granted(client, resource, owner):
    """Whom the owner shared the resource with: {user: [scope names]}."""
    return _by_requester(PermissionTicket.objects.filter(client=client, resource_id=resource["_id"], owner=owner,
                                                         granted_at__isnull=False))


def requests(client, resource, owner):
    """The requests awaiting the owner's answer: {user: [scope names]}."""
    return _by_requester(PermissionTicket.objects.filter(client=client, resource_id=resource["_id"], owner=owner,
                                                         granted_at__isnull=True))


def _scope_name(client, resource, ref):
    """A scope of the resource given by name or id."""
    for scope in client.authorization_settings.get("scopes", []):
        if ref in (scope["name"], scope["id"]) and scope["name"] in [s["name"] for s in resource["scopes"]]:
            return scope["name"]
    raise Refused("invalid_scope", f"Scope {ref} is not a scope of resource {resource['name']}")


def share(client, resource, owner, requester, scopes):
    """Keycloak's ``PUT resources/{id}/permissions`` for one user: afterwards the requester holds
    exactly ``scopes`` (names or ids of the resource's scopes), granted (a pending request for one
    of them is approved); every other ticket of theirs on the resource is removed, so ``[]``
    revokes everything and denies what was asked."""
    if requester.pk == owner.pk:
        raise Refused("invalid_permissions", "The owner holds the resource already")
    names = [_scope_name(client, resource, ref) for ref in scopes]
    now = timezone.now()
    held = PermissionTicket.objects.filter(client=client, resource_id=resource["_id"], requester=requester)
    held.filter(~Q(scope__in=names)).delete()
    held.filter(scope__in=names, granted_at__isnull=True).update(granted_at=now)
    present = set(held.values_list("scope", flat=True))
    PermissionTicket.objects.bulk_create([
        PermissionTicket(realm_id=client.realm_id, client=client, resource_id=resource["_id"], scope=name,
                         owner=owner, requester=requester, granted_at=now)
        for name in dict.fromkeys(names) if name not in present])


def approve(client, resource, owner, requester):
    """The owner grants what the requester asked for (the whole resource when it has no scopes)."""
    PermissionTicket.objects.filter(client=client, resource_id=resource["_id"], owner=owner, requester=requester,
                                    granted_at__isnull=True).update(granted_at=timezone.now())


def deny(client, resource, owner, requester):
    """The owner refuses what the requester asked for (what was shared before stays)."""
    PermissionTicket.objects.filter(client=client, resource_id=resource["_id"], owner=owner, requester=requester,
                                    granted_at__isnull=True).delete()


def shared_with_me(realm, user, name=None):
    """[(resource server, resource, [scope names granted])] others shared with the user."""
    return _resources_of(realm, PermissionTicket.objects.filter(realm=realm, requester=user,
                                                                granted_at__isnull=False), name)


def pending(realm, user):
    """[(resource server, resource, [scope names])] the user asked for and awaits."""
    return _resources_of(realm, PermissionTicket.objects.filter(realm=realm, requester=user,
                                                                granted_at__isnull=True))


def _resources_of(realm, tickets, name=None):
    wanted = {}
    for client_id, resource_id, scope in tickets.order_by("created_at").values_list("client_id", "resource_id", "scope"):
        wanted.setdefault((client_id, resource_id), []).extend([] if scope == WHOLE else [scope])
    out = []
    for client in servers(realm).filter(pk__in={c for c, _ in wanted}):
        for r in client.authorization_settings.get("resources", []):
            if (client.pk, r["_id"]) in wanted and (not name or name.lower() in r["name"].lower()):
                out.append((client, r, wanted[(client.pk, r["_id"])]))
    return out
