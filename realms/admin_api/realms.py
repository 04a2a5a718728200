"""``/admin/realms`` and ``/admin/realms/{realm}`` (Keycloak's RealmsAdminResource and
RealmAdminResource): the realm's own settings in the export's JSON (``realm_settings_rep``);
a POST is a realm import (``import_realm``), as in Keycloak."""
from django.db import transaction
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..administration.admin_permissions import (
    administers,
    grant_delegated_admin,
    management_roles,
    rename_delegated_client,
)
from ..audit import admin_events
from ..audit.admin_events import auth_details
from ..models import Realm
from ..representation import REALM_FIELDS, RepresentationError, client_policies, import_realm
from ..representation.authorization import permissions_client
from ..representation.fields import Parser, as_dict, as_str, model_fields, spec_of
from ..representation.realm import POLICY_PREFIXES, realm_settings_rep
from . import errors
from .query import check_fields, flag, location
from .views import ApiView, RealmResource

CREATE_REALM = "create-realm"  # the master realm's role that may create realms (admin contains it)
MASKED = "**********"


def realm_rep(realm):
    rep = realm_settings_rep(realm)
    if rep.get("smtpServer", {}).get("password"):  # Keycloak never sends the SMTP password back
        rep["smtpServer"] = {**rep["smtpServer"], "password": MASKED}
    return rep


def _brief(realm):
    return {"id": realm.id, "realm": realm.name, **({"displayName": realm.display_name} if realm.display_name else {})}


class Realms(ApiView):
    """GET: the realms the caller may view (brief with ``briefRepresentation=true``); POST: import
    one (the master realm's ``create-realm`` role, which its ``admin`` contains)."""

    def get(self, request):
        """A realm the caller may view in full (or brief); one where they hold only some other
        realm-management role by its name alone; none at all is a 403, as Keycloak."""
        caller = request.user
        brief = flag(request, "briefRepresentation", False)
        reps = []
        for realm in Realm.objects.order_by("name"):
            if caller.may("view-realm", realm):
                reps.append(_brief(realm) if brief else realm_rep(realm))
            elif administers(caller.admin, realm):
                reps.append({"realm": realm.name})
        if not reps:
            raise exceptions.PermissionDenied()
        return Response(reps)

    def post(self, request):
        caller = request.user
        if not (caller.realm.is_master and caller.holds_realm_role(CREATE_REALM)):
            raise exceptions.PermissionDenied()
        if not isinstance(request.data, dict):
            raise errors.Invalid("Expected a RealmRepresentation")
        name = request.data.get("realm")
        if isinstance(name, str) and Realm.objects.filter(name=name).exists():
            raise errors.Conflict("Conflict detected. See logs for details")
        auth = auth_details(request, caller.user, caller.client_id)
        try:
            with transaction.atomic():
                realm = import_realm(request.data, auth=auth).realm
                if not management_roles(caller.admin, realm):
                    grant_delegated_admin(caller.user, realm)
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        return Response(status=status.HTTP_201_CREATED, headers={"Location": location(request, realm.name)})


class RealmDetail(RealmResource):
    required_role = {"GET": "view-realm", "PUT": "manage-realm", "DELETE": "manage-realm"}

    def get(self, request, realm):
        return Response(realm_rep(self.realm))

    def put(self, request, realm):
        """Changes the settings the body names (Keycloak's partial update); renaming included."""
        data = request.data
        if not isinstance(data, dict):
            raise errors.Invalid("Expected a RealmRepresentation")
        parser = Parser()
        policies = {k: v for k, v in data.items() if k.startswith(tuple(p for p, _ in POLICY_PREFIXES))}
        table = {k: v for k, v in REALM_FIELDS.items() if k != "id"}
        try:
            values = parser.take({k: v for k, v in data.items() if k not in policies and k != "id"}, "",
                                 {**spec_of(table), "realm": as_str, "clientPolicies": as_dict,
                                  "clientProfiles": as_dict})
            sections = client_policies.parse_sections(values, self.realm.attributes)
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        target = self.realm
        for name, value in model_fields(table, values).items():
            if name == "smtp_server" and value.get("password") == MASKED:  # the mask sent back unchanged
                value = {**value, "password": target.smtp_server.get("password", "")}
            if name == "attributes":
                value = client_policies.with_reserved(value, target.attributes)
            setattr(target, name, value)
        target.attributes = client_policies.store(target.attributes, *sections)
        for key, value in policies.items():
            field_name = next(f for p, f in POLICY_PREFIXES if key.startswith(p))
            getattr(target, field_name)[key] = value
        new_name = values.get("realm", target.name)
        if new_name != target.name:
            if target.is_master:
                raise errors.Invalid("Cannot rename master realm")
            if Realm.objects.filter(name=new_name).exists():
                raise errors.Conflict("Realm with same name exists")
        old_name, target.name = target.name, new_name
        check_fields(target, exclude=["default_role"], table=REALM_FIELDS)
        with transaction.atomic():
            target.save()
            if old_name != new_name:
                rename_delegated_client(old_name, new_name)
            if target.admin_permissions_enabled:
                permissions_client(target)
            admin_events.record(target, "UPDATE", "REALM", "", auth=self.auth_details(),
                                representation=lambda: realm_rep(target))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm):
        if self.realm.is_master:
            raise errors.Invalid("Cannot delete master realm")
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "REALM", "", auth=self.auth_details())
            self.realm.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
