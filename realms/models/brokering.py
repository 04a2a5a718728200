"""Identity brokering's tables: a realm's identity providers (Keycloak's
``IdentityProviderRepresentation``), their mappers, the organizations they serve, and the links
between a user and their account at a provider (Keycloak's federated identities)."""
from django.db import models

from .fields import IdentityProviderConfigField, IdField
from .organizations import Organization
from .realm import RealmOwned
from .users import User


class IdentityProvider(RealmOwned):
    """An upstream OpenID Connect, OAuth 2 or SAML provider (or a social preset) users may sign in
    with. ``provider_id`` names its type (``oidc``, ``keycloak-oidc``, ``oauth2``, ``saml``,
    ``google`` ...: the registry in ``realms.brokering.providers``); ``config`` is Keycloak's string
    map for that type (``clientId``, ``authorizationUrl``, ``syncMode``, ``guiOrder`` ...), its
    ``clientSecret`` sealed at rest. Keycloak keeps ``syncMode`` and ``guiOrder`` in the map too,
    so an export round-trips unchanged."""

    IMPORT, LEGACY, FORCE = "IMPORT", "LEGACY", "FORCE"
    SYNC_MODES = (IMPORT, LEGACY, FORCE)

    internal_id = IdField()
    alias = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255, blank=True)
    provider_id = models.CharField(max_length=64)
    enabled = models.BooleanField(default=True)
    trust_email = models.BooleanField(default=False)
    store_token = models.BooleanField(default=False)
    add_read_token_role_on_create = models.BooleanField(default=False)
    link_only = models.BooleanField(default=False)
    hide_on_login = models.BooleanField(default=False)
    # "" for the realm's first broker login flow; post broker login runs only when named.
    first_broker_login_flow_alias = models.CharField(max_length=255, blank=True)
    post_broker_login_flow_alias = models.CharField(max_length=255, blank=True)
    config = IdentityProviderConfigField(default=dict, blank=True)

    class Meta:
        ordering = ["alias"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="uniq_idp_alias")]

    def __str__(self):
        return self.alias

    @property
    def sync_mode(self):
        mode = self.config.get("syncMode", "")
        return mode if mode in self.SYNC_MODES else self.LEGACY

    @property
    def gui_order(self):
        try:
            return int(self.config.get("guiOrder") or 0)
        except ValueError:
            return 0


class IdentityProviderMapper(RealmOwned):
    """Keycloak's identity provider mapper: applied to the user on every brokered sign-in, as
    the provider's sync mode (or the mapper's own ``syncMode``) says."""

    id = IdField()
    name = models.CharField(max_length=255)
    identity_provider = models.ForeignKey(IdentityProvider, on_delete=models.CASCADE, related_name="mappers")
    mapper_type = models.CharField(max_length=255)  # Keycloak's identityProviderMapper
    config = models.JSONField(default=dict, blank=True)  # name -> string, as Keycloak's

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["identity_provider", "name"], name="uniq_idp_mapper_name")]


class OrganizationIdentityProvider(models.Model):
    """An identity provider serving an organization (several organizations may share one, as in
    Keycloak 26.8). ``domain`` is the organization's e-mail domain the provider is for (Keycloak's
    ``kc.org.domain``, ``ANY`` for any of its domains); ``redirect_when_email_matches`` sends a
    user whose e-mail has that domain straight to the provider at identity-first login."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="identity_provider_links")
    identity_provider = models.ForeignKey(IdentityProvider, on_delete=models.CASCADE,
                                          related_name="organization_links")
    domain = models.CharField(max_length=255, blank=True)
    redirect_when_email_matches = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "identity_provider"], name="uniq_org_idp")]


class FederatedIdentity(RealmOwned):
    """A user's account at an identity provider: the provider's id and username for them, and its
    tokens when the provider stores them (sealed at rest)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="federated_identities")
    identity_provider = models.ForeignKey(IdentityProvider, on_delete=models.CASCADE, related_name="links")
    subject = models.CharField(max_length=255)  # the provider's id for the user (Keycloak's userId)
    user_name = models.CharField(max_length=255, blank=True)
    token = models.TextField(blank=True)  # sealed with realms.data.crypto; "" when not stored

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["identity_provider", "user"], name="uniq_idp_link_user"),
            models.UniqueConstraint(fields=["identity_provider", "subject"], name="uniq_idp_link_subject"),
        ]
