"""import_realm: parse (realm.py and the resource modules), merge the built-ins (merge.py), then
apply: one applier made of each resource module's steps writes the rows in one transaction."""
import copy
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction

from ..administration.admin_permissions import ensure_delegated_client
from ..audit import admin_events
from ..credentials import webauthn
from ..models import Component, Realm, new_id
from ..users.profile import config as upconfig
from .authentication import AuthenticationApplier
from .authorization import permissions_client
from .client_scopes import ClientScopeApplier
from .clients import ClientApplier
from .components import KeyApplier
from .fields import Parser, RepresentationError, at
from .groups import GroupApplier
from .identity_providers import IdentityProviderApplier
from .merge import merge_builtins
from .organizations import import_organizations
from .protocol_mappers import ProtocolMapperApplier
from .realm import REALM_FIELDS, parse_realm
from .roles import RoleApplier
from .user_storage import UserStorageApplier
from .users import UserApplier


@dataclass
class ImportResult:
    realm: Realm
    warnings: list = field(default_factory=list)


class _Applier(AuthenticationApplier, ClientScopeApplier, ProtocolMapperApplier, ClientApplier, RoleApplier, GroupApplier,
               UserStorageApplier, IdentityProviderApplier, UserApplier, KeyApplier):
    """Step 3: writes the parsed realm; each resource's steps come from its module."""

    def __init__(self, r, p):
        self.r = r
        self.p = p
        self.realm = None
        self.scopes = {}
        self.clients = {}
        self.realm_roles = {}
        self.client_roles = {}
        self.groups = {}
        self.claimed = set()
        self.renamed = {}  # (model, the file's id): the id given instead
        self.authorization = []  # (client, authorizationSettings, JSON path)

    def id_for(self, model, wanted):
        """Keep the file's id unless another realm already uses it (e.g. importing an export
        under a new name); cross-references in the file are by name, so a new id is safe."""
        return self.ids_for(model, [wanted])[0]

    def ids_for(self, model, wanted):
        """``id_for`` of each of ``wanted`` (ids or None), asking the database once per 10,000."""
        given = [w for w in wanted if w]
        taken = set()
        for start in range(0, len(given), 10_000):
            taken.update(model.objects.filter(pk__in=given[start:start + 10_000]).values_list("pk", flat=True))
        out = []
        for w in wanted:
            if w and (model, w) not in self.claimed and w not in taken:
                self.claimed.add((model, w))
                out.append(w)
                continue
            out.append(new_id())
            if w:
                self.renamed[(model, w)] = out[-1]
        return out

    def save(self, obj, path, table, exclude=()):
        """``check``, then save."""
        self.check(obj, path, table, exclude)
        obj.save()
        return obj

    def check(self, obj, path, table, exclude=()):
        """full_clean (lengths, choices, ranges) with errors named by JSON path."""
        try:
            obj.full_clean(exclude=["realm", "client", "client_scope", "parent", "user", "default_role",
                                    "service_account_client", *exclude],
                           validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            field_name, messages = next(iter(exc.message_dict.items()))
            json_key = next((k for k, (f, _) in table.items() if f == field_name), field_name)
            raise RepresentationError(at(path, json_key), " ".join(messages)) from None

    def run(self, existing):
        r = self.r
        if existing is not None:
            existing.delete()
        settings = dict(r["settings"])
        settings["id"] = self.id_for(Realm, settings.get("id"))
        self.realm = self.save(Realm(name=r["name"], **settings), "", {"realm": ("name", None), **REALM_FIELDS})
        self.add_authentication()
        for scope in r["scopes"]:
            self.add_scope(scope)
        for client in r["clients"]:
            self.add_client(client)
        self.remap_flow_overrides()
        self.add_roles()
        self.realm.default_role = self.realm_role(r["default_role"], "defaultRole.name")
        self.realm.save(update_fields=["default_role"])
        self.link_scopes()
        self.add_scope_mappings()
        for group in r["groups"]:
            self.add_group(group, None)
        self.add_identity_providers(r["identity_providers"], r["identity_provider_mappers"])
        self.add_user_storage(r["user_storage"])
        self.add_users(r["users"])
        self.add_service_accounts()
        import_organizations(self.realm, r.get("organizations", ()))
        self.add_keys()
        if r.get("user_profile"):
            upconfig.store(self.realm, r["user_profile"]["config"], self.id_for(Component, r["user_profile"]["id"]))
        self.add_authorization()
        return self.realm


def _warn_recaptcha(data, p):
    """reCAPTCHA needs Google's service, which this server does not call: a realm whose
    registration form enables it gets no registration page (``realms.signin.steps.registration``)."""
    for index, flow in enumerate(data.get("authenticationFlows") or ()):
        for execution in (flow.get("authenticationExecutions") or ()) if isinstance(flow, dict) else ():
            if isinstance(execution, dict) and execution.get("authenticator") == "registration-recaptcha-action" \
                    and execution.get("requirement", "DISABLED") != "DISABLED":
                p.unsupported(f"authenticationFlows[{index}] ({flow.get('alias')})",
                              "registration-recaptcha-action is enabled but reCAPTCHA is not supported: "
                              "registration is refused while it stays enabled")


def _warn_webauthn_algorithms(data, p):
    """A WebAuthn policy naming a signature algorithm no key can be verified with here: the
    others are offered, that one is not (a key that only has it cannot be registered)."""
    for key in ("webAuthnPolicySignatureAlgorithms", "webAuthnPolicyPasswordlessSignatureAlgorithms"):
        named = data.get(key) or ()
        for algorithm in (named if isinstance(named, list) else [named]):
            if algorithm in webauthn.UNSUPPORTED_ALGORITHMS:
                p.unsupported(key, f"{algorithm} is not supported: keys are not asked for it")


def import_realm(data, *, override=False, auth=None):
    """Import a RealmRepresentation (a dict). One transaction: on RepresentationError nothing
    is changed. Returns ImportResult(realm, warnings). An import made by a caller (``auth``,
    ``admin_events.AuthDetails``) is their admin event: CREATE (or UPDATE) of the realm."""
    p = Parser()
    r = parse_realm(copy.deepcopy(data), p)
    _warn_recaptcha(data, p)
    _warn_webauthn_algorithms(data, p)
    merge_builtins(r)
    with transaction.atomic():
        existing = Realm.objects.select_for_update().filter(name=r["name"]).first()
        if existing is not None and not override:
            raise RepresentationError("realm", f"realm {r['name']!r} already exists (use override to replace it)")
        realm = _Applier(r, p).run(existing)
        ensure_delegated_client(realm)
        if realm.admin_permissions_enabled:  # as Keycloak's import, when the file has no such client
            permissions_client(realm)
        if auth is not None:
            admin_events.record(realm, "UPDATE" if existing else "CREATE", "REALM", "", auth=auth,
                                representation=lambda: admin_events.model_representation(realm))
    return ImportResult(realm=realm, warnings=p.warnings)
