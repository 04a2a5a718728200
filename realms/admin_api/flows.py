"""``/admin/realms/{realm}/authentication/...`` (Keycloak's AuthenticationManagementResource):
flows, their executions and configs, required actions and the providers this server has. Reading
needs view-realm, changing manage-realm; the rules are ``realms.administration.flow_admin``'s."""
from django.db import transaction
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..administration import flow_admin
from ..administration.flow_admin import FlowError
from ..audit import admin_events
from ..models import AuthenticationFlow, AuthenticatorConfig, RequiredActionProvider
from ..representation.authentication import config_rep, flow_rep, required_action_rep
from ..signin import flows
from ..users import actions
from . import errors
from .query import location
from .views import RealmResource

VIEW = "view-realm"
MANAGE = "manage-realm"
READ_WRITE = {"GET": VIEW, "POST": MANAGE, "PUT": MANAGE, "DELETE": MANAGE}


def _raise(error: FlowError):
    if error.status == 404:
        raise errors.NotFound(error.message)
    if error.status == 409:
        raise errors.Conflict(error.message)
    raise errors.BadRequest(error.message)


def _body(request):
    if not isinstance(request.data, dict):
        raise errors.Invalid("Expected a JSON object")
    return request.data


def _str(data, key, default=""):
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise errors.Invalid(f"{key}: expected a string")
    return value


def _int(data, key):
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise errors.Invalid(f"{key}: expected an integer")
    return value


class _Resource(RealmResource):
    required_role = READ_WRITE

    def handle_exception(self, exc):
        if isinstance(exc, FlowError):
            try:
                _raise(exc)
            except exceptions.APIException as api_error:
                exc = api_error
        return super().handle_exception(exc)

    def event(self, operation, resource_type, path, representation=None):
        admin_events.record(self.realm, operation, resource_type, f"authentication/{path}", auth=self.auth_details(),
                            representation=representation)

    def created(self, path):
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(self.request, f"{self.realm.name}/authentication/{path}")})


def _flow_rep(flow):
    return flow_rep(flow, list(flow.executions.select_related("sub_flow", "authenticator_config")))


# Flows ---------------------------------------------------------------------------------------

class Flows(_Resource):
    def get(self, request, realm):
        top = AuthenticationFlow.objects.filter(realm=self.realm, top_level=True).exclude(alias="saml ecp")
        return Response([_flow_rep(f) for f in top])

    def post(self, request, realm):
        data = _body(request)
        flow = flow_admin.create_flow(self.realm, _str(data, "alias"), _str(data, "description"),
                                      _str(data, "providerId", AuthenticationFlow.BASIC),
                                      data.get("topLevel", True) is True)
        self.event("CREATE", "AUTH_FLOW", f"flows/{flow.pk}", lambda: _flow_rep(flow))
        return self.created(f"flows/{flow.pk}")


class FlowDetail(_Resource):
    def get(self, request, realm, flow_id):
        return Response(_flow_rep(flow_admin.flow_by_id(self.realm, flow_id)))

    def put(self, request, realm, flow_id):
        flow = flow_admin.flow_by_id(self.realm, flow_id)
        data = _body(request)
        alias = _str(data, "alias")
        with transaction.atomic():
            flow_admin.rename_flow(self.realm, flow, alias, _str(data, "description", flow.description))
            self.event("UPDATE", "AUTH_FLOW", f"flows/{flow.pk}", lambda: _flow_rep(flow))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, flow_id):
        flow = flow_admin.flow_by_id(self.realm, flow_id)
        with transaction.atomic():
            flow_admin.delete_flow(self.realm, flow)
            self.event("DELETE", "AUTH_FLOW", f"flows/{flow_id}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class FlowCopy(_Resource):
    def post(self, request, realm, alias):
        data = _body(request)
        new_name = _str(data, "newName")
        if AuthenticationFlow.objects.filter(realm=self.realm, alias=new_name).exists():
            raise errors.Conflict("New flow alias name already exists")
        with transaction.atomic():
            copy = flow_admin.copy_flow(self.realm, flow_admin.flow_by_alias(self.realm, alias), new_name)
            self.event("CREATE", "AUTH_FLOW", f"flows/{alias}/copy", {"newName": new_name, "id": copy.pk})
        return self.created(f"flows/{alias}/copy/{copy.pk}")


# Executions ----------------------------------------------------------------------------------

def execution_info(execution, level, index):
    """Keycloak's AuthenticationExecutionInfoRepresentation."""
    rep = {"id": execution.pk, "requirement": execution.requirement, "level": level, "index": index,
           "priority": execution.priority}
    config = execution.authenticator_config
    if execution.sub_flow_id:
        sub = execution.sub_flow
        rep.update({"displayName": sub.alias, "description": sub.description, "configurable": False,
                    "authenticationFlow": True, "flowId": sub.pk,
                    "requirementChoices": flow_admin.requirement_choices("", sub.provider_id)})
        if sub.provider_id == AuthenticationFlow.FORM:
            rep["providerId"] = execution.authenticator
        return rep
    auth = flows.get_authenticator(execution.authenticator)
    configurable = bool(getattr(auth, "config_properties", ()))
    rep.update({"displayName": auth.display_name if auth is not None else execution.authenticator,
                "configurable": configurable, "providerId": execution.authenticator,
                "requirementChoices": flow_admin.requirement_choices(execution.authenticator)})
    if config is not None:
        rep["authenticationConfig"] = config.pk
        if configurable:
            rep["alias"] = config.alias
    return rep


def execution_infos(flow, level=0):
    out = []
    for index, e in enumerate(flow.executions.select_related("sub_flow", "authenticator_config")):
        out.append(execution_info(e, level, index))
        if e.sub_flow_id:
            out += execution_infos(e.sub_flow, level + 1)
    return out


def execution_rep(execution):
    """Keycloak's AuthenticationExecutionRepresentation."""
    rep = {"id": execution.pk, "requirement": execution.requirement, "priority": execution.priority,
           "authenticatorFlow": execution.sub_flow_id is not None, "parentFlow": execution.flow_id}
    if execution.authenticator:
        rep["authenticator"] = execution.authenticator
    if execution.sub_flow_id:
        rep["flowId"] = execution.sub_flow_id
    if execution.authenticator_config_id:
        rep["authenticatorConfig"] = execution.authenticator_config_id
    return rep


class FlowExecutions(_Resource):
    def get(self, request, realm, alias):
        return Response(execution_infos(flow_admin.flow_by_alias(self.realm, alias)))

    def put(self, request, realm, alias):
        """The requirement (and priority) of one execution of the flow, by ``id``."""
        flow = flow_admin.flow_by_alias(self.realm, alias)
        data = _body(request)
        execution = flow_admin.execution_by_id(self.realm, _str(data, "id"))
        if not _within(execution, flow):
            raise errors.NotFound("Illegal execution")
        requirement = _str(data, "requirement", execution.requirement)
        priority = _int(data, "priority")
        with transaction.atomic():
            flow_admin.set_requirement(execution, requirement, priority)
            self.event("UPDATE", "AUTH_EXECUTION", f"flows/{alias}/executions", data)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _within(execution, flow):
    """Whether ``execution`` belongs to ``flow`` or one of its sub-flows."""
    parent, seen = execution.flow, set()
    while parent.pk not in seen:
        if parent.pk == flow.pk:
            return True
        seen.add(parent.pk)
        holder = parent.parent_executions.select_related("flow").first()
        if holder is None:
            return False
        parent = holder.flow
    return False


class AddExecution(_Resource):
    def post(self, request, realm, alias):
        flow = AuthenticationFlow.objects.filter(realm=self.realm, alias=alias).first()
        if flow is None:
            raise errors.BadRequest("Parent flow doesn't exist")
        data = _body(request)
        with transaction.atomic():
            execution = flow_admin.add_execution(self.realm, flow, _str(data, "provider"), _int(data, "priority"))
            self.event("CREATE", "AUTH_EXECUTION", f"flows/{alias}/executions/execution", {**data, "id": execution.pk})
        return self.created(f"executions/{execution.pk}")


class AddSubFlow(_Resource):
    def post(self, request, realm, alias):
        flow = AuthenticationFlow.objects.filter(realm=self.realm, alias=alias).first()
        if flow is None:
            raise errors.BadRequest("Parent flow doesn't exist")
        data = _body(request)
        with transaction.atomic():
            sub, execution = flow_admin.add_sub_flow(
                self.realm, flow, _str(data, "alias"), _str(data, "type", AuthenticationFlow.BASIC),
                _str(data, "provider"), _str(data, "description"), _int(data, "priority"))
            self.event("CREATE", "AUTH_EXECUTION_FLOW", f"flows/{alias}/executions/flow", {**data, "id": execution.pk})
        return self.created(f"flows/{sub.pk}")


class ExecutionDetail(_Resource):
    def get(self, request, realm, execution_id):
        return Response(execution_rep(flow_admin.execution_by_id(self.realm, execution_id)))

    def delete(self, request, realm, execution_id):
        execution = flow_admin.execution_by_id(self.realm, execution_id)
        with transaction.atomic():
            flow_admin.delete_execution(execution)
            self.event("DELETE", "AUTH_EXECUTION", f"executions/{execution_id}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExecutionPriority(_Resource):
    up = True

    def post(self, request, realm, execution_id):
        execution = flow_admin.execution_by_id(self.realm, execution_id)
        with transaction.atomic():
            flow_admin.move(execution, self.up)
            self.event("UPDATE", "AUTH_EXECUTION",
                       f"executions/{execution_id}/{'raise' if self.up else 'lower'}-priority")
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExecutionConfig(_Resource):
    def post(self, request, realm, execution_id):
        execution = flow_admin.execution_by_id(self.realm, execution_id)
        data = _body(request)
        config = data.get("config") or {}
        if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
            raise errors.Invalid("config: expected an object of strings")
        with transaction.atomic():
            new = flow_admin.set_execution_config(self.realm, execution, _str(data, "alias"), config)
            self.event("CREATE", "AUTHENTICATOR_CONFIG", f"executions/{execution_id}/config", config_rep(new))
        return self.created(f"executions/{execution_id}/config/{new.pk}")


def _config(realm, config_id):
    config = AuthenticatorConfig.objects.filter(realm=realm, pk=config_id).first()
    if config is None:
        raise errors.NotFound("Could not find authenticator config")
    return config


class ConfigDetail(_Resource):
    def get(self, request, realm, config_id):
        return Response(config_rep(_config(self.realm, config_id)))

    def put(self, request, realm, config_id):
        config = _config(self.realm, config_id)
        data = _body(request)
        values = data.get("config", config.config)
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise errors.Invalid("config: expected an object of strings")
        alias = _str(data, "alias", config.alias) or config.alias
        if alias != config.alias and AuthenticatorConfig.objects.filter(realm=self.realm, alias=alias).exists():
            raise errors.Conflict(f"Authentication execution configuration {alias} already exists")
        with transaction.atomic():
            config.alias, config.config = alias, values
            config.save()
            self.event("UPDATE", "AUTHENTICATOR_CONFIG", f"config/{config_id}", config_rep(config))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, config_id):
        config = _config(self.realm, config_id)
        with transaction.atomic():
            config.delete()
            self.event("DELETE", "AUTHENTICATOR_CONFIG", f"config/{config_id}")
        return Response(status=status.HTTP_204_NO_CONTENT)


# Providers -----------------------------------------------------------------------------------

def _provider(auth):
    return {"id": auth.provider_id, "displayName": auth.display_name or auth.provider_id,
            "description": getattr(auth, "help_text", "")}


class AuthenticatorProviders(_Resource):
    required_role = VIEW

    def get(self, request, realm):
        return Response([_provider(a) for a in flows.authenticators()
                         if not getattr(a, "is_form_action", False)])


class FormActionProviders(_Resource):
    required_role = VIEW

    def get(self, request, realm):
        return Response([_provider(a) for a in flows.authenticators() if getattr(a, "is_form_action", False)])


class ConfigDescription(_Resource):
    required_role = VIEW

    def get(self, request, realm, provider_id):
        auth = flows.get_authenticator(provider_id)
        if auth is None:
            raise errors.NotFound("Could not find authenticator provider")
        return Response({"name": auth.display_name or provider_id, "providerId": provider_id,
                         "helpText": getattr(auth, "help_text", ""),
                         "properties": [dict(p) for p in getattr(auth, "config_properties", ())]})


# Required actions ----------------------------------------------------------------------------

def _action(realm, alias):
    action = RequiredActionProvider.objects.filter(realm=realm, alias=alias).first()
    if action is None:
        raise errors.NotFound("Failed to find required action")
    return action


class RequiredActions(_Resource):
    required_role = VIEW

    def get(self, request, realm):
        return Response([required_action_rep(a) for a in RequiredActionProvider.objects.filter(realm=self.realm)])


class RequiredActionDetail(_Resource):
    def get(self, request, realm, alias):
        return Response(required_action_rep(_action(self.realm, alias)))

    def put(self, request, realm, alias):
        action = _action(self.realm, alias)
        data = _body(request)
        config = data.get("config") or {}
        if not isinstance(config, dict) or not all(isinstance(v, str) for v in config.values()):
            raise errors.Invalid("config: expected an object of strings")
        for key in ("enabled", "defaultAction"):
            if not isinstance(data.get(key, False), bool):
                raise errors.Invalid(f"{key}: expected a boolean")
        with transaction.atomic():
            action.name = _str(data, "name", action.name)
            action.alias = _str(data, "alias", action.alias) or action.alias
            action.enabled = data.get("enabled", False)
            action.default_action = data.get("defaultAction", False)
            priority = _int(data, "priority")
            action.priority = action.priority if priority is None else priority
            action.config = config
            action.save()
            self.event("UPDATE", "REQUIRED_ACTION", f"required-actions/{alias}", required_action_rep(action))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, alias):
        action = _action(self.realm, alias)
        with transaction.atomic():
            action.delete()
            self.event("DELETE", "REQUIRED_ACTION", f"required-actions/{alias}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class RequiredActionPriority(_Resource):
    up = True

    def post(self, request, realm, alias):
        action = _action(self.realm, alias)
        actions = list(RequiredActionProvider.objects.filter(realm=self.realm))
        index = next(i for i, a in enumerate(actions) if a.pk == action.pk)
        other = index - 1 if self.up else index + 1
        if 0 <= other < len(actions):
            with transaction.atomic():
                neighbour = actions[other]
                action.priority, neighbour.priority = neighbour.priority, action.priority
                action.save(update_fields=["priority"])
                neighbour.save(update_fields=["priority"])
                self.event("UPDATE", "REQUIRED_ACTION",
                           f"required-actions/{alias}/{'raise' if self.up else 'lower'}-priority")
        return Response(status=status.HTTP_204_NO_CONTENT)


def _unregistered(realm):
    present = set(RequiredActionProvider.objects.filter(realm=realm).values_list("provider_id", flat=True))
    return [a for a in actions.required_actions() if a.provider_id not in present]


class UnregisteredRequiredActions(_Resource):
    required_role = VIEW

    def get(self, request, realm):
        return Response([{"name": getattr(a, "display_name", "") or a.provider_id, "providerId": a.provider_id}
                         for a in _unregistered(self.realm)])


class RegisterRequiredAction(_Resource):
    def post(self, request, realm):
        data = _body(request)
        provider_id = _str(data, "providerId")
        if not provider_id or actions.get_required_action(provider_id) is None:
            raise errors.BadRequest("Required Action Provider with given providerId not found")
        if RequiredActionProvider.objects.filter(realm=self.realm, alias=provider_id).exists():
            raise errors.Conflict(f"Required action {provider_id} already exists")
        with transaction.atomic():
            action = RequiredActionProvider.objects.create(
                realm=self.realm, alias=provider_id, name=_str(data, "name", provider_id), provider_id=provider_id,
                enabled=True, default_action=False, priority=flow_admin.next_required_action_priority(self.realm))
            self.event("CREATE", "REQUIRED_ACTION", "register-required-action", {**data, "id": action.pk})
        return Response(status=status.HTTP_204_NO_CONTENT)
