"""Changing a realm's stored flows and required actions, as Keycloak's
AuthenticationManagementResource does: one set of rules for the Admin REST API and the console.

Built-in flows cannot gain, lose or reorder executions (Keycloak's rule; copy one to change it),
but their requirements can be set. Every change bumps the realm's cached configuration (the
models' signals), so the next sign-in runs the new flow."""
from django.db import transaction
from django.db.models import Max

from ..errors import RealmsError
from ..models import AuthenticationExecution, AuthenticationFlow, AuthenticatorConfig, Client, RequiredActionProvider
from ..signin import flows

REQUIREMENTS = [r for r, _ in AuthenticationExecution.REQUIREMENTS]
FLOW_TYPES = [p for p, _ in AuthenticationFlow.PROVIDERS]


class FlowError(RealmsError):
    """A refused change: ``status`` 400 (illegal), 404 (not found) or 409 (name taken)."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.message = message
        self.status = status


def flow_by_alias(realm, alias):
    flow = AuthenticationFlow.objects.filter(realm=realm, alias=alias).first()
    if flow is None:
        raise FlowError("Flow not found", 404)
    return flow


def flow_by_id(realm, flow_id):
    flow = AuthenticationFlow.objects.filter(realm=realm, pk=flow_id).first()
    if flow is None:
        raise FlowError("Could not find flow with id", 404)
    return flow


def execution_by_id(realm, execution_id):
    execution = AuthenticationExecution.objects.filter(realm=realm, pk=execution_id).select_related(
        "flow", "sub_flow", "authenticator_config").first()
    if execution is None:
        raise FlowError("Illegal execution", 404)
    return execution


def _alias_free(realm, alias, message):
    if not alias:
        raise FlowError(message.replace("{}", ""), 409)
    if AuthenticationFlow.objects.filter(realm=realm, alias=alias).exists():
        raise FlowError(message.format(alias), 409)


@transaction.atomic
def create_flow(realm, alias, description="", provider_id=AuthenticationFlow.BASIC, top_level=True):
    if not alias:
        raise FlowError("Failed to create flow with empty alias name", 409)
    _alias_free(realm, alias, "Flow {} already exists")
    if provider_id not in FLOW_TYPES:
        raise FlowError(f"Unknown flow type {provider_id}")
    return AuthenticationFlow.objects.create(realm=realm, alias=alias, description=description or "",
                                             provider_id=provider_id, top_level=top_level)


@transaction.atomic
def copy_flow(realm, flow, new_name):
    """A changeable copy (not built in) with copies of its sub-flows (``<new name> <alias>``)
    and of their executions' configs, as Keycloak's copy."""
    if not new_name:
        raise FlowError("Failed to create flow with empty alias name", 409)
    _alias_free(realm, new_name, "New flow alias name already exists")
    copy = AuthenticationFlow.objects.create(realm=realm, alias=new_name, description=flow.description,
                                             provider_id=flow.provider_id, top_level=flow.top_level)
    _copy_executions(realm, new_name, flow, copy)
    return copy


def _copy_executions(realm, new_name, source, target):
    for e in source.executions.select_related("sub_flow", "authenticator_config"):
        sub = None
        if e.sub_flow_id:
            alias = f"{new_name} {e.sub_flow.alias}"
            _alias_free(realm, alias, "Flow {} already exists")
            sub = AuthenticationFlow.objects.create(realm=realm, alias=alias, description=e.sub_flow.description,
                                                    provider_id=e.sub_flow.provider_id, top_level=False)
            _copy_executions(realm, new_name, e.sub_flow, sub)
        config = None
        if e.authenticator_config_id:
            alias = f"{new_name} {e.authenticator_config.alias}"
            if AuthenticatorConfig.objects.filter(realm=realm, alias=alias).exists():
                raise FlowError(f"Authentication execution configuration {alias} already exists.", 409)
            config = AuthenticatorConfig.objects.create(realm=realm, alias=alias,
                                                        config=dict(e.authenticator_config.config))
        AuthenticationExecution.objects.create(
            realm=realm, flow=target, authenticator=e.authenticator, sub_flow=sub, requirement=e.requirement,
            priority=e.priority, authenticator_config=config, user_setup_allowed=e.user_setup_allowed)


@transaction.atomic
def rename_flow(realm, flow, alias, description):
    """New alias and description; the realm's bindings follow the flow (they name it by alias)."""
    if not alias:
        raise FlowError("Failed to update flow with empty alias name", 409)
    if alias != flow.alias and AuthenticationFlow.objects.filter(realm=realm, alias=alias).exists():
        raise FlowError("Flow alias name already exists", 409)
    bound = [field for field in _REALM_BINDINGS if getattr(realm, field) == flow.alias]
    flow.alias, flow.description = alias, description or ""
    flow.save(update_fields=["alias", "description"])
    for field in bound:
        setattr(realm, field, alias)
    if bound:
        realm.save(update_fields=bound)


# Every realm field naming a flow by alias (the engine's bindings and the protocol ones).
_REALM_BINDINGS = (*flows.BINDINGS.values(), "client_authentication_flow", "docker_authentication_flow")


def bound_as(realm, flow):
    """Where ``flow`` is in use: the realm's bindings and clients' overrides naming it."""
    uses = [field for field in _REALM_BINDINGS if getattr(realm, field) == flow.alias]
    for client in Client.objects.filter(realm=realm).exclude(authentication_flow_binding_overrides={}):
        if flow.pk in (client.authentication_flow_binding_overrides or {}).values():
            uses.append(f"client {client.client_id}")
    return uses


@transaction.atomic
def delete_flow(realm, flow):
    """A flow and its sub-flows (deep, as Keycloak). Built-in flows and flows in use stay."""
    if flow.built_in:
        raise FlowError("Can't delete built in flow")
    uses = bound_as(realm, flow)
    if uses:
        raise FlowError(f"Cannot delete flow {flow.alias}: it is used by {', '.join(uses)}")
    _delete_deep(flow)


def _delete_deep(flow):
    for e in flow.executions.select_related("sub_flow", "authenticator_config"):
        _delete_execution_deep(e)
    flow.delete()


def _delete_execution_deep(execution):
    sub, config = execution.sub_flow, execution.authenticator_config
    execution.delete()
    if config is not None and not config.executions.exists():
        config.delete()
    if sub is not None and not sub.top_level and not sub.parent_executions.exists():
        _delete_deep(sub)


def delete_unused(realm, flow_ids, config_ids):
    """What removed execution rows left behind (the console's inline delete): of the given
    sub-flows and configs, those no execution uses any more (sub-flows deep)."""
    for flow in AuthenticationFlow.objects.filter(realm=realm, pk__in=flow_ids, top_level=False,
                                                  parent_executions=None):
        _delete_deep(flow)
    AuthenticatorConfig.objects.filter(realm=realm, pk__in=config_ids, executions=None).delete()


def next_priority(flow):
    top = flow.executions.aggregate(top=Max("priority"))["top"]
    return 0 if top is None else top + 1


def _changeable(flow, verb):
    if flow.built_in:
        raise FlowError(f"It is illegal to {verb} a built in flow")


def requirement_choices(provider_id, flow_type=None):
    """Keycloak's requirementChoices: a sub-flow by its type; a condition REQUIRED/DISABLED; any
    other step REQUIRED/ALTERNATIVE/DISABLED."""
    if flow_type == AuthenticationFlow.BASIC:
        return ["REQUIRED", "ALTERNATIVE", "DISABLED", "CONDITIONAL"]
    if flow_type == AuthenticationFlow.FORM:
        return ["REQUIRED", "DISABLED"]
    if flow_type == AuthenticationFlow.CLIENT:
        return ["ALTERNATIVE", "REQUIRED", "DISABLED"]
    auth = flows.get_authenticator(provider_id)
    if auth is not None and auth.is_condition:
        return ["REQUIRED", "DISABLED"]
    return ["REQUIRED", "ALTERNATIVE", "DISABLED"]


@transaction.atomic
def add_execution(realm, flow, provider_id, priority=None):
    _changeable(flow, "add execution to")
    if flows.get_authenticator(provider_id) is None:
        raise FlowError(f"No authentication provider found for id: {provider_id}")
    choices = requirement_choices(provider_id)
    return AuthenticationExecution.objects.create(
        realm=realm, flow=flow, authenticator=provider_id,
        priority=next_priority(flow) if priority is None else priority,
        requirement=choices[0] if len(choices) == 1 else AuthenticationExecution.DISABLED)


@transaction.atomic
def add_sub_flow(realm, parent, alias, flow_type=AuthenticationFlow.BASIC, provider="", description="", priority=None):
    """A new sub-flow of ``parent`` with its execution (DISABLED, as Keycloak adds it)."""
    _changeable(parent, "add sub-flow to")
    if not alias:
        raise FlowError("Failed to create flow with empty alias name", 409)
    _alias_free(realm, alias, "New flow alias name already exists")
    if flow_type not in FLOW_TYPES:
        raise FlowError(f"Unknown flow type {flow_type}")
    sub = AuthenticationFlow.objects.create(realm=realm, alias=alias, description=description or "",
                                            provider_id=flow_type, top_level=False)
    execution = AuthenticationExecution.objects.create(
        realm=realm, flow=parent, sub_flow=sub, authenticator=provider if flow_type == AuthenticationFlow.FORM else "",
        requirement=AuthenticationExecution.DISABLED, priority=next_priority(parent) if priority is None else priority)
    return sub, execution


def set_requirement(execution, requirement, priority=None):
    if requirement not in REQUIREMENTS:
        raise FlowError(f"Invalid requirement {requirement}")
    execution.requirement = requirement
    fields = ["requirement"]
    if priority is not None:
        execution.priority = priority
        fields.append("priority")
    execution.save(update_fields=fields)


@transaction.atomic
def move(execution, up):
    """Swap priorities with the execution before (``up``) or after it, as raise-priority and
    lower-priority do."""
    _changeable(execution.flow, "modify execution in")
    siblings = list(execution.flow.executions.order_by("priority", "id"))
    index = next(i for i, e in enumerate(siblings) if e.pk == execution.pk)
    other = index - 1 if up else index + 1
    if not 0 <= other < len(siblings):
        return
    neighbour = siblings[other]
    execution.priority, neighbour.priority = neighbour.priority, execution.priority
    if execution.priority == neighbour.priority:  # equal priorities: make the order explicit
        execution.priority += -1 if up else 1
    execution.save(update_fields=["priority"])
    neighbour.save(update_fields=["priority"])


@transaction.atomic
def delete_execution(execution):
    _changeable(execution.flow, "remove execution from")
    _delete_execution_deep(execution)


@transaction.atomic
def set_execution_config(realm, execution, alias, config):
    """The execution's config replaced by a new one named ``alias`` (Keycloak's POST
    executions/{id}/config)."""
    if not alias:
        raise FlowError("Failed to create authentication execution configuration with empty alias name", 409)
    previous = execution.authenticator_config
    other = AuthenticatorConfig.objects.filter(realm=realm, alias=alias).first()
    if other is not None and (previous is None or previous.pk != other.pk):
        raise FlowError(f"Authentication execution configuration {alias} already exists", 409)
    if previous is not None:
        previous.delete()
    new = AuthenticatorConfig.objects.create(realm=realm, alias=alias, config=config)
    execution.authenticator_config = new
    execution.save(update_fields=["authenticator_config"])
    return new


def bind(realm, field_name, flow):
    """Bind a top-level flow to one of the realm's purposes (``browser_flow`` ...)."""
    if not flow.top_level:
        raise FlowError(f"Flow {flow.alias} is not a top-level flow")
    allowed = [alias for alias, _ in realm._meta.get_field(field_name).choices or ()]
    if allowed and flow.alias not in allowed:  # a binding nothing here would run (decision 0064)
        raise FlowError(f"Only the built-in flow {', '.join(allowed)} can be bound as the "
                        f"{realm._meta.get_field(field_name).verbose_name}")
    setattr(realm, field_name, flow.alias)
    realm.save(update_fields=[field_name])


def override(client, binding, flow):
    """A client's own flow for ``browser`` or ``direct_grant`` (None: the realm's)."""
    overrides = dict(client.authentication_flow_binding_overrides or {})
    if flow is None:
        overrides.pop(binding, None)
    elif not flow.top_level:
        raise FlowError(f"Flow {flow.alias} is not a top-level flow")
    else:
        overrides[binding] = flow.pk
    client.authentication_flow_binding_overrides = overrides
    client.save(update_fields=["authentication_flow_binding_overrides"])


def next_required_action_priority(realm):
    top = RequiredActionProvider.objects.filter(realm=realm).aggregate(top=Max("priority"))["top"]
    return 0 if top is None else top + 1
