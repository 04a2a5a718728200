"""The Admin REST API of user federation, as Keycloak's ComponentResource,
UserStorageProviderResource and TestLdapConnectionResource: ``components`` (user storage providers
and their LDAP mappers), ``user-storage/{id}/sync``, ``user-storage/{id}/mappers/{id}/sync`` (the
group and role mappers' two directions), ``unlink-users``, ``remove-imported-users`` and
``testLDAPConnection``."""
import logging

import ldap
from django.db import transaction
from django.urls import path
from rest_framework import status
from rest_framework.response import Response

from realms.admin_api import errors, key_providers, registration_policies
from realms.admin_api.query import location
from realms.admin_api.views import RealmResource
from realms.audit import admin_events
from realms.models import Component, User
from realms.users.storage import open_config

from . import mappers, membership
from .config import MAPPER_TYPE, PROVIDER_ID, ConfigError, LdapConfig
from .connection import DirectoryError, DirectoryUnavailable, PolicyRefused, test_connection
from .sync import DIRECTIONS, sync, sync_mapper

logger = logging.getLogger("idp.federation")
SECRET_VALUE = "**********"  # Keycloak's ComponentRepresentation.SECRET_VALUE
SECRETS = ("bindCredential",)
TYPES = (Component.USER_STORAGE, MAPPER_TYPE)


def component_rep(c):
    config = {k: ([SECRET_VALUE] if k in SECRETS and v else v) for k, v in c.config.items()}
    rep = {"id": c.pk, "name": c.name, "providerId": c.provider_id, "providerType": c.provider_type,
           "parentId": c.parent_id, "config": config}
    if c.sub_type:
        rep["subType"] = c.sub_type
    return rep


def _config(body, old=None):
    config = body.get("config") or {}
    if not isinstance(config, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                                for v in config.values()):
        raise errors.Invalid("config must map names to lists of strings")
    config = {k: list(v) for k, v in config.items()}
    for name in SECRETS:  # the masked value sent back keeps the stored secret
        if config.get(name) == [SECRET_VALUE]:
            config[name] = (old or {}).get(name, [])
    return config


def _validate(component):
    if component.provider_type == Component.USER_STORAGE and component.provider_id == PROVIDER_ID:
        try:
            LdapConfig.of(component)
        except ConfigError as exc:
            raise errors.Invalid(str(exc)) from None
    if component.provider_type == MAPPER_TYPE:
        parent = Component.objects.filter(realm=component.realm, pk=component.parent_id,
                                          provider_type=Component.USER_STORAGE).first()
        if parent is None:
            raise errors.Invalid("parentId must name a user storage provider of the realm")
        if component.provider_id not in mappers.MAPPERS:
            raise errors.Invalid(f"unknown mapper {component.provider_id}")
        try:
            mappers.validate(component.provider_id, component.config, parent.config)
        except ConfigError as exc:
            raise errors.Invalid(str(exc)) from None
        path = component.get("groups.path", "/").strip() or "/"
        if component.provider_id == "group-ldap-mapper" and path != "/" and membership.find_group(
                component.realm, path) is None:
            raise errors.Invalid("ldapErrorMissingGroupsPathGroup")


def _event(view, operation, component):
    admin_events.record(view.realm, operation, "COMPONENT", f"components/{component.pk}", auth=view.auth_details(),
                        representation=lambda: component_rep(component))


def _action(view, component, path, representation=None):
    admin_events.record(view.realm, "ACTION", "USER_FEDERATION_PROVIDER", f"user-storage/{component.pk}/{path}",
                        auth=view.auth_details(), representation=representation)


class Components(RealmResource):
    """The realm's user storage providers and LDAP mappers (filters ``parent``, ``type``, ``name``);
    POST adds one (an LDAP provider with Keycloak's default mappers)."""

    required_role = {"GET": "view-realm", "POST": "manage-realm"}

    def get(self, request, realm):
        q = Component.objects.filter(realm=self.realm, provider_type__in=TYPES)
        for param, field in (("parent", "parent_id"), ("type", "provider_type"), ("name", "name")):
            if request.query_params.get(param) is not None:
                q = q.filter(**{field: request.query_params[param]})
        return Response([component_rep(c) for c in q.order_by("name", "pk")]
                        + key_providers.listed(self.realm, request.query_params)
                        + registration_policies.listed(self.realm, request.query_params))

    def post(self, request, realm):
        body = request.data if isinstance(request.data, dict) else {}
        kind = body.get("providerType")
        if kind == key_providers.KEY_PROVIDER:
            return key_providers.create(self, request, body)
        if kind == registration_policies.REGISTRATION_POLICY:
            return registration_policies.create(self, request, body)
        if kind not in TYPES:
            raise errors.Invalid(f"providerType must be one of {', '.join(TYPES + (key_providers.KEY_PROVIDER,))}")
        if not body.get("providerId"):
            raise errors.Invalid("providerId is required")
        component = Component(realm=self.realm, name=str(body.get("name") or body["providerId"]),
                              provider_id=str(body["providerId"]), provider_type=kind,
                              parent_id=str(body.get("parentId") or self.realm.pk),
                              sub_type=str(body.get("subType") or ""), config=_config(body))
        if body.get("id"):
            component.pk = str(body["id"])
        _validate(component)
        with transaction.atomic():
            component.save()
            if kind == Component.USER_STORAGE and component.provider_id == PROVIDER_ID:
                add_default_mappers(component)
            _event(self, "CREATE", component)
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{realm}/components/{component.pk}")})


def add_default_mappers(component):
    config = LdapConfig.of(component)
    for name, provider_id, mapper_config in mappers.default_mappers(config):
        Component.objects.create(realm=component.realm, name=name, provider_id=provider_id,
                                 provider_type=MAPPER_TYPE, parent_id=component.pk, config=mapper_config)


class ComponentDetail(RealmResource):
    """One component; secrets shown as ``**********``, kept when sent back so. A realm key is
    served by ``realms.admin_api.key_providers``."""

    required_role = {"GET": "view-realm", "PUT": "manage-realm", "DELETE": "manage-realm"}

    def _component(self, component_id):
        component = Component.objects.filter(realm=self.realm, pk=component_id, provider_type__in=TYPES).first()
        if component is None:
            raise errors.NotFound("Could not find component")
        return component

    def get(self, request, realm, component_id):
        key = key_providers.find(self.realm, component_id)
        if key is not None:
            return Response(key_providers.rep(key))
        if (policy := registration_policies.find(self.realm, component_id)) is not None:
            return Response(registration_policies.rep(policy))
        return Response(component_rep(self._component(component_id)))

    def put(self, request, realm, component_id):
        body = request.data if isinstance(request.data, dict) else {}
        key = key_providers.find(self.realm, component_id)
        if key is not None:
            return key_providers.update(self, key, body)
        if (policy := registration_policies.find(self.realm, component_id)) is not None:
            return registration_policies.update(self, policy, body)
        component = self._component(component_id)
        component.config = _config(body, open_config(component))
        component.name = str(body.get("name") or component.name)
        _validate(component)
        with transaction.atomic():
            component.save()
            _event(self, "UPDATE", component)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, component_id):
        key = key_providers.find(self.realm, component_id)
        if key is not None:
            return key_providers.delete(self, key)
        if (policy := registration_policies.find(self.realm, component_id)) is not None:
            return registration_policies.delete(self, policy)
        component = self._component(component_id)
        with transaction.atomic():
            Component.objects.filter(realm=self.realm, parent_id=component.pk, provider_type=MAPPER_TYPE).delete()
            _event(self, "DELETE", component)
            component.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class _Storage(RealmResource):
    required_role = "manage-users"

    def _component(self, component_id):
        component = Component.objects.filter(realm=self.realm, pk=component_id,
                                             provider_type=Component.USER_STORAGE).first()
        if component is None:
            raise errors.NotFound("Could not find component")
        return component


class Sync(_Storage):
    """``action=triggerFullSync`` or ``triggerChangedUsersSync``: Keycloak's SynchronizationResult."""

    def post(self, request, realm, component_id):
        component = self._component(component_id)
        action = request.query_params.get("action")
        if action not in ("triggerFullSync", "triggerChangedUsersSync"):
            raise errors.NotFound("Unknown action: " + str(action))
        if component.provider_id != PROVIDER_ID:
            raise errors.NotFound("Could not find component")
        try:
            result = sync(component, changed_only=action == "triggerChangedUsersSync")
        except DirectoryUnavailable as exc:
            logger.warning("LDAP provider %s: sync failed, directory unavailable: %s", component.pk, exc)
            raise errors.Invalid("LDAP sync error: cannot connect to the directory") from None
        _action(self, component, "sync", result)
        return Response(result)


class MapperSync(_Storage):
    """A group or role mapper's ``direction=fedToKeycloak`` (the default) or ``keycloakToFed``:
    Keycloak's SynchronizationResult."""

    def post(self, request, realm, component_id, mapper_id):
        component = Component.objects.filter(realm=self.realm, pk=component_id).first()
        if component is None:
            raise errors.NotFound("Parent model not found")
        mapper = Component.objects.filter(realm=self.realm, pk=mapper_id, parent_id=component.pk,
                                          provider_type=MAPPER_TYPE).first()
        if mapper is None:
            raise errors.NotFound("Mapper model not found")
        direction = request.query_params.get("direction") or DIRECTIONS[0]
        if direction not in DIRECTIONS:
            raise errors.Invalid("Unknown direction: " + direction)
        try:
            result = sync_mapper(component, mapper.pk, direction)
        except membership.MembershipError as exc:
            raise errors.Invalid(str(exc)) from None
        except DirectoryUnavailable as exc:
            logger.warning("LDAP provider %s: mapper sync failed, directory unavailable: %s", component.pk, exc)
            raise errors.Invalid("LDAP sync error: cannot connect to the directory") from None
        except ldap.LDAPError as exc:
            logger.warning("LDAP mapper %s: sync refused by the directory: %s", mapper.pk, exc)
            raise errors.Invalid("LDAP sync error: the directory refused a change") from None
        if result is None:
            raise errors.Invalid("This mapper has nothing to synchronize")
        _action(self, component, f"mappers/{mapper.pk}/sync", result)
        return Response(result)


class UnlinkUsers(_Storage):
    """The provider's imported users become local users."""

    def post(self, request, realm, component_id):
        component = self._component(component_id)
        User.objects.filter(realm=self.realm, federation_link=component).update(federation_link=None)
        _action(self, component, "unlink-users")
        return Response(status=status.HTTP_204_NO_CONTENT)


class RemoveImportedUsers(_Storage):
    """The provider's imported users are deleted."""

    def post(self, request, realm, component_id):
        component = self._component(component_id)
        User.objects.filter(realm=self.realm, federation_link=component).delete()
        _action(self, component, "remove-imported-users")
        return Response(status=status.HTTP_204_NO_CONTENT)


class TestConnection(RealmResource):
    """``action=testConnection`` reaches the directory, ``testAuthentication`` binds (204, or 400
    "LDAP test error")."""

    required_role = "manage-realm"

    def post(self, request, realm):
        body = request.data if isinstance(request.data, dict) else {}
        values = {k: [str(v)] for k, v in body.items() if k != "action" and v is not None}
        values.setdefault("editMode", ["READ_ONLY"])  # not part of a connection test
        stored = None
        if body.get("componentId"):
            stored = Component.objects.filter(realm=self.realm, pk=str(body["componentId"])).first()
        if values.get("bindCredential") == [SECRET_VALUE]:
            values["bindCredential"] = open_config(stored).get("bindCredential", [""]) if stored else [""]
        probe = Component(realm=self.realm, provider_id=PROVIDER_ID, provider_type=Component.USER_STORAGE,
                          config=values)
        try:
            config = LdapConfig.of(probe, values.get("bindCredential", [""])[0])
            test_connection(config, body.get("action"))
        except PolicyRefused as exc:
            logger.info("testLDAPConnection refused: %s", exc.info)
            raise errors.Invalid(f"LDAP test error: {exc.info}") from None
        except (ConfigError, DirectoryError) as exc:
            logger.info("testLDAPConnection failed: %s %s", exc, getattr(exc, "info", ""))
            raise errors.Invalid("LDAP test error") from None
        return Response(status=status.HTTP_204_NO_CONTENT)


R = "<str:realm>"
urlpatterns = [
    path(f"{R}/components", Components.as_view()),
    path(f"{R}/components/<str:component_id>", ComponentDetail.as_view()),
    path(f"{R}/user-storage/<str:component_id>/sync", Sync.as_view()),
    path(f"{R}/user-storage/<str:component_id>/mappers/<str:mapper_id>/sync", MapperSync.as_view()),
    path(f"{R}/user-storage/<str:component_id>/unlink-users", UnlinkUsers.as_view()),
    path(f"{R}/user-storage/<str:component_id>/remove-imported-users", RemoveImportedUsers.as_view()),
    path(f"{R}/testLDAPConnection", TestConnection.as_view()),
]
