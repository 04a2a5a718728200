"""A realm's stored sign-in flows: flows, executions, authenticator configs and required-action
definitions."""
from django.db import models

from .fields import IdField
from .realm import RealmOwned


class AuthenticationFlow(RealmOwned):
    """A sign-in flow (Keycloak's AuthenticationFlowModel): its executions run in priority order.
    Top-level flows are what the realm's bindings and clients' overrides name; the others are
    sub-flows. Built-in flows come from ``realms.signin.flows`` (Keycloak 26's)."""

    BASIC, CLIENT, FORM = "basic-flow", "client-flow", "form-flow"
    PROVIDERS = [(BASIC, BASIC), (CLIENT, CLIENT), (FORM, FORM)]

    id = IdField()
    alias = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    provider_id = models.CharField(max_length=36, choices=PROVIDERS, default=BASIC)
    top_level = models.BooleanField(default=True)
    built_in = models.BooleanField(default=False)

    class Meta:
        ordering = ["alias"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="flow_alias_unique_in_realm")]

    def __str__(self):
        return self.alias


class AuthenticatorConfig(RealmOwned):
    """Named settings of one execution (e.g. a condition's role, ``loa-condition-level``)."""

    id = IdField()
    alias = models.CharField(max_length=255)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["alias"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="authenticator_config_alias_unique")]

    def __str__(self):
        return self.alias


class AuthenticationExecution(RealmOwned):
    """One entry of a flow: a step (``authenticator``, a provider id) or a sub-flow
    (``sub_flow``; a form flow's execution has both, the form's provider id and its flow)."""

    REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED = "REQUIRED", "ALTERNATIVE", "CONDITIONAL", "DISABLED"
    REQUIREMENTS = [(r, r) for r in (REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED)]

    id = IdField()
    flow = models.ForeignKey(AuthenticationFlow, on_delete=models.CASCADE, related_name="executions")
    authenticator = models.CharField(max_length=255, blank=True)
    sub_flow = models.ForeignKey(AuthenticationFlow, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="parent_executions")
    requirement = models.CharField(max_length=16, choices=REQUIREMENTS, default=DISABLED)
    priority = models.IntegerField(default=0)
    authenticator_config = models.ForeignKey(AuthenticatorConfig, null=True, blank=True, on_delete=models.SET_NULL,
                                             related_name="executions")
    user_setup_allowed = models.BooleanField(default=False)

    class Meta:
        ordering = ["priority", "id"]

    def __str__(self):
        return self.authenticator or "(sub-flow)"  # no query: the sub-flow may already be gone


class RequiredActionProvider(RealmOwned):
    """A required action as the realm configures it (Keycloak's RequiredActionProviderModel):
    ``enabled`` (a disabled one is not asked for), ``default_action`` (given to new users)."""

    id = IdField()
    alias = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    provider_id = models.CharField(max_length=255)
    enabled = models.BooleanField(default=True)
    default_action = models.BooleanField(default=False)
    priority = models.IntegerField(default=0)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["priority", "name"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="required_action_alias_unique")]

    def __str__(self):
        return self.alias
