"""The realm's own settings and the file's top level: step 1 (parse) of an import over every
resource, and the export."""
from cryptography.hazmat.primitives.asymmetric import rsa

from ..administration.admin_permissions import PERMISSIONS_CLIENT
from ..audit.events import EVENT_LISTENERS
from ..credentials import password_policy
from ..http import admission
from ..models import Client, ClientScope, Group, RealmKey, Role, User
from ..signin.flows import CLIENTS_FLOW
from ..users.profile import config as upconfig
from .authentication import KEYS as AUTHENTICATION_KEYS
from .authentication import authentication_reps, parse_authentication
from .client_policies import parse_sections, plain_attributes, store, stored_policies, stored_profiles
from .client_scopes import parse_scope, scope_rep
from .clients import add_attribute_parts, client_reps, parse_client
from .components import (
    KEY_PROVIDER,
    key_component,
    load_cert,
    load_private,
    parse_components,
    parse_user_profile,
    policy_reps,
)
from .fields import (
    RepresentationError,
    as_bool,
    as_dict,
    as_int,
    as_list,
    as_str,
    as_str_list,
    as_str_map,
    at,
    json_fields,
    model_fields,
    spec_of,
)
from .groups import group_rep, parse_group
from .identity_providers import export_identity_providers, parse_identity_providers
from .organizations import export_organizations, parse_organizations
from .roles import parse_roles, parse_scope_mapping, role_names, role_rep
from .user_storage import parse_user_storage, user_storage_reps
from .users import parse_user, user_rep


def _password_policy(value, path):
    # A policy this server does not know or cannot enforce fails the import: never ignored.
    try:
        password_policy.parse(value)
    except password_policy.PolicyConfigError as exc:
        raise RepresentationError(path, str(exc)) from None
    return value


REALM_FIELDS = {
    "id": ("id", as_str),
    "displayName": ("display_name", as_str),
    "displayNameHtml": ("display_name_html", as_str),
    "enabled": ("enabled", as_bool),
    "sslRequired": ("ssl_required", lambda v, p: as_str(v, p).lower()),
    "accessTokenLifespan": ("access_token_lifespan", as_int),
    "accessTokenLifespanForImplicitFlow": ("access_token_lifespan_for_implicit_flow", as_int),
    "ssoSessionIdleTimeout": ("sso_session_idle_timeout", as_int),
    "ssoSessionMaxLifespan": ("sso_session_max_lifespan", as_int),
    "ssoSessionIdleTimeoutRememberMe": ("sso_session_idle_timeout_remember_me", as_int),
    "ssoSessionMaxLifespanRememberMe": ("sso_session_max_lifespan_remember_me", as_int),
    "clientSessionIdleTimeout": ("client_session_idle_timeout", as_int),
    "clientSessionMaxLifespan": ("client_session_max_lifespan", as_int),
    "offlineSessionIdleTimeout": ("offline_session_idle_timeout", as_int),
    "offlineSessionMaxLifespanEnabled": ("offline_session_max_lifespan_enabled", as_bool),
    "offlineSessionMaxLifespan": ("offline_session_max_lifespan", as_int),
    "clientOfflineSessionIdleTimeout": ("client_offline_session_idle_timeout", as_int),
    "clientOfflineSessionMaxLifespan": ("client_offline_session_max_lifespan", as_int),
    "accessCodeLifespan": ("access_code_lifespan", as_int),
    "accessCodeLifespanUserAction": ("access_code_lifespan_user_action", as_int),
    "accessCodeLifespanLogin": ("access_code_lifespan_login", as_int),
    "actionTokenGeneratedByAdminLifespan": ("action_token_generated_by_admin_lifespan", as_int),
    "actionTokenGeneratedByUserLifespan": ("action_token_generated_by_user_lifespan", as_int),
    "oauth2DeviceCodeLifespan": ("oauth2_device_code_lifespan", as_int),
    "oauth2DevicePollingInterval": ("oauth2_device_polling_interval", as_int),
    "notBefore": ("not_before", as_int),
    "defaultSignatureAlgorithm": ("default_signature_algorithm", lambda v, path: _signature_algorithm(v, path)),
    "revokeRefreshToken": ("revoke_refresh_token", as_bool),
    "refreshTokenMaxReuse": ("refresh_token_max_reuse", as_int),
    "bruteForceProtected": ("brute_force_protected", as_bool),
    "permanentLockout": ("permanent_lockout", as_bool),
    "maxTemporaryLockouts": ("max_temporary_lockouts", as_int),
    "maxFailureWaitSeconds": ("max_failure_wait_seconds", as_int),
    "minimumQuickLoginWaitSeconds": ("minimum_quick_login_wait_seconds", as_int),
    "waitIncrementSeconds": ("wait_increment_seconds", as_int),
    "quickLoginCheckMilliSeconds": ("quick_login_check_milli_seconds", as_int),
    "maxDeltaTimeSeconds": ("max_delta_time_seconds", as_int),
    "failureFactor": ("failure_factor", as_int),
    "registrationAllowed": ("registration_allowed", as_bool),
    "registrationEmailAsUsername": ("registration_email_as_username", as_bool),
    "rememberMe": ("remember_me", as_bool),
    "verifyEmail": ("verify_email", as_bool),
    "loginWithEmailAllowed": ("login_with_email_allowed", as_bool),
    "duplicateEmailsAllowed": ("duplicate_emails_allowed", as_bool),
    "resetPasswordAllowed": ("reset_password_allowed", as_bool),
    "editUsernameAllowed": ("edit_username_allowed", as_bool),
    "webAuthnPolicyPasswordlessPasskeysEnabled": ("passkeys_enabled", as_bool),
    "organizationsEnabled": ("organizations_enabled", as_bool),
    "scimApiEnabled": ("scim_api_enabled", as_bool),
    "adminPermissionsEnabled": ("admin_permissions_enabled", as_bool),
    "userManagedAccessAllowed": ("user_managed_access_allowed", as_bool),
    "loginTheme": ("login_theme", as_str),
    "accountTheme": ("account_theme", as_str),
    "emailTheme": ("email_theme", as_str),
    "internationalizationEnabled": ("internationalization_enabled", as_bool),
    "supportedLocales": ("supported_locales", as_str_list),
    "defaultLocale": ("default_locale", as_str),
    "eventsEnabled": ("events_enabled", as_bool),
    "eventsExpiration": ("events_expiration", as_int),
    "eventsListeners": ("events_listeners", lambda v, p: _events_listeners(as_str_list(v, p), p)),
    "enabledEventTypes": ("enabled_event_types", as_str_list),
    "adminEventsEnabled": ("admin_events_enabled", as_bool),
    "adminEventsDetailsEnabled": ("admin_events_details_enabled", as_bool),
    "browserFlow": ("browser_flow", as_str),
    "registrationFlow": ("registration_flow", as_str),
    "directGrantFlow": ("direct_grant_flow", as_str),
    "resetCredentialsFlow": ("reset_credentials_flow", as_str),
    "clientAuthenticationFlow": ("client_authentication_flow", lambda v, p: _client_authentication_flow(as_str(v, p), p)),
    "dockerAuthenticationFlow": ("docker_authentication_flow", as_str),
    "firstBrokerLoginFlow": ("first_broker_login_flow", as_str),
    "passwordPolicy": ("password_policy", lambda v, p: _password_policy(as_str(v, p), p)),
    "browserSecurityHeaders": ("browser_security_headers", as_str_map),
    "smtpServer": ("smtp_server", as_str_map),
    "requiredCredentials": ("required_credentials", as_str_list),
    "attributes": ("attributes", lambda v, p: _attributes(as_str_map(v, p), p)),
    "localizationTexts": ("localization_texts", as_dict),
}
# Policy groups stored as JSON with their representation keys.
POLICY_PREFIXES = (("otpPolicy", "otp_policy"), ("otpSupportedApplications", "otp_policy"),
                   ("webAuthnPolicy", "webauthn_policy"))

# Keys Keycloak computes from other data (or that only describe the export itself).
_DERIVED = {"keycloakVersion", "realm", "publicKey", "certificate", "adminPermissionsClient"}


def _attributes(value, path):
    refusal = admission.check_attributes(value)
    if refusal:
        raise RepresentationError(path, refusal)
    return value


def _signature_algorithm(value, path):
    """Refused here rather than answered with an error on every token request later."""
    value = as_str(value, path)
    allowed = [alg for alg, _ in RealmKey.ALGORITHMS]
    if value not in allowed:
        raise RepresentationError(path, f"signature algorithm {value!r} not supported (one of {', '.join(allowed)})")
    return value


def _events_listeners(listeners, path):
    unknown = [name for name in listeners if name not in EVENT_LISTENERS]
    if unknown:
        raise RepresentationError(path, f"unknown event listener {unknown[0]!r} (this server has "
                                        f"{', '.join(EVENT_LISTENERS)} only)")
    return listeners


def _listeners_to_import(listeners, path, p):
    for name in listeners:
        if name not in EVENT_LISTENERS:
            p.unsupported(path, f"event listener {name!r} not on this server (it has {', '.join(EVENT_LISTENERS)} "
                                "only), not imported")
    return [name for name in listeners if name in EVENT_LISTENERS]


def _client_authentication_flow(alias, path):
    # Clients authenticate by their own clientAuthenticatorType (oidc.client_auth), Keycloak's
    # built-in "clients" flow; no other flow would be run, so none is taken.
    if alias != CLIENTS_FLOW.alias:
        raise RepresentationError(path, f"only the built-in {CLIENTS_FLOW.alias!r} flow is supported (client "
                                        "authentication is chosen per client, by its client authenticator)")
    return alias


def parse_realm(data, p):
    if not isinstance(data, dict):
        raise RepresentationError("", "expected a JSON object (a RealmRepresentation)")
    realm_keys = set(REALM_FIELDS) | {
        "realm", "roles", "groups", "users", "clients", "clientScopes", "scopeMappings",
        "clientScopeMappings", "defaultRole", "defaultRoles", "defaultDefaultClientScopes",
        "defaultOptionalClientScopes", "components", "privateKey", "organizations", "identityProviders",
        "identityProviderMappers", *AUTHENTICATION_KEYS,
    }
    policies = {k: v for k, v in data.items() if k.startswith(tuple(pfx for pfx, _ in POLICY_PREFIXES))
                and k not in realm_keys}
    rest = {k: v for k, v in data.items() if k not in policies}
    spec = spec_of(REALM_FIELDS)
    spec.update({
        "realm": as_str, "roles": as_dict, "groups": as_list, "users": as_list, "clients": as_list,
        "clientScopes": as_list, "scopeMappings": as_list, "clientScopeMappings": as_dict,
        "defaultRole": as_dict, "defaultRoles": as_str_list, "defaultDefaultClientScopes": as_str_list,
        "defaultOptionalClientScopes": as_str_list, "components": as_dict, "privateKey": as_str,
        "organizations": as_list, "identityProviders": as_list, "identityProviderMappers": as_list,
        **{key: as_list for key in AUTHENTICATION_KEYS},
        # A Keycloak export may name listeners of its own server: reported and left out here
        # (the Admin API refuses them).
        "eventsListeners": lambda v, path: _listeners_to_import(as_str_list(v, path), path, p),
        "clientPolicies": as_dict, "clientProfiles": as_dict,
    })
    top = p.take(rest, "", spec, derived=_DERIVED - {"realm"}, required=("realm",))
    out = {"name": top["realm"], "settings": model_fields(REALM_FIELDS, top),
           "version": _major_version(data.get("keycloakVersion"))}
    # Kept as Keycloak keeps them, in two realm attributes that no plain attribute may overwrite.
    out["settings"]["attributes"] = store(plain_attributes(out["settings"].get("attributes")), *parse_sections(top))
    for _prefix, field_name in POLICY_PREFIXES:
        out["settings"].setdefault(field_name, {})
    for key, value in policies.items():
        field_name = next(f for pfx, f in POLICY_PREFIXES if key.startswith(pfx))
        out["settings"][field_name][key] = value

    out["scopes"] = [parse_scope(s, f"clientScopes[{i}]", p) for i, s in enumerate(top.get("clientScopes", []))]
    out["clients"] = [parse_client(c, f"clients[{i}]", p, imported=True) for i, c in enumerate(top.get("clients", []))]
    out["realm_roles"], out["client_roles"] = parse_roles(top.get("roles", {}), p)
    out["groups"] = [parse_group(g, f"groups[{i}]", p) for i, g in enumerate(top.get("groups", []))]
    out["users"] = [parse_user(u, f"users[{i}]", p) for i, u in enumerate(top.get("users", []))]
    out["organizations"] = parse_organizations(top)
    out["identity_providers"], out["identity_provider_mappers"] = parse_identity_providers(top, p)
    out["scope_mappings"] = [
        parse_scope_mapping(m, f"scopeMappings[{i}]", p) for i, m in enumerate(top.get("scopeMappings", []))
    ]
    out["client_scope_mappings"] = {}
    for owner, mappings in top.get("clientScopeMappings", {}).items():
        path = f"clientScopeMappings.{owner}"
        out["client_scope_mappings"][owner] = [
            parse_scope_mapping(m, f"{path}[{i}]", p) for i, m in enumerate(as_list(mappings, path))
        ]
    out["default_role"] = None
    if "defaultRole" in top:
        out["default_role"] = p.take(top["defaultRole"], "defaultRole", {"name": as_str},
                                     derived={"id", "description", "composite", "clientRole", "containerId"},
                                     required=("name",))["name"]
    out["default_roles_old"] = top.get("defaultRoles")
    out["default_default_scopes"] = top.get("defaultDefaultClientScopes")
    out["default_optional_scopes"] = top.get("defaultOptionalClientScopes")
    out["authentication"] = parse_authentication(top, p)
    out["keys"] = parse_components(top.get("components", {}), p)
    out["user_storage"] = parse_user_storage(top.get("components", {}), p)
    out["user_profile"] = parse_user_profile(top.get("components", {}), p)
    if "privateKey" in top:
        out["keys"].append({
            "_path": "privateKey", "id": None, "name": "rsa", "algorithm": "RS256", "provider_id": "rsa",
            "private": load_private("privateKey", top["privateKey"], rsa.RSAPrivateKey),
            "certificate": (load_cert("certificate", as_str(data["certificate"], "certificate"))
                            if data.get("certificate") else None),
            "priority": 100, "status": RealmKey.ACTIVE,
        })
    _check_unique(out["clients"], "clientId", "client_id")
    _check_unique(out["scopes"], "name", "name")
    _check_unique(out["realm_roles"], "name", "name")
    for roles in out["client_roles"].values():
        _check_unique(roles, "name", "name")
    _check_unique(out["users"], "username", "username")
    return out


def _check_unique(items, json_key, model_key):
    seen = set()
    for item in items:
        value = item["fields"][model_key]
        if value in seen:
            raise RepresentationError(at(item["_path"], json_key), f"duplicate {value!r}")
        seen.add(value)


def _major_version(value):
    """Major version of ``keycloakVersion`` ("9.0.0-SNAPSHOT" -> 9); a file without one is
    treated as current."""
    head = value.split(".", 1)[0] if isinstance(value, str) else ""
    return int(head) if head.isdigit() else 10**6


def realm_settings_rep(realm):
    """The realm's own settings: the top of its export without its clients, roles, groups,
    users, scopes and keys (what the Admin API's GET /admin/realms/{realm} answers)."""
    rep = {"id": realm.id, "realm": realm.name}
    # Unset optional values are left out, as Keycloak leaves out nulls (an empty email or
    # federationLink would mean something else to Keycloak).
    rep.update({k: v for k, v in json_fields(realm, REALM_FIELDS).items() if v not in ("", None)})
    rep["attributes"] = plain_attributes(realm.attributes)
    # Keycloak's realm GET carries them too (ClientPolicyManager.updateRealmRepresentationFromModel).
    rep["clientPolicies"] = stored_policies(realm.attributes)
    rep["clientProfiles"] = stored_profiles(realm.attributes)
    rep.update(realm.otp_policy)
    rep.update(realm.webauthn_policy)
    if realm.default_role_id:
        d = realm.default_role
        rep["defaultRole"] = {"id": d.id, "name": d.name, "description": d.description, "composite": True,
                              "clientRole": False, "containerId": realm.id}
    return rep


def export_realm(realm):
    """The realm as a RealmRepresentation dict (secrets and keys included, like a Keycloak
    full export)."""
    rep = realm_settings_rep(realm)

    clients = list(Client.objects.filter(realm=realm).order_by("client_id"))
    roles = list(Role.objects.filter(realm=realm).select_related("client").order_by("name"))
    rep["roles"] = {
        "realm": [role_rep(r, realm.id) for r in roles if r.client_id is None],
        "client": {c.client_id: [role_rep(r, c.id) for r in roles if r.client_id == c.id] for c in clients},
    }

    groups = list(Group.objects.filter(realm=realm).order_by("name"))
    children_of = {}
    for g in groups:
        children_of.setdefault(g.parent_id, []).append(g)
    rep["groups"] = [group_rep(g, children_of, None) for g in children_of.get(None, [])]

    rep["users"] = [user_rep(user) for user in User.objects.filter(realm=realm)
                    .select_related("service_account_client").order_by("username")]
    organizations = export_organizations(realm)
    if organizations:
        rep["organizations"] = organizations

    rep["scopeMappings"] = []
    rep["clientScopeMappings"] = {}
    scopes = list(ClientScope.objects.filter(realm=realm).order_by("name"))
    for target, key, name in [(c, "client", c.client_id) for c in clients] + [(s, "clientScope", s.name) for s in scopes]:
        realm_names, client_map = role_names(list(target.scope_roles.all().select_related("client")))
        if realm_names:
            rep["scopeMappings"].append({key: name, "roles": realm_names})
        for owner, names in client_map.items():
            rep["clientScopeMappings"].setdefault(owner, []).append({key: name, "roles": names})

    rep["clients"] = client_reps(clients)
    add_attribute_parts(realm, rep["clients"], dormant=True)
    permissions_client = next((c for c in clients if c.client_id == PERMISSIONS_CLIENT and c.authorization_settings),
                              None)
    if permissions_client is not None:
        rep["adminPermissionsClient"] = {"id": permissions_client.id, "clientId": permissions_client.client_id}

    rep["clientScopes"] = [scope_rep(s) for s in scopes]
    realm_links = list(realm.default_scope_links.select_related("client_scope").order_by("client_scope__name"))
    rep["defaultDefaultClientScopes"] = [x.client_scope.name for x in realm_links if x.default]
    rep["defaultOptionalClientScopes"] = [x.client_scope.name for x in realm_links if not x.default]
    rep["components"] = {
        # An order an import keeps (the rows are created in it): an export of the copy is the same.
        KEY_PROVIDER: [key_component(k, realm.name) for k in RealmKey.objects.filter(realm=realm).order_by(
            "-priority", "provider_name", "algorithm", "created")],
        **user_storage_reps(realm),
        **policy_reps(realm),
        **upconfig.component_reps(realm),
    }
    rep.update(authentication_reps(realm))
    rep["identityProviders"], rep["identityProviderMappers"] = export_identity_providers(realm)
    return rep
