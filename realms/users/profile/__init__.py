"""Keycloak 26's declarative user profile: the realm's UPConfig (``config``) applied to a user in a
context. A context is where the user is written: by the user (registration, update profile, the
account console and Account API, first broker login) or by an administrator (the Admin API, SCIM).
The context decides which attributes are seen, which are editable, which are required (``required``
for the ``user`` or ``admin`` role, or for requested client scopes) and what the metadata says;
every written attribute's validators run (``validators``)."""
from ...http.messages import Message
from . import config as upconfig
from .validators import validate as run_validator

REGISTRATION, UPDATE_PROFILE, ACCOUNT, IDP_REVIEW, USER_API = (
    "REGISTRATION", "UPDATE_PROFILE", "ACCOUNT", "IDP_REVIEW", "USER_API")
_ADMIN_CONTEXTS = (USER_API,)
_LOGIN_CONTEXTS = (REGISTRATION, UPDATE_PROFILE, IDP_REVIEW)


class Attribute:
    """One attribute of the profile as a context sees it."""

    def __init__(self, rep, context, scopes):
        self.rep, self.name = rep, rep["name"]
        role = "admin" if context in _ADMIN_CONTEXTS else "user"
        permissions = rep.get("permissions") or {}
        edit = permissions.get("edit") or []
        self.editable = role in edit
        self.viewable = self.editable or role in (permissions.get("view") or [])
        # Client scopes are known in the login pages only: elsewhere a scope selector does not hide.
        selector = (rep.get("selector") or {}).get("scopes") or []
        self.selected = not selector or context not in _LOGIN_CONTEXTS or bool(set(selector) & scopes)
        required = rep.get("required")
        self.required = False
        if required is not None and self.editable:
            roles, need_scopes = required.get("roles") or [], required.get("scopes") or []
            by_role = not roles or role in roles
            by_scope = not need_scopes or (context in _LOGIN_CONTEXTS and bool(set(need_scopes) & scopes))
            self.required = by_role and by_scope
        self.multivalued = bool(rep.get("multivalued"))
        self.group = rep.get("group")
        self.display_name = rep.get("displayName") or self.name
        self.validations = rep.get("validations") or {}
        self.annotations = rep.get("annotations") or {}

    @property
    def read_only(self):
        return not self.editable

    def metadata(self):
        """Keycloak's UserProfileAttributeMetadata."""
        out = {"name": self.name, "displayName": self.display_name, "required": self.required,
               "readOnly": self.read_only, "validators": {k: (v or {}) for k, v in self.validations.items()},
               "multivalued": self.multivalued}
        if self.annotations:
            out["annotations"] = self.annotations
        if self.group:
            out["group"] = self.group
        return out


class Profile:
    """The realm's profile in one context; ``scopes`` the client scopes of a sign-in."""

    def __init__(self, realm, context, scopes=()):
        self.realm, self.context = realm, context
        self.config = upconfig.effective(realm)
        scopes = set(scopes)
        self.attributes = [a for a in (Attribute(r, context, scopes) for r in self.config["attributes"])
                           if a.viewable and a.selected]
        self.by_name = {a.name: a for a in self.attributes}
        self.managed = {r["name"] for r in self.config["attributes"]}
        policy = self.config.get("unmanagedAttributePolicy")
        admin = context in _ADMIN_CONTEXTS
        self.unmanaged_viewable = policy == "ENABLED" or (admin and policy in ("ADMIN_VIEW", "ADMIN_EDIT"))
        self.unmanaged_editable = policy == "ENABLED" or (admin and policy == "ADMIN_EDIT")

    def metadata(self):
        """Keycloak's UserProfileMetadata: the attributes this context sees and the groups they use."""
        used = {a.group for a in self.attributes if a.group}
        return {"attributes": [a.metadata() for a in self.attributes],
                "groups": [{k: g[k] for k in ("name", "displayHeader", "displayDescription", "annotations") if k in g}
                           for g in self.config.get("groups") or () if g["name"] in used]}

    def custom(self):
        """The attributes kept in the user's ``attributes`` (not username, email, names)."""
        return [a for a in self.attributes if a.name not in upconfig.ROOT]

    def visible_attributes(self, stored):
        """Of a user's stored ``attributes``: those this context may see."""
        return {k: v for k, v in (stored or {}).items()
                if (k in self.by_name) or (k not in self.managed and self.unmanaged_viewable)}

    def check(self, values, skip=()):
        """Errors ``[(attribute, Message)]`` of ``values`` ({name: [values]}, the attributes as they
        will be), the attributes in ``skip`` already reported."""
        errors = []
        for attr in self.attributes:
            if attr.name in skip or not attr.editable:  # a value this context cannot change is not its to refuse
                continue
            given = [v for v in values.get(attr.name, []) if v not in (None, "")]
            if attr.required and not given:
                errors.append((attr.name, Message("error-user-attribute-required", attr.display_name)))
                continue
            if len(values.get(attr.name, [])) > 1 and not attr.multivalued:
                errors.append((attr.name, Message("error-invalid-value", attr.display_name)))
                continue
            for name, vconfig in attr.validations.items():
                found = run_validator(name, values.get(attr.name, []), vconfig or {})
                if found:
                    key, params = found[0]
                    errors.append((attr.name, Message(key, attr.display_name, *params)))
                    break
        return errors

    def merge_attributes(self, stored, given, remove_missing=True):
        """The user's ``attributes`` after a write of ``given`` ({name: [values]}): editable managed
        attributes replaced, read-only ones kept, unmanaged ones written only where the policy lets
        this context edit them (and kept otherwise); ``remove_missing``: ``given`` is the whole
        set (the Admin API's representation with ``attributes``), so an editable attribute it
        leaves out is removed. Returns (attributes, names refused as read-only)."""
        out = dict(stored or {})
        refused = []
        for name, values in given.items():
            if name in upconfig.ROOT:
                continue
            attr = self.by_name.get(name)
            if attr is not None:
                if attr.editable:
                    out[name] = values
                elif values != (stored or {}).get(name, []):
                    refused.append(name)
            elif name not in self.managed and self.unmanaged_editable:
                out[name] = values
        if remove_missing:
            for attr in self.custom():
                if attr.editable and attr.name not in given:
                    out.pop(attr.name, None)
            if self.unmanaged_editable:
                for name in list(out):
                    if name not in self.managed and name not in given:
                        out.pop(name)
        return {k: v for k, v in out.items() if v}, refused


def requested_scopes(auth_session):
    """The client scopes a sign-in asked for (its ``scope`` parameter), for the login pages' profile."""
    return str((auth_session.client_data or {}).get("scope") or "").split() if auth_session is not None else []


def as_lists(mapping):
    """{name: [values]} from a representation's attributes (a value or a list)."""
    out = {}
    for name, value in (mapping or {}).items():
        if value is None:
            out[name] = []
        elif isinstance(value, list):
            out[name] = [str(v) for v in value if v is not None]
        else:
            out[name] = [str(value)]
    return out
