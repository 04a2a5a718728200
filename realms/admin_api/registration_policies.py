"""The realm's client registration policies as Keycloak's components (providerType
``org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy``, ``subType``
``anonymous`` or ``authenticated``) on ``/admin/realms/{realm}/components``: listed, read,
created, updated and deleted (the components resource, ``federation.ldap.api``, hands these
requests here), and ``client-registration-policy/providers`` (Keycloak's
ComponentTypeRepresentations of the providers this server enforces). They are ``Component``
rows; the OpenID Connect registration service reads them."""
from django.db import transaction
from django.db.models import Q
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import ClientScope, Component, ProtocolMapper
from ..representation.components import DEFAULT_POLICIES, REGISTRATION_POLICY
from . import errors
from .query import location
from .views import RealmResource

SUB_TYPES = ("anonymous", "authenticated")
_BOOL, _MULTI, _LIST, _STR = "boolean", "MultivaluedString", "MultivaluedList", "String"
# providerId -> (helpText, [(name, label, type, default, helpText)]): Keycloak's factories.
PROVIDERS = {
    "trusted-hosts": ("Allows to specify from which hosts is user able to register and which redirect URIs can "
                      "client use in it's configuration", [
        ("trusted-hosts", "Trusted Hosts", _MULTI, None,
         "List of Hosts, which are trusted and are allowed to invoke Client Registration Service and/or be used as "
         "values of Client URIs. You can use hostnames or IP addresses. If you use star at the beginning (for "
         "example '*.example.com' ) then whole domain example.com will be trusted."),
        ("host-sending-registration-request-must-match", "Host Sending Client Registration Request Must Match",
         _BOOL, "true", "If on, then any client registration/update request can be made only from the trusted "
                        "hosts or domains"),
        ("client-uris-must-match", "Client URIs Must Match", _BOOL, "true",
         "If on, then all Client URIs (Redirect URIs and others) are allowed just if they match some trusted host "
         "or domain"),
    ]),
    "allowed-client-templates": ("When present, then newly registered client can have just client scopes "
                                 "mentioned in the configured list", [
        ("allowed-client-scopes", "Allowed Client Scopes", _LIST, None,
         "Whitelist of the client scopes, which can be used on newly registered client. Attempt to register client "
         "with some client scope, which is not whitelisted, will be rejected."),
        ("allow-default-scopes", "Allow Default Scopes", _BOOL, "true",
         "If on, then newly registered clients will be allowed to have client scopes mentioned in realm default "
         "client scopes or realm optional client scopes"),
    ]),
    "allowed-protocol-mappers": ("Allows to specify which protocol mappers can be configured on newly registered "
                                 "client", [
        ("allowed-protocol-mapper-types", "Allowed Protocol Mapper Types", _LIST, None,
         "Whitelisted protocol mapper providers"),
    ]),
    "max-clients": ("Allows to specify maximum number of clients in realm", [
        ("max-clients", "Max Clients Per Realm", _STR, "200",
         "It won't be allowed to register new client if count of existing clients in realm is same or bigger than "
         "configured number"),
    ]),
    "consent-required": ("When present, then newly registered client will always have 'consentRequired' switch "
                         "enabled", []),
    "scope": ("When present, then newly registered client won't have full scope allowed", []),
}


def rep(c):
    return {"id": c.id, "name": c.name, "providerId": c.provider_id, "providerType": REGISTRATION_POLICY,
            "parentId": c.parent_id, "subType": c.sub_type, "config": c.config}


def listed(realm, params):
    """The reps of the realm's policies for ``GET /components`` with ``parent``, ``type``, ``name``."""
    if params.get("type") not in (None, REGISTRATION_POLICY) or params.get("parent") not in (None, realm.pk):
        return []
    q = Component.objects.filter(realm=realm, provider_type=REGISTRATION_POLICY)
    if params.get("name") is not None:
        q = q.filter(name=params["name"])
    return [rep(c) for c in q.order_by("name", "sub_type", "pk")]


def find(realm, component_id):
    return Component.objects.filter(realm=realm, pk=component_id, provider_type=REGISTRATION_POLICY).first()


def _config(body, provider_id):
    config = body.get("config") or {}
    if not isinstance(config, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                                for v in config.values()):
        raise errors.Invalid("config must map names to lists of strings")
    for name, label, kind, _, _ in PROVIDERS[provider_id][1]:
        values = config.get(name) or []
        if kind in (_BOOL, _STR) and len(values) > 1:
            raise errors.Invalid(f"'{label}' should be a single entry")
        if kind == _BOOL and values and values[0] not in ("true", "false"):
            raise errors.Invalid(f"'{label}' should be 'true' or 'false'")
        if name == "max-clients" and values and not values[0].isdigit():
            raise errors.Invalid(f"'{label}' should be a number")
    return config


def _checked(body, provider_id, sub_type):
    if provider_id not in PROVIDERS:
        raise errors.Invalid(f"Client registration policy {str(provider_id)[:64]!r} is not supported: this server "
                             f"enforces {', '.join(PROVIDERS)}")
    if sub_type not in SUB_TYPES:
        raise errors.Invalid("subType must be anonymous or authenticated")
    name = str(body.get("name") or provider_id)
    if len(name) > 255:
        raise errors.Invalid("name is too long (255 characters at most)")
    return name


def _event(view, operation, c):
    admin_events.record(view.realm, operation, "COMPONENT", f"components/{c.pk}", auth=view.auth_details(),
                        representation=lambda: rep(c))


def create(view, request, body):
    provider_id, sub_type = body.get("providerId"), body.get("subType")
    name = _checked(body, provider_id, sub_type)
    c = Component(realm=view.realm, name=name, provider_id=provider_id, provider_type=REGISTRATION_POLICY,
                  parent_id=view.realm.pk, sub_type=sub_type, config=_config(body, provider_id))
    if body.get("id"):
        if Component.objects.filter(pk=str(body["id"])).exists():
            raise errors.Conflict("Component with the same id already exists")
        c.pk = str(body["id"])
    with transaction.atomic():
        c.save()
        _event(view, "CREATE", c)
    return Response(status=status.HTTP_201_CREATED,
                    headers={"Location": location(request, f"{view.realm.name}/components/{c.pk}")})


def update(view, c, body):
    sub_type = body.get("subType") or c.sub_type
    c.name = _checked(body, c.provider_id, sub_type) if body.get("name") else c.name
    c.sub_type = sub_type
    if "config" in body:
        c.config = _config(body, c.provider_id)
    with transaction.atomic():
        c.save()
        _event(view, "UPDATE", c)
    return Response(status=status.HTTP_204_NO_CONTENT)


def delete(view, c):
    with transaction.atomic():
        _event(view, "DELETE", c)
        c.delete()
    return Response(status=status.HTTP_204_NO_CONTENT)


def _options(realm, name):
    if name == "allowed-client-scopes":
        return list(ClientScope.objects.filter(realm=realm).order_by("name").values_list("name", flat=True))
    if name == "allowed-protocol-mapper-types":
        used = ProtocolMapper.objects.filter(Q(client__realm=realm) | Q(client_scope__realm=realm))
        defaults = next(c for _, p, _, c in DEFAULT_POLICIES if p == "allowed-protocol-mappers")
        return sorted(set(used.values_list("protocol_mapper", flat=True)) | set(defaults["allowed-protocol-mapper-types"]))
    return None


class Providers(RealmResource):
    """``GET client-registration-policy/providers``: Keycloak's ComponentTypeRepresentations."""

    required_role = "view-realm"

    def get(self, request, realm):
        out = []
        for provider_id, (help_text, properties) in PROVIDERS.items():
            props = []
            for name, label, kind, default, help_ in properties:
                prop = {"name": name, "label": label, "helpText": help_, "type": kind, "secret": False,
                        "required": False, "readOnly": False}
                if default is not None:
                    prop["defaultValue"] = default
                options = _options(self.realm, name)
                if options is not None:
                    prop["options"] = options
                props.append(prop)
            out.append({"id": provider_id, "helpText": help_text, "properties": props, "metadata": {}})
        return Response(out)
