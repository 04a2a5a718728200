"""Realm import and export in Keycloak's RealmRepresentation JSON.

An import runs in three steps inside one transaction:

1. *parse*: the file is checked key by key against what the model holds and turned into plain
   dicts; a wrong type raises RepresentationError naming the JSON path; a key the model does not
   hold becomes a warning naming its path (never silently dropped);
2. *built-ins*: Keycloak's built-ins the file lacks (by name) are merged in (realms/builtins.py),
   so a created realm and an imported one take the same path;
3. *apply*: rows are written and names resolved; a dangling reference raises
   RepresentationError with its path and the transaction rolls everything back.

Export writes the same key names back; see docs/decisions/0002-realm-representation.md.
"""
import base64
import copy
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ValidationError
from django.db import transaction
from jwcrypto import jwk

from . import builtins, hashers, keys, user_storage_components
from .models import (
    Client,
    ClientScope,
    ClientScopeLink,
    Credential,
    Group,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    Role,
    User,
)


class RepresentationError(Exception):
    """An invalid representation; ``str()`` is one line starting with the JSON path."""

    def __init__(self, path, message):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass
class ImportResult:
    realm: Realm
    warnings: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Value checkers: each takes (value, path) and returns the normalised value or raises.


def _str(v, path):
    if isinstance(v, str):
        return v
    raise RepresentationError(path, "expected a string")


def _bool(v, path):
    if isinstance(v, bool):
        return v
    # Hand-written files (Keycloak's own testsuite among them) give booleans as strings.
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise RepresentationError(path, "expected a boolean")


def _int(v, path):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise RepresentationError(path, "expected an integer")


def _str_list(v, path):
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise RepresentationError(path, "expected a list of strings")


def _scalar_str(v, path):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (str, int, float)):
        return str(v)
    raise RepresentationError(path, "expected a string")


def _str_map(v, path):
    """A map of string to string (client attributes, mapper config, smtpServer ...)."""
    if not isinstance(v, dict):
        raise RepresentationError(path, "expected an object of strings")
    return {k: _scalar_str(x, f"{path}.{k}") for k, x in v.items() if x is not None}


def _multi_map(v, path):
    """A map of string to list of strings (user, group and role attributes)."""
    if not isinstance(v, dict):
        raise RepresentationError(path, "expected an object of string lists")
    out = {}
    for k, x in v.items():
        if isinstance(x, str):
            out[k] = [x]
        else:
            out[k] = _str_list(x, f"{path}.{k}")
    return out


def _dict(v, path):
    if isinstance(v, dict):
        return v
    raise RepresentationError(path, "expected an object")


def _list(v, path):
    if isinstance(v, list):
        return v
    raise RepresentationError(path, "expected a list")


def _role_map(v, path):
    """{clientId: [role names]}"""
    v = _dict(v, path)
    return {k: _str_list(x, f"{path}.{k}") for k, x in v.items()}


def _composites(v, path):
    v = _dict(v, path)
    out = {"realm": [], "client": {}}
    for k, x in v.items():
        if k == "realm":
            out["realm"] = _str_list(x, f"{path}.realm")
        elif k == "client":
            out["client"] = _role_map(x, f"{path}.client")
        else:
            raise RepresentationError(f"{path}.{k}", "expected only 'realm' and 'client'")
    return out


def _at(path, key):
    return f"{path}.{key}" if path else key


class _Parser:
    def __init__(self):
        self.warnings = []

    def take(self, obj, path, spec, derived=(), required=()):
        """Check ``obj`` against ``spec`` {key: checker}; return the present, non-null values.

        Keys in ``derived`` are computed by Keycloak from other data and carry nothing of their
        own; any other key is reported as unsupported."""
        if not isinstance(obj, dict):
            raise RepresentationError(path, "expected an object")
        out = {}
        for key, value in obj.items():
            if key in spec:
                if value is not None:
                    out[key] = spec[key](value, _at(path, key))
            elif key not in derived and value not in (None, [], {}):
                self.warnings.append(f"{_at(path, key)}: not supported, not imported")
        for key in required:
            if not out.get(key):
                raise RepresentationError(_at(path, key), "required")
        return out

    def unsupported(self, path, what="not supported, not imported"):
        self.warnings.append(f"{path}: {what}")


# ---------------------------------------------------------------------------------------------
# Field tables: JSON key -> (model field, checker).

_REALM_FIELDS = {
    "id": ("id", _str),
    "displayName": ("display_name", _str),
    "displayNameHtml": ("display_name_html", _str),
    "enabled": ("enabled", _bool),
    "sslRequired": ("ssl_required", lambda v, p: _str(v, p).lower()),
    "accessTokenLifespan": ("access_token_lifespan", _int),
    "accessTokenLifespanForImplicitFlow": ("access_token_lifespan_for_implicit_flow", _int),
    "ssoSessionIdleTimeout": ("sso_session_idle_timeout", _int),
    "ssoSessionMaxLifespan": ("sso_session_max_lifespan", _int),
    "ssoSessionIdleTimeoutRememberMe": ("sso_session_idle_timeout_remember_me", _int),
    "ssoSessionMaxLifespanRememberMe": ("sso_session_max_lifespan_remember_me", _int),
    "clientSessionIdleTimeout": ("client_session_idle_timeout", _int),
    "clientSessionMaxLifespan": ("client_session_max_lifespan", _int),
    "offlineSessionIdleTimeout": ("offline_session_idle_timeout", _int),
    "offlineSessionMaxLifespanEnabled": ("offline_session_max_lifespan_enabled", _bool),
    "offlineSessionMaxLifespan": ("offline_session_max_lifespan", _int),
    "clientOfflineSessionIdleTimeout": ("client_offline_session_idle_timeout", _int),
    "clientOfflineSessionMaxLifespan": ("client_offline_session_max_lifespan", _int),
    "accessCodeLifespan": ("access_code_lifespan", _int),
    "accessCodeLifespanUserAction": ("access_code_lifespan_user_action", _int),
    "accessCodeLifespanLogin": ("access_code_lifespan_login", _int),
    "actionTokenGeneratedByAdminLifespan": ("action_token_generated_by_admin_lifespan", _int),
    "actionTokenGeneratedByUserLifespan": ("action_token_generated_by_user_lifespan", _int),
    "oauth2DeviceCodeLifespan": ("oauth2_device_code_lifespan", _int),
    "oauth2DevicePollingInterval": ("oauth2_device_polling_interval", _int),
    "notBefore": ("not_before", _int),
    "defaultSignatureAlgorithm": ("default_signature_algorithm", _str),
    "revokeRefreshToken": ("revoke_refresh_token", _bool),
    "refreshTokenMaxReuse": ("refresh_token_max_reuse", _int),
    "bruteForceProtected": ("brute_force_protected", _bool),
    "permanentLockout": ("permanent_lockout", _bool),
    "maxTemporaryLockouts": ("max_temporary_lockouts", _int),
    "maxFailureWaitSeconds": ("max_failure_wait_seconds", _int),
    "minimumQuickLoginWaitSeconds": ("minimum_quick_login_wait_seconds", _int),
    "waitIncrementSeconds": ("wait_increment_seconds", _int),
    "quickLoginCheckMilliSeconds": ("quick_login_check_milli_seconds", _int),
    "maxDeltaTimeSeconds": ("max_delta_time_seconds", _int),
    "failureFactor": ("failure_factor", _int),
    "registrationAllowed": ("registration_allowed", _bool),
    "registrationEmailAsUsername": ("registration_email_as_username", _bool),
    "rememberMe": ("remember_me", _bool),
    "verifyEmail": ("verify_email", _bool),
    "loginWithEmailAllowed": ("login_with_email_allowed", _bool),
    "duplicateEmailsAllowed": ("duplicate_emails_allowed", _bool),
    "resetPasswordAllowed": ("reset_password_allowed", _bool),
    "editUsernameAllowed": ("edit_username_allowed", _bool),
    "webAuthnPolicyPasswordlessPasskeysEnabled": ("passkeys_enabled", _bool),
    "organizationsEnabled": ("organizations_enabled", _bool),
    "loginTheme": ("login_theme", _str),
    "accountTheme": ("account_theme", _str),
    "emailTheme": ("email_theme", _str),
    "internationalizationEnabled": ("internationalization_enabled", _bool),
    "supportedLocales": ("supported_locales", _str_list),
    "defaultLocale": ("default_locale", _str),
    "eventsEnabled": ("events_enabled", _bool),
    "eventsExpiration": ("events_expiration", _int),
    "eventsListeners": ("events_listeners", _str_list),
    "enabledEventTypes": ("enabled_event_types", _str_list),
    "adminEventsEnabled": ("admin_events_enabled", _bool),
    "adminEventsDetailsEnabled": ("admin_events_details_enabled", _bool),
    "browserFlow": ("browser_flow", _str),
    "registrationFlow": ("registration_flow", _str),
    "directGrantFlow": ("direct_grant_flow", _str),
    "resetCredentialsFlow": ("reset_credentials_flow", _str),
    "clientAuthenticationFlow": ("client_authentication_flow", _str),
    "dockerAuthenticationFlow": ("docker_authentication_flow", _str),
    "firstBrokerLoginFlow": ("first_broker_login_flow", _str),
    "passwordPolicy": ("password_policy", _str),
    "browserSecurityHeaders": ("browser_security_headers", _str_map),
    "smtpServer": ("smtp_server", _str_map),
    "requiredCredentials": ("required_credentials", _str_list),
    "attributes": ("attributes", _str_map),
    "localizationTexts": ("localization_texts", _dict),
}
# Policy groups stored as JSON with their representation keys.
_POLICY_PREFIXES = (("otpPolicy", "otp_policy"), ("otpSupportedApplications", "otp_policy"),
                    ("webAuthnPolicy", "webauthn_policy"))

_CLIENT_FIELDS = {
    "id": ("id", _str),
    "clientId": ("client_id", _str),
    "name": ("name", _str),
    "description": ("description", _str),
    "enabled": ("enabled", _bool),
    "alwaysDisplayInConsole": ("always_display_in_console", _bool),
    "protocol": ("protocol", _str),
    "publicClient": ("public_client", _bool),
    "bearerOnly": ("bearer_only", _bool),
    "clientAuthenticatorType": ("client_authenticator_type", _str),
    "registrationAccessToken": ("registration_access_token", _str),
    "standardFlowEnabled": ("standard_flow_enabled", _bool),
    "implicitFlowEnabled": ("implicit_flow_enabled", _bool),
    "directAccessGrantsEnabled": ("direct_access_grants_enabled", _bool),
    "serviceAccountsEnabled": ("service_accounts_enabled", _bool),
    "authorizationServicesEnabled": ("authorization_services_enabled", _bool),
    "consentRequired": ("consent_required", _bool),
    "fullScopeAllowed": ("full_scope_allowed", _bool),
    "frontchannelLogout": ("frontchannel_logout", _bool),
    "surrogateAuthRequired": ("surrogate_auth_required", _bool),
    "rootUrl": ("root_url", _str),
    "baseUrl": ("base_url", _str),
    "adminUrl": ("admin_url", _str),
    "redirectUris": ("redirect_uris", _str_list),
    "webOrigins": ("web_origins", _str_list),
    "attributes": ("attributes", _str_map),
    "authenticationFlowBindingOverrides": ("authentication_flow_binding_overrides", _str_map),
    "nodeReRegistrationTimeout": ("node_re_registration_timeout", _int),
    "notBefore": ("not_before", _int),
}
_CLIENT_EXTRA = {
    "secret": _str,
    "protocolMappers": _list,
    "defaultClientScopes": _str_list,
    "optionalClientScopes": _str_list,
    "defaultRoles": _str_list,
}

_SCOPE_FIELDS = {
    "id": ("id", _str),
    "name": ("name", _str),
    "description": ("description", _str),
    "protocol": ("protocol", _str),
    "attributes": ("attributes", _str_map),
}

_MAPPER_FIELDS = {
    "id": ("id", _str),
    "name": ("name", _str),
    "protocol": ("protocol", _str),
    "protocolMapper": ("protocol_mapper", _str),
    "consentRequired": ("consent_required", _bool),
    "config": ("config", _str_map),
}

_ROLE_FIELDS = {
    "id": ("id", _str),
    "name": ("name", _str),
    "description": ("description", _str),
    "attributes": ("attributes", _multi_map),
}

_GROUP_FIELDS = {
    "id": ("id", _str),
    "name": ("name", _str),
    "description": ("description", _str),
    "attributes": ("attributes", _multi_map),
}

_USER_FIELDS = {
    "id": ("id", _str),
    "username": ("username", lambda v, p: _str(v, p).lower()),
    "email": ("email", lambda v, p: _str(v, p).lower()),
    "emailVerified": ("email_verified", _bool),
    "firstName": ("first_name", _str),
    "lastName": ("last_name", _str),
    "enabled": ("enabled", _bool),
    "attributes": ("attributes", _multi_map),
    "federationLink": ("federation_link_id", _str),
    "requiredActions": ("required_actions", _str_list),
    "notBefore": ("not_before", _int),
}
_USER_EXTRA = {
    "credentials": _list,
    "realmRoles": _str_list,
    "clientRoles": _role_map,
    "groups": _str_list,
    "serviceAccountClientId": _str,
    "createdTimestamp": _int,
}

_CREDENTIAL_SPEC = {
    "id": _str,
    "type": _str,
    "userLabel": _str,
    "value": _str,
    "temporary": _bool,
    "hashedSaltedValue": _str,
    "salt": _str,
    "hashIterations": _int,
    "algorithm": _str,
    "secretData": _str,
    "credentialData": _str,
    "priority": _int,
    "createdDate": _int,
}

# Keys Keycloak computes from other data (or that only describe the export itself).
_DERIVED = {
    "realm": {"keycloakVersion", "realm", "publicKey", "certificate"},
    "client": {"access"},
    "role": {"composite", "clientRole", "containerId"},
    "group": {"path", "parentId", "subGroupCount", "access"},
    "user": {"totp", "disableableCredentialTypes", "access"},
}

_KEY_PROVIDER = "org.keycloak.keys.KeyProvider"


def _spec(table, extra=None):
    spec = {k: checker for k, (_, checker) in table.items()}
    spec.update(extra or {})
    return spec


def _model_fields(table, values):
    return {table[k][0]: v for k, v in values.items() if k in table}


# ---------------------------------------------------------------------------------------------
# Step 1: parse.


def _parse(data, p):
    if not isinstance(data, dict):
        raise RepresentationError("", "expected a JSON object (a RealmRepresentation)")
    realm_keys = set(_REALM_FIELDS) | {
        "realm", "roles", "groups", "users", "clients", "clientScopes", "scopeMappings",
        "clientScopeMappings", "defaultRole", "defaultRoles", "defaultDefaultClientScopes",
        "defaultOptionalClientScopes", "components", "privateKey",
    }
    policies = {k: v for k, v in data.items() if k.startswith(tuple(pfx for pfx, _ in _POLICY_PREFIXES))
                and k not in realm_keys}
    rest = {k: v for k, v in data.items() if k not in policies}
    spec = _spec(_REALM_FIELDS)
    spec.update({
        "realm": _str, "roles": _dict, "groups": _list, "users": _list, "clients": _list,
        "clientScopes": _list, "scopeMappings": _list, "clientScopeMappings": _dict,
        "defaultRole": _dict, "defaultRoles": _str_list, "defaultDefaultClientScopes": _str_list,
        "defaultOptionalClientScopes": _str_list, "components": _dict, "privateKey": _str,
    })
    top = p.take(rest, "", spec, derived=_DERIVED["realm"] - {"realm"}, required=("realm",))
    out = {"name": top["realm"], "settings": _model_fields(_REALM_FIELDS, top),
           "version": _major_version(data.get("keycloakVersion"))}
    for prefix, field_name in _POLICY_PREFIXES:
        out["settings"].setdefault(field_name, {})
    for key, value in policies.items():
        field_name = next(f for pfx, f in _POLICY_PREFIXES if key.startswith(pfx))
        out["settings"][field_name][key] = value

    out["scopes"] = [_parse_scope(s, f"clientScopes[{i}]", p) for i, s in enumerate(top.get("clientScopes", []))]
    out["clients"] = [_parse_client(c, f"clients[{i}]", p) for i, c in enumerate(top.get("clients", []))]
    out["realm_roles"], out["client_roles"] = _parse_roles(top.get("roles", {}), p)
    out["groups"] = [_parse_group(g, f"groups[{i}]", p) for i, g in enumerate(top.get("groups", []))]
    out["users"] = [_parse_user(u, f"users[{i}]", p) for i, u in enumerate(top.get("users", []))]
    out["scope_mappings"] = [
        _parse_scope_mapping(m, f"scopeMappings[{i}]", p) for i, m in enumerate(top.get("scopeMappings", []))
    ]
    out["client_scope_mappings"] = {}
    for owner, mappings in top.get("clientScopeMappings", {}).items():
        path = f"clientScopeMappings.{owner}"
        out["client_scope_mappings"][owner] = [
            _parse_scope_mapping(m, f"{path}[{i}]", p) for i, m in enumerate(_list(mappings, path))
        ]
    out["default_role"] = None
    if "defaultRole" in top:
        out["default_role"] = p.take(top["defaultRole"], "defaultRole", {"name": _str},
                                     derived={"id", "description", "composite", "clientRole", "containerId"},
                                     required=("name",))["name"]
    out["default_roles_old"] = top.get("defaultRoles")
    out["default_default_scopes"] = top.get("defaultDefaultClientScopes")
    out["default_optional_scopes"] = top.get("defaultOptionalClientScopes")
    out["keys"] = _parse_components(top.get("components", {}), p)
    try:
        out["user_storage"] = user_storage_components.parse(top.get("components", {}), p.unsupported)
    except user_storage_components.ComponentError as exc:
        raise RepresentationError(exc.path, exc.message) from None
    if "privateKey" in top:
        out["keys"].append({
            "_path": "privateKey", "id": None, "name": "rsa", "algorithm": "RS256",
            "private": _load_private("privateKey", top["privateKey"], rsa.RSAPrivateKey),
            "certificate": (_load_cert("certificate", _str(data["certificate"], "certificate"))
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
            raise RepresentationError(_at(item["_path"], json_key), f"duplicate {value!r}")
        seen.add(value)


def _parse_mapper(m, path, p):
    values = p.take(m, path, _spec(_MAPPER_FIELDS), required=("name", "protocolMapper"))
    return {"_path": path, "fields": _model_fields(_MAPPER_FIELDS, values)}


def _parse_scope(s, path, p):
    values = p.take(s, path, _spec(_SCOPE_FIELDS, {"protocolMappers": _list}), required=("name",))
    return {
        "_path": path,
        "fields": _model_fields(_SCOPE_FIELDS, values),
        "mappers": [_parse_mapper(m, f"{path}.protocolMappers[{i}]", p)
                    for i, m in enumerate(values.get("protocolMappers", []))],
    }


def _parse_client(c, path, p):
    values = p.take(c, path, _spec(_CLIENT_FIELDS, _CLIENT_EXTRA), derived=_DERIVED["client"],
                    required=("clientId",))
    return {
        "_path": path,
        "fields": _model_fields(_CLIENT_FIELDS, values),
        "secret": values.get("secret"),
        "mappers": [_parse_mapper(m, f"{path}.protocolMappers[{i}]", p)
                    for i, m in enumerate(values.get("protocolMappers", []))],
        "default_scopes": values.get("defaultClientScopes"),
        "optional_scopes": values.get("optionalClientScopes"),
        "default_roles_old": values.get("defaultRoles", []),
    }


def _parse_role(r, path, p):
    values = p.take(r, path, _spec(_ROLE_FIELDS, {"composites": _composites}), derived=_DERIVED["role"],
                    required=("name",))
    return {
        "_path": path,
        "fields": _model_fields(_ROLE_FIELDS, values),
        "composites": values.get("composites", {"realm": [], "client": {}}),
    }


def _parse_roles(roles, p):
    values = p.take(roles, "roles", {"realm": _list, "client": _dict})
    realm = [_parse_role(r, f"roles.realm[{i}]", p) for i, r in enumerate(values.get("realm", []))]
    client = {}
    for client_id, rows in values.get("client", {}).items():
        path = f"roles.client.{client_id}"
        client[client_id] = [_parse_role(r, f"{path}[{i}]", p) for i, r in enumerate(_list(rows, path))]
    return realm, client


def _parse_group(g, path, p):
    values = p.take(
        g, path,
        _spec(_GROUP_FIELDS, {"subGroups": _list, "realmRoles": _str_list, "clientRoles": _role_map}),
        derived=_DERIVED["group"], required=("name",),
    )
    children = [_parse_group(s, f"{path}.subGroups[{i}]", p) for i, s in enumerate(values.get("subGroups", []))]
    seen = set()
    for child in children:
        if child["fields"]["name"] in seen:
            raise RepresentationError(_at(child["_path"], "name"), f"duplicate {child['fields']['name']!r}")
        seen.add(child["fields"]["name"])
    return {
        "_path": path,
        "fields": _model_fields(_GROUP_FIELDS, values),
        "realm_roles": values.get("realmRoles", []),
        "client_roles": values.get("clientRoles", {}),
        "children": children,
    }


def _parse_user(u, path, p):
    values = p.take(u, path, _spec(_USER_FIELDS, _USER_EXTRA), derived=_DERIVED["user"], required=("username",))
    user = {
        "_path": path,
        "fields": _model_fields(_USER_FIELDS, values),
        "realm_roles": values.get("realmRoles", []),
        "client_roles": values.get("clientRoles", {}),
        "groups": values.get("groups", []),
        "service_account_client": values.get("serviceAccountClientId"),
        "credentials": [],
    }
    if "createdTimestamp" in values:
        user["fields"]["created"] = _from_millis(values["createdTimestamp"])
    for i, c in enumerate(values.get("credentials", [])):
        cred = _parse_credential(c, f"{path}.credentials[{i}]", p)
        if cred is not None:
            user["credentials"].append(cred)
            if cred.pop("temporary", False) and "UPDATE_PASSWORD" not in user["fields"].get("required_actions", []):
                user["fields"]["required_actions"] = [*user["fields"].get("required_actions", []), "UPDATE_PASSWORD"]
    return user


def _from_millis(ms):
    return datetime.fromtimestamp(ms / 1000, tz=dt_timezone.utc)


def _json_object(raw, path):
    try:
        value = json.loads(raw)
    except ValueError:
        raise RepresentationError(path, "expected a JSON object in a string") from None
    if not isinstance(value, dict):
        raise RepresentationError(path, "expected a JSON object in a string")
    return value


def _parse_credential(c, path, p):
    """A Credential row's fields, or None (with a warning) for a form we cannot keep."""
    v = p.take(c, path, _CREDENTIAL_SPEC, required=("type",))
    row = {"type": v["type"], "user_label": v.get("userLabel", ""), "temporary": v.get("temporary", False)}
    if "priority" in v:
        row["priority"] = v["priority"]
    if "createdDate" in v:
        row["created"] = _from_millis(v["createdDate"])
    if "id" in v:
        row["id"] = v["id"]
    if v["type"] != Credential.PASSWORD:
        if "secretData" not in v:
            p.unsupported(path, f"credential of type {v['type']!r} without secretData: not imported")
            return None
        row["secret_data"] = v["secretData"]
        row["credential_data"] = _json_object(v.get("credentialData", "{}"), _at(path, "credentialData"))
        return row
    if "value" in v:
        row["plain"] = v["value"]
    elif "hashedSaltedValue" in v:
        if "algorithm" not in v:
            raise RepresentationError(_at(path, "algorithm"), "required with hashedSaltedValue")
        row["secret_data"] = _keycloak_hash(
            v["algorithm"], v["hashedSaltedValue"], v.get("salt", ""), v.get("hashIterations", 1), None,
            _at(path, "algorithm"),
        )
    elif "secretData" in v and "credentialData" in v:
        secret = _json_object(v["secretData"], _at(path, "secretData"))
        cdata = _json_object(v["credentialData"], _at(path, "credentialData"))
        for key, obj, where in (("value", secret, "secretData"), ("algorithm", cdata, "credentialData")):
            if not isinstance(obj.get(key), str):
                raise RepresentationError(_at(path, f"{where}.{key}"), "expected a string")
        row["secret_data"] = _keycloak_hash(
            cdata["algorithm"], secret["value"], secret.get("salt", ""), cdata.get("hashIterations", 1),
            cdata.get("additionalParameters"), _at(path, "credentialData.algorithm"),
        )
    else:
        raise RepresentationError(path, "a password needs value, hashedSaltedValue or secretData/credentialData")
    return row


def _keycloak_hash(algorithm, hash_b64, salt_b64, iterations, params, path):
    try:
        base64.b64decode(hash_b64, validate=True)
        base64.b64decode(salt_b64, validate=True)
    except ValueError:
        raise RepresentationError(path.rsplit(".", 1)[0], "hash and salt must be base64") from None
    try:
        return hashers.encoded_from_keycloak(algorithm, hash_b64, salt_b64, int(iterations), params)
    except ValueError as exc:
        raise RepresentationError(path, str(exc)) from None


def _parse_scope_mapping(m, path, p):
    v = p.take(m, path, {"client": _str, "clientScope": _str, "clientTemplate": _str, "roles": _str_list},
               derived={"self"})
    if "clientTemplate" in v:  # Keycloak < 4 called client scopes client templates
        v.setdefault("clientScope", v.pop("clientTemplate"))
    if ("client" in v) == ("clientScope" in v):
        raise RepresentationError(path, "expected exactly one of client or clientScope")
    return {"_path": path, "client": v.get("client"), "scope": v.get("clientScope"), "roles": v.get("roles", [])}


# Keys ---------------------------------------------------------------------------------------

_KEY_ALGORITHMS = {
    "rsa": "RS256", "rsa-generated": "RS256", "ecdsa-generated": "ES256", "ecdsa": "ES256",
    "eddsa-generated": "EdDSA",
}
_CURVES = {"ES256": ("ecdsaEllipticCurveKey", "P-256"), "EdDSA": ("eddsaEllipticCurveKey", "Ed25519")}
_PRIVATE_KEY_CONFIG = {"RS256": "privateKey", "ES256": "ecdsaPrivateKey", "EdDSA": "eddsaPrivateKey"}
_KEY_TYPES = {"RS256": rsa.RSAPrivateKey, "ES256": ec.EllipticCurvePrivateKey, "EdDSA": ed25519.Ed25519PrivateKey}


def _der_or_pem(path, text):
    text = text.strip()
    if text.startswith("-----"):
        return text.encode(), True
    try:
        return base64.b64decode("".join(text.split()), validate=True), False
    except ValueError:
        raise RepresentationError(path, "expected a base64 DER or PEM value") from None


def _load_private(path, text, kind):
    raw, is_pem = _der_or_pem(path, text)
    loader = serialization.load_pem_private_key if is_pem else serialization.load_der_private_key
    try:
        key = loader(raw, password=None)
    except ValueError:
        raise RepresentationError(path, "not a readable private key") from None
    if not isinstance(key, kind):
        raise RepresentationError(path, "wrong key type for this provider")
    return key


def _load_cert(path, text):
    raw, is_pem = _der_or_pem(path, text)
    try:
        return x509.load_pem_x509_certificate(raw) if is_pem else x509.load_der_x509_certificate(raw)
    except ValueError:
        raise RepresentationError(path, "not a readable X.509 certificate") from None


def _parse_components(components, p):
    out = []
    for provider_type, entries in components.items():
        type_path = f'components["{provider_type}"]'
        for i, comp in enumerate(_list(entries, type_path)):
            path = f"{type_path}[{i}]"
            comp = _dict(comp, path)
            provider_id = comp.get("providerId")
            if provider_type == user_storage_components.USER_STORAGE:
                continue  # read by user_storage_components
            if provider_type != _KEY_PROVIDER or provider_id not in _KEY_ALGORITHMS:
                p.unsupported(path, f"component {provider_id!r} ({provider_type}) not supported, not imported")
                continue
            v = p.take(comp, path, {"id": _str, "name": _str, "providerId": _str, "config": _multi_map},
                       derived={"subType", "subComponents", "parentId"})
            config = {k: (x[0] if x else "") for k, x in v.get("config", {}).items()}
            cpath = f"{path}.config"
            algorithm = _KEY_ALGORITHMS[provider_id]
            if algorithm == "RS256" and (config.get("keyUse", "SIG").upper() != "SIG"
                                         or config.get("algorithm", "RS256") != "RS256"):
                p.unsupported(path, f"key {config.get('algorithm', 'RS256')}/{config.get('keyUse')} "
                              "not supported (RS256 signing keys only), not imported")
                continue
            if algorithm in _CURVES:
                curve_key, curve = _CURVES[algorithm]
                if config.get(curve_key, curve) != curve:
                    p.unsupported(path, f"curve {config[curve_key]!r} not supported ({curve} only), not imported")
                    continue
            private_text = config.get(_PRIVATE_KEY_CONFIG[algorithm])
            key = {
                "_path": path, "id": v.get("id"), "name": v.get("name") or provider_id, "algorithm": algorithm,
                "private": (_load_private(f"{cpath}.{_PRIVATE_KEY_CONFIG[algorithm]}", private_text,
                                          _KEY_TYPES[algorithm]) if private_text else None),
                "certificate": (_load_cert(f"{cpath}.certificate", config["certificate"])
                                if config.get("certificate") else None),
                "priority": _int(config.get("priority", "0"), f"{cpath}.priority"),
                "status": RealmKey.ACTIVE,
            }
            if not _bool(config.get("enabled", "true"), f"{cpath}.enabled"):
                key["status"] = RealmKey.DISABLED
            elif not _bool(config.get("active", "true"), f"{cpath}.active"):
                key["status"] = RealmKey.PASSIVE
            out.append(key)
    return out


# ---------------------------------------------------------------------------------------------
# Step 2: merge the built-ins the file lacks.


def _builtin_client(rep):
    p = _Parser()
    return _parse_client(rep, f"(built-in client {rep['clientId']})", p)


_MIGRATED_SCOPES = {"acr": 18, "basic": 25}


def _major_version(value):
    """Major version of ``keycloakVersion`` ("9.0.0-SNAPSHOT" -> 9); a file without one is
    treated as current."""
    head = value.split(".", 1)[0] if isinstance(value, str) else ""
    return int(head) if head.isdigit() else 10**6


def _merge_builtins(r):
    name = r["name"]
    added_scopes = set()
    scope_names = {s["fields"]["name"] for s in r["scopes"]}
    p = _Parser()
    for rep in builtins.client_scopes():
        if rep["name"] not in scope_names:
            r["scopes"].append(_parse_scope(rep, f"(built-in client scope {rep['name']})", p))
            added_scopes.add(rep["name"])
    # A file's explicit scope lists are kept as written, except that an export from a Keycloak
    # older than a built-in scope gets it linked as Keycloak's migration would (acr came with
    # 18, basic with 25); a file without lists gets the built-in defaults.
    migrated = {s for s, since in _MIGRATED_SCOPES.items() if s in added_scopes and r["version"] < since}
    for key, defaults in (("default_default_scopes", builtins.DEFAULT_DEFAULT_SCOPES),
                          ("default_optional_scopes", builtins.DEFAULT_OPTIONAL_SCOPES)):
        if r[key] is None:
            r[key] = list(defaults)
        else:
            r[key] += [s for s in defaults if s in migrated and s not in r[key]]
    scope_protocol = {s["fields"]["name"]: s["fields"].get("protocol", builtins.OIDC) for s in r["scopes"]}
    for client in r["clients"]:
        protocol = client["fields"].get("protocol", builtins.OIDC)
        for key, defaults in (("default_scopes", builtins.DEFAULT_DEFAULT_SCOPES),
                              ("optional_scopes", builtins.DEFAULT_OPTIONAL_SCOPES)):
            if client[key] is not None:
                client[key] += [s for s in defaults
                                if s in migrated and scope_protocol[s] == protocol and s not in client[key]]

    client_ids = {c["fields"]["client_id"] for c in r["clients"]}
    added_clients = set()
    for rep in builtins.clients(name):
        if rep["clientId"] not in client_ids:
            r["clients"].append(_builtin_client(rep))
            added_clients.add(rep["clientId"])
    for client_id, roles in builtins.CLIENT_ROLES.items():
        present = {x["fields"]["name"] for x in r["client_roles"].get(client_id, [])}
        for rep in roles:
            if rep["name"] not in present:
                r["client_roles"].setdefault(client_id, []).append(
                    _parse_role(rep, f"(built-in role {client_id}:{rep['name']})", p))

    realm_role_names = {x["fields"]["name"] for x in r["realm_roles"]}
    added_roles = set()
    for rep in builtins.realm_roles(name):
        if rep["name"] not in realm_role_names:
            r["realm_roles"].append(_parse_role(rep, f"(built-in role {rep['name']})", p))
            added_roles.add(rep["name"])

    if r["default_role"] is None:
        # Keycloak < 13 kept a list of default roles; 13+ has one composite role.
        default = builtins.default_role(name)
        r["default_role"] = default["name"]
        role = next((x for x in r["realm_roles"] if x["fields"]["name"] == default["name"]), None)
        if role is None:
            role = _parse_role({k: v for k, v in default.items() if k != "composites"},
                               "(built-in default role)", p)
            r["realm_roles"].append(role)
        comps = role["composites"]
        builtin_comps = default["composites"]
        wanted_realm = [x for x in builtin_comps["realm"] if x in added_roles]
        wanted_realm += r["default_roles_old"] or []
        wanted_client = {"account": builtin_comps["client"]["account"]} if "account" in added_clients else {}
        for client in r["clients"]:
            if client["default_roles_old"]:
                wanted_client.setdefault(client["fields"]["client_id"], []).extend(client["default_roles_old"])
        comps["realm"] += [x for x in wanted_realm if x not in comps["realm"]]
        for client_id, names in wanted_client.items():
            have = comps["client"].setdefault(client_id, [])
            have += [x for x in names if x not in have]

    for mapping in builtins.SCOPE_MAPPINGS:
        if mapping["clientScope"] in added_scopes:
            r["scope_mappings"].append(_parse_scope_mapping(mapping, "(built-in scope mapping)", p))
    for owner, mappings in builtins.CLIENT_SCOPE_MAPPINGS.items():
        for mapping in mappings:
            if mapping["client"] in added_clients:
                r["client_scope_mappings"].setdefault(owner, []).append(
                    _parse_scope_mapping(mapping, "(built-in client scope mapping)", p))


# ---------------------------------------------------------------------------------------------
# Step 3: apply.


class _Applier:
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

    def id_for(self, model, wanted):
        """Keep the file's id unless another realm already uses it (e.g. importing an export
        under a new name); cross-references in the file are by name, so a new id is safe."""
        if wanted and (model, wanted) not in self.claimed and not model.objects.filter(pk=wanted).exists():
            self.claimed.add((model, wanted))
            return wanted
        from .models import new_id

        return new_id()

    def save(self, obj, path, table, exclude=()):
        """full_clean (lengths, choices, ranges) with errors named by JSON path, then save."""
        try:
            obj.full_clean(exclude=["realm", "client", "client_scope", "parent", "user", "default_role",
                                    "service_account_client", *exclude],
                           validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            field_name, messages = next(iter(exc.message_dict.items()))
            json_key = next((k for k, (f, _) in table.items() if f == field_name), field_name)
            raise RepresentationError(_at(path, json_key), " ".join(messages)) from None
        obj.save()
        return obj

    # -- lookups with path-named errors
    def client(self, client_id, path):
        try:
            return self.clients[client_id]
        except KeyError:
            raise RepresentationError(path, f"unknown client {client_id!r}") from None

    def scope(self, name, path):
        try:
            return self.scopes[name]
        except KeyError:
            raise RepresentationError(path, f"unknown client scope {name!r}") from None

    def realm_role(self, name, path, create=False):
        if name not in self.realm_roles and create:
            self.realm_roles[name] = self.created_role(name, None, path)
        try:
            return self.realm_roles[name]
        except KeyError:
            raise RepresentationError(path, f"unknown realm role {name!r}") from None

    def client_role(self, client_id, name, path, create=False):
        client = self.client(client_id, path)
        if (client_id, name) not in self.client_roles and create:
            self.client_roles[(client_id, name)] = self.created_role(name, client, path)
        try:
            return self.client_roles[(client_id, name)]
        except KeyError:
            raise RepresentationError(path, f"unknown role {name!r} of client {client_id!r}") from None

    def created_role(self, name, client, path):
        # Keycloak creates a role that a user, group or scope mapping names but the file does
        # not define (real exports rely on it); composites and the default role must exist.
        self.p.unsupported(path, f"role {name!r} is not defined in roles; created empty, as Keycloak does")
        return self.new_role({"_path": path, "fields": {"name": name}}, client)

    def roles_from(self, realm_names, client_map, path, realm_key="realmRoles", client_key="clientRoles",
                   create=False):
        roles = [self.realm_role(n, f"{path}.{realm_key}[{i}]", create) for i, n in enumerate(realm_names)]
        for client_id, names in client_map.items():
            roles += [self.client_role(client_id, n, f"{path}.{client_key}.{client_id}[{i}]", create)
                      for i, n in enumerate(names)]
        return roles

    # -- steps
    def run(self, existing):
        r = self.r
        if existing is not None:
            existing.delete()
        settings = dict(r["settings"])
        settings["id"] = self.id_for(Realm, settings.get("id"))
        self.realm = self.save(Realm(name=r["name"], **settings), "", {"realm": ("name", None), **_REALM_FIELDS})
        for scope in r["scopes"]:
            self.add_scope(scope)
        for client in r["clients"]:
            self.add_client(client)
        self.add_roles()
        self.realm.default_role = self.realm_role(r["default_role"], "defaultRole.name")
        self.realm.save(update_fields=["default_role"])
        self.link_scopes()
        self.add_scope_mappings()
        for group in r["groups"]:
            self.add_group(group, None)
        self.components = user_storage_components.store(self.realm, r["user_storage"], self.id_for)
        for user in r["users"]:
            self.add_user(user)
        self.add_service_accounts()
        self.add_keys()
        return self.realm

    def add_mappers(self, mappers, **owner):
        for m in mappers:
            fields = dict(m["fields"])
            fields["id"] = self.id_for(ProtocolMapper, fields.get("id"))
            self.save(ProtocolMapper(**owner, **fields), m["_path"], _MAPPER_FIELDS)

    def add_scope(self, s):
        fields = dict(s["fields"])
        fields["id"] = self.id_for(ClientScope, fields.get("id"))
        scope = self.save(ClientScope(realm=self.realm, **fields), s["_path"], _SCOPE_FIELDS)
        self.scopes[scope.name] = scope
        self.add_mappers(s["mappers"], client_scope=scope)

    def add_client(self, c):
        fields = dict(c["fields"])
        fields["id"] = self.id_for(Client, fields.get("id"))
        client = Client(realm=self.realm, **fields)
        if c["secret"]:
            client.set_secret(c["secret"])
        elif client.confidential and client.client_authenticator_type in ("client-secret", "client-secret-jwt"):
            client.regenerate_secret()  # as Keycloak does for a confidential client without one
        self.save(client, c["_path"], _CLIENT_FIELDS)
        self.clients[client.client_id] = client
        self.add_mappers(c["mappers"], client=client)

    def add_roles(self):
        r = self.r
        for role in r["realm_roles"]:
            self.realm_roles[role["fields"]["name"]] = self.new_role(role, None)
        for client_id, roles in r["client_roles"].items():
            client = self.client(client_id, f"roles.client.{client_id}")
            for role in roles:
                self.client_roles[(client_id, role["fields"]["name"])] = self.new_role(role, client)
        through = Role.composites.through
        links = set()
        pending = [(role, self.realm_roles[role["fields"]["name"]]) for role in r["realm_roles"]]
        pending += [(role, self.client_roles[(cid, role["fields"]["name"])])
                    for cid, roles in r["client_roles"].items() for role in roles]
        for rep, role in pending:
            comps = rep["composites"]
            targets = self.roles_from(comps["realm"], comps["client"], f"{rep['_path']}.composites",
                                      realm_key="realm", client_key="client")
            links |= {(role.pk, t.pk) for t in targets}
        through.objects.bulk_create([through(from_role_id=a, to_role_id=b) for a, b in sorted(links)])

    def new_role(self, rep, client):
        fields = dict(rep["fields"])
        fields["id"] = self.id_for(Role, fields.get("id"))
        return self.save(Role(realm=self.realm, client=client, **fields), rep["_path"], _ROLE_FIELDS)

    def link_scopes(self):
        r = self.r
        realm_links = {}
        for key, default in (("default_default_scopes", True), ("default_optional_scopes", False)):
            json_key = "defaultDefaultClientScopes" if default else "defaultOptionalClientScopes"
            for i, name in enumerate(r[key]):
                realm_links[self.scope(name, f"{json_key}[{i}]").pk] = default
        RealmDefaultClientScope.objects.bulk_create(
            [RealmDefaultClientScope(realm=self.realm, client_scope_id=pk, default=d) for pk, d in realm_links.items()]
        )
        rows = []
        for c in r["clients"]:
            client = self.clients[c["fields"]["client_id"]]
            links = {}
            for key, default, json_key in (("default_scopes", True, "defaultClientScopes"),
                                           ("optional_scopes", False, "optionalClientScopes")):
                if c[key] is None:  # New clients get the realm's defaults of their protocol.
                    names = r["default_default_scopes"] if default else r["default_optional_scopes"]
                    for name in names:
                        scope = self.scopes[name]
                        if scope.protocol == client.protocol:
                            links.setdefault(scope.pk, default)
                else:
                    for i, name in enumerate(c[key]):
                        links.setdefault(self.scope(name, f"{c['_path']}.{json_key}[{i}]").pk, default)
            rows += [ClientScopeLink(client=client, client_scope_id=pk, default=d) for pk, d in links.items()]
        ClientScopeLink.objects.bulk_create(rows)

    def add_scope_mappings(self):
        r = self.r
        for m in r["scope_mappings"]:
            roles = [self.realm_role(n, f"{m['_path']}.roles[{i}]", True) for i, n in enumerate(m["roles"])]
            self.mapping_target(m).scope_roles.add(*roles)
        for owner, mappings in r["client_scope_mappings"].items():
            for m in mappings:
                roles = [self.client_role(owner, n, f"{m['_path']}.roles[{i}]", True)
                         for i, n in enumerate(m["roles"])]
                self.mapping_target(m).scope_roles.add(*roles)

    def mapping_target(self, m):
        if m["client"] is not None:
            return self.client(m["client"], f"{m['_path']}.client")
        return self.scope(m["scope"], f"{m['_path']}.clientScope")

    def add_group(self, g, parent):
        fields = dict(g["fields"])
        fields["id"] = self.id_for(Group, fields.get("id"))
        group = self.save(Group(realm=self.realm, parent=parent, **fields), g["_path"], _GROUP_FIELDS)
        self.groups[group.path] = group
        group.roles.add(*self.roles_from(g["realm_roles"], g["client_roles"], g["_path"], create=True))
        for child in g["children"]:
            self.add_group(child, group)

    def add_user(self, u):
        fields = dict(u["fields"])
        fields["id"] = self.id_for(User, fields.get("id"))
        if fields.get("federation_link_id"):  # a link to no provider of the file is refused, never dropped
            if fields["federation_link_id"] not in self.components:
                raise RepresentationError(f"{u['_path']}.federationLink", "no user storage provider with this id "
                                          f"in components[\"{user_storage_components.USER_STORAGE}\"]")
            fields["federation_link_id"] = self.components[fields["federation_link_id"]]
        user = User(realm=self.realm, **fields)
        if u["service_account_client"]:
            user.service_account_client = self.client(u["service_account_client"], f"{u['_path']}.serviceAccountClientId")
        self.save(user, u["_path"], _USER_FIELDS)
        user.roles.add(*self.roles_from(u["realm_roles"], u["client_roles"], u["_path"], create=True))
        groups = []
        for i, path in enumerate(u["groups"]):
            key = path if path.startswith("/") else "/" + path
            if key not in self.groups:
                raise RepresentationError(f"{u['_path']}.groups[{i}]", f"unknown group {path!r}")
            groups.append(self.groups[key])
        user.groups.add(*groups)
        for cred in u["credentials"]:
            cred = dict(cred)
            cred["id"] = self.id_for(Credential, cred.get("id"))
            plain = cred.pop("plain", None)
            if plain is not None:
                cred["secret_data"] = make_password(plain)
            Credential.objects.create(user=user, **cred)

    def add_service_accounts(self):
        from .services import enable_service_account

        for client in self.clients.values():
            if client.service_accounts_enabled and not User.objects.filter(service_account_client=client).exists():
                enable_service_account(client)

    def add_keys(self):
        stored = 0
        for k in self.r["keys"]:
            if k["private"] is None:  # a "generated" provider without material: generate, like Keycloak
                keys.generate_key(self.realm, k["algorithm"], priority=k["priority"], status=k["status"],
                                  provider_name=k["name"])
                stored += 1
                continue
            if k["certificate"] is not None and (
                k["certificate"].public_key().public_bytes(*_SPKI) != k["private"].public_key().public_bytes(*_SPKI)
            ):
                raise RepresentationError(f"{k['_path']}", "the certificate does not match the private key")
            pem = k["private"].private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())
            kid = _keycloak_kid(k["private"].public_key())
            if RealmKey.objects.filter(kid=kid).exists():
                new_kid = _keycloak_kid(k["private"].public_key(), salt=self.realm.pk)
                self.p.unsupported(k["_path"], f"key id {kid} is taken by another realm; stored as {new_kid}")
                kid = new_kid
            row = keys.store_key(
                self.realm, jwk.JWK.from_pem(pem), k["algorithm"], priority=k["priority"], status=k["status"],
                provider_name=k["name"], kid=kid,
                certificate_pem=(k["certificate"].public_bytes(serialization.Encoding.PEM).decode()
                                 if k["certificate"] is not None else ""),
            )
            if k["id"]:
                new_pk = self.id_for(RealmKey, k["id"])
                RealmKey.objects.filter(pk=row.pk).update(id=new_pk)
            stored += 1
        if not stored:
            keys.generate_key(self.realm, "RS256")


_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _keycloak_kid(public_key, salt=""):
    """Keycloak's key id: base64url(SHA-256(SubjectPublicKeyInfo)), so tokens it signed keep
    their kid after a migration."""
    digest = hashlib.sha256(salt.encode() + public_key.public_bytes(*_SPKI)).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def import_realm(data, *, override=False):
    """Import a RealmRepresentation (a dict). One transaction: on RepresentationError nothing
    is changed. Returns ImportResult(realm, warnings)."""
    p = _Parser()
    r = _parse(copy.deepcopy(data), p)
    _merge_builtins(r)
    with transaction.atomic():
        existing = Realm.objects.select_for_update().filter(name=r["name"]).first()
        if existing is not None and not override:
            raise RepresentationError("realm", f"realm {r['name']!r} already exists (use override to replace it)")
        realm = _Applier(r, p).run(existing)
    return ImportResult(realm=realm, warnings=p.warnings)


# ---------------------------------------------------------------------------------------------
# Export.


def _json_fields(obj, table):
    return {k: getattr(obj, f) for k, (f, _) in table.items()}


def _role_rep(role, container_id):
    comps = list(role.composites.all().select_related("client"))
    rep = {**_json_fields(role, _ROLE_FIELDS), "composite": bool(comps), "clientRole": role.client_id is not None,
           "containerId": container_id}
    if comps:
        realm_names = sorted(c.name for c in comps if c.client_id is None)
        client = {}
        for c in comps:
            if c.client_id is not None:
                client.setdefault(c.client.client_id, []).append(c.name)
        rep["composites"] = {}
        if realm_names:
            rep["composites"]["realm"] = realm_names
        if client:
            rep["composites"]["client"] = {k: sorted(v) for k, v in sorted(client.items())}
    return rep


def _mapper_reps(mappers):
    return [_json_fields(m, _MAPPER_FIELDS) for m in mappers]


def _role_names(roles):
    realm_names = sorted(r.name for r in roles if r.client_id is None)
    client = {}
    for r in roles:
        if r.client_id is not None:
            client.setdefault(r.client.client_id, []).append(r.name)
    return realm_names, {k: sorted(v) for k, v in sorted(client.items())}


def _b64(raw):
    return base64.b64encode(raw).decode()


def _pad_b64(text):
    return text + "=" * (-len(text) % 4)


def _password_rep(encoded):
    """Keycloak's secretData/credentialData for one of our encodings (docs/decisions/0002)."""
    algorithm, _, rest = encoded.partition("$")
    if algorithm == "argon2":  # Django: argon2$argon2id$v=19$m=..,t=..,p=..$salt$hash
        variant, version, params, salt, digest = rest.split("$")
        p = dict(x.split("=") for x in params.split(","))
        return _argon2_rep(variant.removeprefix("argon2"), "1.3" if version == "v=19" else "1.0", p["m"], p["t"],
                           p["p"], _pad_b64(salt), _pad_b64(digest))
    if algorithm == hashers.KeycloakArgon2Hasher.algorithm:
        variant, version, memory, iterations, parallelism, salt, digest = rest.split("$")
        return _argon2_rep(variant, version, memory, iterations, parallelism, salt, digest)
    for kc_name, ours in hashers._PBKDF2.items():
        if algorithm == ours:
            iterations, salt, digest = rest.split("$")
            return ({"value": digest, "salt": salt, "additionalParameters": {}},
                    {"hashIterations": int(iterations), "algorithm": kc_name, "additionalParameters": {}})
    raise ValueError(f"password encoding {algorithm!r} has no Keycloak form")


def _argon2_rep(variant, version, memory, iterations, parallelism, salt, digest):
    return (
        {"value": digest, "salt": salt, "additionalParameters": {}},
        {"hashIterations": int(iterations), "algorithm": "argon2", "additionalParameters": {
            "hashLength": [str(len(base64.b64decode(digest)))], "memory": [str(memory)], "type": [variant],
            "version": [version], "parallelism": [str(parallelism)]}},
    )


def _millis(dt):
    return int(dt.timestamp() * 1000)


def _credential_rep(cred):
    rep = {"id": cred.id, "type": cred.type, "createdDate": _millis(cred.created), "priority": cred.priority}
    if cred.user_label:
        rep["userLabel"] = cred.user_label
    if cred.type == Credential.PASSWORD:
        secret, data = _password_rep(cred.secret_data)
        rep["secretData"], rep["credentialData"] = json.dumps(secret), json.dumps(data)
    else:
        rep["secretData"], rep["credentialData"] = cred.secret_data, json.dumps(cred.credential_data)
    return rep


def _self_signed(private_key, realm_name):
    """Keycloak's rsa provider needs a certificate; generated keys get a self-signed one."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, realm_name)])
    now = datetime.now(dt_timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=3650)).sign(private_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.DER)


def _key_component(key, realm_name):
    private = serialization.load_pem_private_key(key.private_key_pem.encode(), password=None)
    pkcs8 = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    config = {
        "priority": [str(key.priority)],
        "enabled": ["true" if key.status != RealmKey.DISABLED else "false"],
        "active": ["true" if key.status == RealmKey.ACTIVE else "false"],
    }
    if key.algorithm == "RS256":
        provider = "rsa"
        cert = (x509.load_pem_x509_certificate(key.certificate_pem.encode()).public_bytes(serialization.Encoding.DER)
                if key.certificate_pem else _self_signed(private, realm_name))
        config.update(privateKey=[_b64(pkcs8)], certificate=[_b64(cert)], algorithm=["RS256"], keyUse=["SIG"])
    else:
        provider = "ecdsa-generated" if key.algorithm == "ES256" else "eddsa-generated"
        prefix = "ecdsa" if key.algorithm == "ES256" else "eddsa"
        curve_key, curve = _CURVES[key.algorithm]
        config.update({f"{prefix}PrivateKey": [_b64(pkcs8)],
                       f"{prefix}PublicKey": [_b64(private.public_key().public_bytes(*_SPKI))],
                       curve_key: [curve]})
    return {"id": key.id, "name": key.provider_name, "providerId": provider, "subComponents": {}, "config": config}


def _group_rep(group, children_of, parent_id):
    realm_names, client = _role_names(list(group.roles.all().select_related("client")))
    rep = {**_json_fields(group, _GROUP_FIELDS), "path": group.path, "realmRoles": realm_names,
           "clientRoles": client, "subGroups": [_group_rep(c, children_of, group.id) for c in children_of.get(group.id, [])]}
    if parent_id:
        rep["parentId"] = parent_id
    return rep


def export_realm(realm):
    """The realm as a RealmRepresentation dict (secrets and keys included, like a Keycloak
    full export)."""
    rep = {"id": realm.id, "realm": realm.name}
    # Unset optional values are left out, as Keycloak leaves out nulls (an empty email or
    # federationLink would mean something else to Keycloak).
    rep.update({k: v for k, v in _json_fields(realm, _REALM_FIELDS).items() if v not in ("", None)})
    rep.update(realm.otp_policy)
    rep.update(realm.webauthn_policy)

    clients = list(Client.objects.filter(realm=realm).order_by("client_id"))
    roles = list(Role.objects.filter(realm=realm).select_related("client").order_by("name"))
    rep["roles"] = {
        "realm": [_role_rep(r, realm.id) for r in roles if r.client_id is None],
        "client": {c.client_id: [_role_rep(r, c.id) for r in roles if r.client_id == c.id] for c in clients},
    }
    if realm.default_role_id:
        d = realm.default_role
        rep["defaultRole"] = {"id": d.id, "name": d.name, "description": d.description, "composite": True,
                              "clientRole": False, "containerId": realm.id}

    groups = list(Group.objects.filter(realm=realm).order_by("name"))
    children_of = {}
    for g in groups:
        children_of.setdefault(g.parent_id, []).append(g)
    rep["groups"] = [_group_rep(g, children_of, None) for g in children_of.get(None, [])]

    rep["users"] = []
    for user in User.objects.filter(realm=realm).select_related("service_account_client").order_by("username"):
        u = {k: v for k, v in _json_fields(user, _USER_FIELDS).items() if v not in ("", None)}
        u["createdTimestamp"] = _millis(user.created)
        u["credentials"] = [_credential_rep(c) for c in user.credentials.order_by("-priority", "created")]
        u["realmRoles"], u["clientRoles"] = _role_names(list(user.roles.all().select_related("client")))
        u["groups"] = sorted(g.path for g in user.groups.all())
        if user.service_account_client_id:
            u["serviceAccountClientId"] = user.service_account_client.client_id
        rep["users"].append(u)

    rep["scopeMappings"] = []
    rep["clientScopeMappings"] = {}
    scopes = list(ClientScope.objects.filter(realm=realm).order_by("name"))
    for target, key, name in [(c, "client", c.client_id) for c in clients] + [(s, "clientScope", s.name) for s in scopes]:
        realm_names, client_map = _role_names(list(target.scope_roles.all().select_related("client")))
        if realm_names:
            rep["scopeMappings"].append({key: name, "roles": realm_names})
        for owner, names in client_map.items():
            rep["clientScopeMappings"].setdefault(owner, []).append({key: name, "roles": names})

    rep["clients"] = []
    for c in clients:
        crep = {k: v for k, v in _json_fields(c, _CLIENT_FIELDS).items()
                if v != "" or k not in ("registrationAccessToken", "name", "description")}
        secret = c.get_secret()
        if secret:
            crep["secret"] = secret
        crep["protocolMappers"] = _mapper_reps(c.protocol_mappers.all())
        links = list(c.scope_links.select_related("client_scope").order_by("client_scope__name"))
        crep["defaultClientScopes"] = [x.client_scope.name for x in links if x.default]
        crep["optionalClientScopes"] = [x.client_scope.name for x in links if not x.default]
        rep["clients"].append(crep)

    rep["clientScopes"] = [{**_json_fields(s, _SCOPE_FIELDS), "protocolMappers": _mapper_reps(s.protocol_mappers.all())}
                           for s in scopes]
    realm_links = list(realm.default_scope_links.select_related("client_scope").order_by("client_scope__name"))
    rep["defaultDefaultClientScopes"] = [x.client_scope.name for x in realm_links if x.default]
    rep["defaultOptionalClientScopes"] = [x.client_scope.name for x in realm_links if not x.default]
    rep["components"] = {
        _KEY_PROVIDER: [_key_component(k, realm.name) for k in RealmKey.objects.filter(realm=realm)],
        **user_storage_components.export(realm),
    }
    return rep
