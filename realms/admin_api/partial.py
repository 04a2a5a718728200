"""``partialImport`` and ``partial-export`` of a realm (Keycloak's RealmAdminResource)."""
from rest_framework import exceptions
from rest_framework.response import Response

from ..brokering.admin import SECRET_KEYS
from ..representation import RepresentationError, export_realm
from ..representation.partial import ResourceExists, partial_import
from . import errors
from .query import flag
from .realms import MASKED, realm_rep
from .views import RealmResource


class PartialImport(RealmResource):
    """POST a PartialImportRepresentation: the PartialImportResults (200); a resource that
    exists under ``ifResourceExists: FAIL`` is a 409 and nothing is imported."""

    required_role = {"POST": "manage-realm"}

    def post(self, request, realm):
        try:
            results = partial_import(self.realm, request.data, auth=self.auth_details())
        except ResourceExists as exc:
            raise errors.Conflict(str(exc)) from None
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        return Response(results.rep())


def _mask_secrets(rep):
    """Keycloak's stripForExport: client secrets (identity providers' too) and private key
    material are replaced by the mask (the SMTP password is masked by ``realm_rep``)."""
    for client in rep.get("clients", []):
        if "secret" in client:
            client["secret"] = MASKED
        if client.get("registrationAccessToken"):
            client["registrationAccessToken"] = MASKED
    for idp in rep.get("identityProviders", []):
        idp["config"] = {k: (MASKED if k in SECRET_KEYS and v else v) for k, v in idp.get("config", {}).items()}
    for components in rep.get("components", {}).values():
        for component in components:
            component["config"] = {k: ([MASKED] if "private" in k.lower() or "secret" in k.lower() else v)
                                   for k, v in component.get("config", {}).items()}
    return rep


class PartialExport(RealmResource):
    """POST ``?exportClients=true&exportGroupsAndRoles=true``: the realm export without users (but
    the clients' service accounts with the clients), its clients and its groups and roles only
    when asked for, secrets masked. As Keycloak: ``manage-realm``, and ``query-groups`` for groups
    and roles, ``view-clients`` for clients."""

    required_role = {"POST": "manage-realm"}

    def post(self, request, realm):
        groups_and_roles = flag(request, "exportGroupsAndRoles", False)
        clients = flag(request, "exportClients", False)
        if (groups_and_roles and not request.user.may("query-groups", self.realm)) or (
                clients and not request.user.may("view-clients", self.realm)):
            raise exceptions.PermissionDenied()
        return Response(partial_export(self.realm, groups_and_roles=groups_and_roles, clients=clients))


def partial_export(realm, *, groups_and_roles, clients):
    """Keycloak's partial export of ``realm`` (the Admin API's and the console's)."""
    rep = {**export_realm(realm), **realm_rep(realm)}
    rep["users"] = [{k: v for k, v in u.items() if k != "credentials"}
                    for u in rep["users"] if clients and "serviceAccountClientId" in u]
    if not rep["users"]:
        del rep["users"]
    if not groups_and_roles:
        for key in ("roles", "groups"):
            rep.pop(key)
    if not clients:
        for key in ("clients", "scopeMappings", "clientScopeMappings"):
            rep.pop(key)
    return _mask_secrets(rep)
