"""Clients, client scopes (and a realm's default ones) and protocol mappers."""
import hashlib

from django.db import models
from django.db.models import Q
from django.utils import timezone

from ..data import crypto
from .fields import IdField
from .realm import Realm, RealmOwned


class ClientScope(RealmOwned):
    """A named bundle of protocol mappers and role scope mappings (profile, email, roles ...)."""

    id = IdField()
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    protocol = models.CharField(max_length=32, default="openid-connect")
    attributes = models.JSONField(default=dict, blank=True)
    scope_roles = models.ManyToManyField("Role", blank=True, related_name="scoped_in_client_scopes")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_scope_name_per_realm")]

    def __str__(self):
        return self.name

    @property
    def include_in_token_scope(self):
        return self.attributes.get("include.in.token.scope", "true") == "true"


class RealmDefaultClientScope(models.Model):
    """Realm-level defaults copied onto new clients: default (always) or optional (on request)."""

    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="default_scope_links")
    client_scope = models.ForeignKey(ClientScope, on_delete=models.CASCADE, related_name="+")
    default = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["realm", "client_scope"], name="uniq_realm_default_scope")
        ]


class Client(RealmOwned):
    """An application (or a resource server) known to the realm."""

    id = IdField()
    client_id = models.CharField(max_length=255, help_text="clientId; for SAML the entity id.")
    name = models.CharField(max_length=255, blank=True)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    always_display_in_console = models.BooleanField(default=False)
    protocol = models.CharField(max_length=32, default="openid-connect")
    public_client = models.BooleanField(default=False, help_text="Client authentication off.")
    bearer_only = models.BooleanField(default=False)
    client_authenticator_type = models.CharField(max_length=64, default="client-secret")
    # The secret is kept encrypted (client_secret_jwt needs the key itself) beside a SHA-256
    # digest, so checking a presented secret costs one hash and a constant-time compare.
    secret_encrypted = models.TextField(blank=True, editable=False)
    secret_digest = models.CharField(max_length=64, blank=True, editable=False)
    registration_access_token = models.CharField(max_length=255, blank=True)

    standard_flow_enabled = models.BooleanField(default=True)
    implicit_flow_enabled = models.BooleanField(default=False)
    direct_access_grants_enabled = models.BooleanField(default=False)
    service_accounts_enabled = models.BooleanField(default=False)
    authorization_services_enabled = models.BooleanField(default=False)
    consent_required = models.BooleanField(default=False)
    full_scope_allowed = models.BooleanField(default=True)
    frontchannel_logout = models.BooleanField(default=True)
    surrogate_auth_required = models.BooleanField(default=False)

    root_url = models.CharField(max_length=1024, blank=True)
    base_url = models.CharField(max_length=1024, blank=True)
    admin_url = models.CharField(max_length=1024, blank=True)
    redirect_uris = models.JSONField(default=list, blank=True)
    web_origins = models.JSONField(default=list, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    authentication_flow_binding_overrides = models.JSONField(default=dict, blank=True)
    # Keycloak's authorizationSettings (ResourceServerRepresentation): the admin-permissions
    # client's fine-grained admin permissions, or an application's resource server (realms.authz).
    authorization_settings = models.JSONField(default=dict, blank=True, editable=False)
    node_re_registration_timeout = models.IntegerField(default=-1)
    not_before = models.IntegerField(default=0)

    client_scopes = models.ManyToManyField(
        ClientScope, through="ClientScopeLink", blank=True, related_name="clients"
    )
    scope_roles = models.ManyToManyField("Role", blank=True, related_name="scoped_in_clients")
    created = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["client_id"]
        constraints = [models.UniqueConstraint(fields=["realm", "client_id"], name="uniq_client_id_per_realm")]

    def __str__(self):
        return self.client_id

    @property
    def confidential(self):
        return not self.public_client and not self.bearer_only

    def set_secret(self, secret):
        self.secret_encrypted = crypto.encrypt(secret) if secret else ""
        self.secret_digest = hashlib.sha256(secret.encode()).hexdigest() if secret else ""

    def get_secret(self):
        return crypto.decrypt(self.secret_encrypted) if self.secret_encrypted else ""

    def check_secret(self, presented):
        if not self.secret_digest or not presented:
            return False
        return crypto.constant_time_equals(
            hashlib.sha256(presented.encode()).hexdigest(), self.secret_digest
        )

    def regenerate_secret(self):
        secret = crypto.random_secret()
        self.set_secret(secret)
        return secret

    @property
    def pkce_method(self):
        return self.attributes.get("pkce.code.challenge.method", "")


class ClientScopeLink(models.Model):
    """A client scope assigned to a client, as a default scope or an optional one."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="scope_links")
    client_scope = models.ForeignKey(ClientScope, on_delete=models.CASCADE, related_name="client_links")
    default = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "client_scope"], name="uniq_client_scope_link")]


class ProtocolMapper(models.Model):
    """Writes one claim (OIDC) or attribute (SAML); belongs to a client or to a client scope."""

    id = IdField()
    client = models.ForeignKey(Client, null=True, blank=True, on_delete=models.CASCADE, related_name="protocol_mappers")
    client_scope = models.ForeignKey(
        ClientScope, null=True, blank=True, on_delete=models.CASCADE, related_name="protocol_mappers"
    )
    name = models.CharField(max_length=255)
    protocol = models.CharField(max_length=32, default="openid-connect")
    protocol_mapper = models.CharField(max_length=255, help_text="Mapper type, e.g. oidc-audience-mapper.")
    consent_required = models.BooleanField(default=False)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(client__isnull=False) ^ Q(client_scope__isnull=False), name="mapper_has_one_owner"
            )
        ]

    def __str__(self):
        return self.name
