"""Users and their credentials (password hashes in Keycloak's forms): fields, parsing, import and
export."""
import base64
import json
from datetime import UTC, datetime

from django.utils import timezone

from ..credentials import hashers, password_policy, secret_from_representation, secret_to_representation
from ..data import realm_cache, rows
from ..models import Credential, FederatedIdentity, User
from ..users.accounts import enable_service_account
from .fields import (
    RepresentationError,
    as_bool,
    as_int,
    as_list,
    as_multi_map,
    as_role_map,
    as_str,
    as_str_list,
    at,
    json_fields,
    model_fields,
    spec_of,
)
from .identity_providers import links_rep, parse_links
from .roles import role_names
from .user_storage import USER_STORAGE

_USER_FIELDS = {
    "id": ("id", as_str),
    "username": ("username", lambda v, p: as_str(v, p).lower()),
    "email": ("email", lambda v, p: as_str(v, p).lower()),
    "emailVerified": ("email_verified", as_bool),
    "firstName": ("first_name", as_str),
    "lastName": ("last_name", as_str),
    "enabled": ("enabled", as_bool),
    "attributes": ("attributes", as_multi_map),
    "federationLink": ("federation_link_id", as_str),
    "requiredActions": ("required_actions", as_str_list),
    "notBefore": ("not_before", as_int),
}
_USER_EXTRA = {
    "credentials": as_list,
    "realmRoles": as_str_list,
    "clientRoles": as_role_map,
    "groups": as_str_list,
    "serviceAccountClientId": as_str,
    "createdTimestamp": as_int,
    "federatedIdentities": as_list,
}

_CREDENTIAL_SPEC = {
    "id": as_str,
    "type": as_str,
    "userLabel": as_str,
    "value": as_str,
    "temporary": as_bool,
    "hashedSaltedValue": as_str,
    "salt": as_str,
    "hashIterations": as_int,
    "algorithm": as_str,
    "secretData": as_str,
    "credentialData": as_str,
    "priority": as_int,
    "createdDate": as_int,
}

# Credential types holding a password hash in Keycloak's form (earlier passwords are kept for
# the passwordHistory policy).
_HASHED = (Credential.PASSWORD, password_policy.HISTORY)

# Keys Keycloak computes from other data.
_DERIVED = {"totp", "disableableCredentialTypes", "access"}


def parse_user(u, path, p):
    values = p.take(u, path, spec_of(_USER_FIELDS, _USER_EXTRA), derived=_DERIVED, required=("username",))
    user = {
        "_path": path,
        "fields": model_fields(_USER_FIELDS, values),
        "realm_roles": values.get("realmRoles", []),
        "client_roles": values.get("clientRoles", {}),
        "groups": values.get("groups", []),
        "service_account_client": values.get("serviceAccountClientId"),
        "credentials": [],
        "links": parse_links(values.get("federatedIdentities", []), f"{path}.federatedIdentities", p),
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
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


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
    if v["type"] not in _HASHED:
        if "secretData" not in v:
            p.unsupported(path, f"credential of type {v['type']!r} without secretData: not imported")
            return None
        try:
            row["secret_data"] = secret_from_representation(v["type"], v["secretData"])
        except ValueError as exc:
            raise RepresentationError(at(path, "secretData"), str(exc)) from None
        row["credential_data"] = _json_object(v.get("credentialData", "{}"), at(path, "credentialData"))
        return row
    if "value" in v:
        if v["type"] != Credential.PASSWORD:
            raise RepresentationError(at(path, "value"), "an earlier password is imported as its hash only")
        row["plain"] = (v["value"], at(path, "value"))
    elif "hashedSaltedValue" in v:
        if "algorithm" not in v:
            raise RepresentationError(at(path, "algorithm"), "required with hashedSaltedValue")
        row["secret_data"] = _keycloak_hash(
            v["algorithm"], v["hashedSaltedValue"], v.get("salt", ""), v.get("hashIterations", 1), None,
            at(path, "algorithm"),
        )
    elif "secretData" in v and "credentialData" in v:
        secret = _json_object(v["secretData"], at(path, "secretData"))
        cdata = _json_object(v["credentialData"], at(path, "credentialData"))
        for key, obj, where in (("value", secret, "secretData"), ("algorithm", cdata, "credentialData")):
            if not isinstance(obj.get(key), str):
                raise RepresentationError(at(path, f"{where}.{key}"), "expected a string")
        row["secret_data"] = _keycloak_hash(
            cdata["algorithm"], secret["value"], secret.get("salt", ""), cdata.get("hashIterations", 1),
            cdata.get("additionalParameters"), at(path, "credentialData.algorithm"),
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
    for kc_name, ours in hashers.PBKDF2.items():
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


def credential_rep(cred):
    rep = {"id": cred.id, "type": cred.type, "createdDate": _millis(cred.created), "priority": cred.priority}
    if cred.user_label:
        rep["userLabel"] = cred.user_label
    if cred.type in _HASHED:
        secret, data = _password_rep(cred.secret_data)
        rep["secretData"], rep["credentialData"] = json.dumps(secret), json.dumps(data)
    else:
        rep["secretData"], rep["credentialData"] = secret_to_representation(cred), json.dumps(cred.credential_data)
    return rep


def user_fields_rep(user):
    """The user's own fields (the Admin API's UserRepresentation); ``user_rep`` adds what only
    an export carries (credentials, role mappings, group paths)."""
    u = {k: v for k, v in json_fields(user, _USER_FIELDS).items() if v not in ("", None)}
    u["createdTimestamp"] = _millis(user.created)
    if user.service_account_client_id:
        u["serviceAccountClientId"] = user.service_account_client.client_id
    return u


def user_rep(user):
    u = user_fields_rep(user)
    u["credentials"] = [credential_rep(c) for c in user.credentials.order_by("-priority", "created")]
    u["realmRoles"], u["clientRoles"] = role_names(list(user.roles.all().select_related("client")))
    u["groups"] = sorted(g.path for g in user.groups.all())
    links = links_rep(user)
    if links:
        u["federatedIdentities"] = links
    return u


class UserApplier:
    """The importer's steps for users and service accounts (a part of importer._Applier)."""

    def add_users(self, reps):
        """Write the parsed users with their role mappings, group memberships and credentials,
        in bulk (``realms.data.rows.insert_many``: one stream per table, in the caller's transaction); their
        User rows, in order. As Keycloak's import (``addUser`` with an id): into the realm
        database only, without the realm's default role or required actions."""
        ids = iter(self.ids_for(User, [u["fields"].get("id") for u in reps]))
        cred_ids = iter(self.ids_for(Credential, [c.get("id") for u in reps for c in u["credentials"]]))
        user_roles, user_groups = User.roles.through, User.groups.through
        users, role_rows, group_rows, credentials, names, links = [], [], [], [], set(), []
        now = timezone.now()  # once, not per row (the field default's call is slow)
        for u in reps:
            fields = {"created": now, **u["fields"]}
            fields["id"] = next(ids)
            if fields["username"] in names:  # the table's unique constraint, named by its JSON path
                raise RepresentationError(f"{u['_path']}.username", f"user {fields['username']!r} is given twice")
            names.add(fields["username"])
            if fields.get("federation_link_id"):  # a link to no provider of the file is refused, never dropped
                if fields["federation_link_id"] not in self.components:
                    raise RepresentationError(f"{u['_path']}.federationLink", "no user storage provider with this "
                                              f"id in components[\"{USER_STORAGE}\"]")
                fields["federation_link_id"] = self.components[fields["federation_link_id"]]
            user = User(realm=self.realm, **fields)
            if u["service_account_client"]:
                user.service_account_client = self.client(u["service_account_client"],
                                                          f"{u['_path']}.serviceAccountClientId")
            self.check(user, u["_path"], _USER_FIELDS)
            users.append(user)
            roles = self.roles_from(u["realm_roles"], u["client_roles"], u["_path"], create=True)
            role_rows += [user_roles(user_id=user.pk, role_id=pk) for pk in dict.fromkeys(r.pk for r in roles)]
            groups = []
            for i, path in enumerate(u["groups"]):
                key = path if path.startswith("/") else "/" + path
                if key not in self.groups:
                    raise RepresentationError(f"{u['_path']}.groups[{i}]", f"unknown group {path!r}")
                groups.append(self.groups[key].pk)
            group_rows += [user_groups(user_id=user.pk, group_id=pk) for pk in dict.fromkeys(groups)]
            if u["links"]:
                links += self.links_of(user, u["links"])
            for cred in u["credentials"]:
                cred = {"created": now, **cred}
                cred["id"] = next(cred_ids)
                plain = cred.pop("plain", None)
                if plain is not None:
                    value, path = plain
                    try:  # a plaintext password is held to the realm's policy, as Keycloak does
                        password_policy.validate(user, value)
                    except password_policy.PasswordPolicyError as exc:
                        raise RepresentationError(path, str(exc)) from None
                    cred["secret_data"] = password_policy.hash_password(self.realm, value)
                credentials.append(Credential(user=user, **cred))
        self.check_links(links)
        for model, written in ((User, users), (user_roles, role_rows), (user_groups, group_rows),
                               (Credential, credentials), (FederatedIdentity, links)):
            rows.insert_many(model, written)
        rows.refresh_statistics(len(users), User, Credential)
        if users:  # what the rows' signals would have done: cached roles and service accounts
            realm_cache.changed(self.realm.pk)
        return users

    def add_service_accounts(self):
        for client in self.clients.values():
            if client.service_accounts_enabled and not User.objects.filter(service_account_client=client).exists():
                enable_service_account(client)
