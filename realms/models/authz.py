"""Authorization Services' permission tickets: what the owner of a user-managed resource shared
with another user, or what that user asked for (Keycloak's PermissionTicket). The resources
themselves are in their resource server's settings (``Client.authorization_settings``)."""
from django.db import models

from .fields import IdField
from .realm import RealmOwned


class PermissionTicket(RealmOwned):
    """``requester`` may use ``scope`` (a scope name; empty: the whole resource) of the resource
    ``resource_id`` of the resource server ``client``, owned by ``owner``, once ``granted_at`` is
    set; until then it is a request awaiting the owner."""

    id = IdField()
    client = models.ForeignKey("Client", on_delete=models.CASCADE, related_name="permission_tickets")
    resource_id = models.CharField(max_length=64)
    scope = models.CharField(max_length=255, blank=True)
    owner = models.ForeignKey("User", on_delete=models.CASCADE, related_name="+")
    requester = models.ForeignKey("User", on_delete=models.CASCADE, related_name="permission_tickets")
    created_at = models.DateTimeField(auto_now_add=True)
    granted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "resource_id", "scope", "requester"],
                                               name="permission_ticket_unique")]
        indexes = [models.Index(fields=["requester", "client"])]
