"""Roles and groups."""
from django.db import models
from django.db.models import Q

from .clients import Client
from .fields import IdField
from .realm import RealmOwned


class Role(RealmOwned):
    """A realm role (client is null) or a client role; composites contain other roles."""

    id = IdField()
    client = models.ForeignKey(Client, null=True, blank=True, on_delete=models.CASCADE, related_name="roles")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    composites = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="parents")

    class Meta:
        ordering = ["client_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["realm", "name"], condition=Q(client__isnull=True), name="uniq_realm_role_name"
            ),
            models.UniqueConstraint(
                fields=["client", "name"], condition=Q(client__isnull=False), name="uniq_client_role_name"
            ),
        ]

    def __str__(self):
        return f"{self.client.client_id}:{self.name}" if self.client_id else self.name

    @property
    def composite(self):
        return self.composites.exists()


class Group(RealmOwned):
    """A node in the realm's group tree; members inherit its and its ancestors' role mappings."""

    id = IdField()
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    roles = models.ManyToManyField(Role, blank=True, related_name="groups")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["realm", "name"], condition=Q(parent__isnull=True), name="uniq_top_group_name"
            ),
            models.UniqueConstraint(
                fields=["parent", "name"], condition=Q(parent__isnull=False), name="uniq_sub_group_name"
            ),
        ]

    def __str__(self):
        return self.path

    @property
    def path(self):
        names, node = [], self
        while node is not None:
            names.append(node.name)
            node = node.parent
        return "/" + "/".join(reversed(names))
