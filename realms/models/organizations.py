"""Organizations, their domains and members."""
from django.db import models

from .fields import IdField
from .realm import RealmOwned
from .users import User


class Organization(RealmOwned):
    """Keycloak 26's organization: a named set of the realm's users (its members) with e-mail
    domains. Kept in its own tables, not behind a hidden group as Keycloak does: members get no
    roles from it and it never shows among the realm's groups."""

    id = IdField()
    name = models.CharField(max_length=255)
    alias = models.CharField(max_length=255, help_text="Set once; the token claim's key.")
    enabled = models.BooleanField(default=True)
    description = models.TextField(blank=True)
    redirect_url = models.CharField(max_length=2048, blank=True)
    attributes = models.JSONField(default=dict, blank=True)  # name -> [values], as a group's
    members = models.ManyToManyField(User, through="OrganizationMember", related_name="organizations")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_org_name"),
                       models.UniqueConstraint(fields=["realm", "alias"], name="uniq_org_alias")]

    def __str__(self):
        return self.name


class OrganizationDomain(RealmOwned):
    """An e-mail domain of an organization: one organization per domain in a realm."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="domains")
    name = models.CharField(max_length=255)
    verified = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_org_domain")]


class OrganizationMember(models.Model):
    """A user's membership: MANAGED when the organization provisioned the user (Keycloak: through
    its identity provider; removing the membership removes the user), else UNMANAGED."""

    MANAGED, UNMANAGED = "MANAGED", "UNMANAGED"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="organization_memberships")
    membership_type = models.CharField(max_length=16, default=UNMANAGED,
                                       choices=[(MANAGED, MANAGED), (UNMANAGED, UNMANAGED)])

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "user"], name="uniq_org_member")]
