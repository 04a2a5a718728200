"""Keycloak's identity provider mappers that read the provider's claims
(``org.keycloak.broker.oidc.mappers``), for the ``oidc``, ``keycloak-oidc`` and ``oauth2`` types:

* ``oidc-user-attribute-idp-mapper`` (Attribute Importer): a claim into a user attribute, or into
  ``email``, ``firstName``, ``lastName``;
* ``oidc-role-idp-mapper`` (Claim to Role): the role when a claim has a value;
* ``oidc-advanced-role-idp-mapper`` (Advanced Claim to Role) and
  ``oidc-advanced-group-idp-mapper`` (Advanced Claim to Group): the role or group when every
  listed claim has its value (or matches it as a regular expression);
* ``<preset>-user-attribute-mapper`` (the social presets' Attribute Importer, ``github-...``,
  ``google-...``): a field of the provider's user JSON by a ``jsonField`` path.

Claims are the ID token's and userinfo's (``BrokeredIdentity.claims``), read by Keycloak's claim
paths: dots go down into nested objects, ``\\.`` is a dot in a name. A claim whose value is a list
matches when one of its items does. A role or group mapper that no longer applies on a later
sign-in (FORCE, LEGACY) takes its role or group away, unless another mapper of the same sign-in
gave it (Keycloak's KEYCLOAK-8730 rule)."""
import json
import logging
import re

from realms.brokering.mappers import SYNC_MODE_PROPERTY as _SYNC
from realms.brokering.mappers import (
    ConditionalGrant,
    MapperType,
    all_match,
    register_mapper_type,
    set_attribute,
)
from realms.brokering.mappers import config_property as _property

from .config import read_claim

logger = logging.getLogger("idp.broker")

COMPATIBLE = ("oidc", "keycloak-oidc", "oauth2")
_PROFILE = {"email": "email", "firstname": "firstName", "lastname": "lastName"}


_CLAIM = _property("claim", "Claim", "Name of claim to search for in token. You can reference nested claims using a "
                   "'.', i.e. 'address.locality'. To use dot (.) literally, escape it with backslash (\\.)")
_CLAIMS = _property("claims", "Claims", "Name and (regex) value of the claims to search for in token. You can "
                    "reference nested claims using a '.', i.e. 'address.locality'. To use dot (.) literally, escape "
                    "it with backslash (\\.)", "Map")
_REGEX = _property("are.claim.values.regex", "Regex Claim Values",
                   "If enabled claim values are interpreted as regular expressions.", "boolean")
_ROLE = _property("role", "Role", "Role to grant to user if claim is present. Click 'Select Role' button to browse "
                  "roles, or just type it in the textbox. To reference a client role the syntax is "
                  "clientname.clientrole, i.e. myclient.myrole", "Role")


def _strings(value):
    """A claim's value(s) as Keycloak compares them: strings; true/false for booleans; a list's items."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, (dict, list)):
            out.append(json.dumps(item, separators=(",", ":")))
        elif item is not None:
            out.append(str(item))
    return out


def claim_values(identity, path):
    return _strings(read_claim(identity.claims, path)) if path else []


def all_claims_match(mapper, identity):
    """Advanced mappers: every listed claim has its value (or a value matching it in full as a
    regular expression, with ``are.claim.values.regex``)."""
    return all_match(mapper, "claims", "are.claim.values.regex", lambda key: claim_values(identity, key))


class _RoleGrant(ConditionalGrant):
    compatible = COMPATIBLE


class ClaimToRole(_RoleGrant):
    id = "oidc-role-idp-mapper"
    name = "Claim to Role"
    help_text = "If a claim exists, grant the user the specified realm or client role."
    properties = (_CLAIM, _property("claim.value", "Claim Value", "Value the claim must have. If the claim is an "
                                    "array, then the value must be contained in the array."), _ROLE, _SYNC)

    def applies(self, mapper, identity):
        config = mapper.config or {}
        return config.get("claim.value", "") in claim_values(identity, config.get("claim", ""))


class AdvancedClaimToRole(_RoleGrant):
    id = "oidc-advanced-role-idp-mapper"
    name = "Advanced Claim to Role"
    help_text = "If all claims exists, grant the user the specified realm or client role."
    properties = (_CLAIMS, _REGEX, _ROLE, _SYNC)

    def applies(self, mapper, identity):
        return all_claims_match(mapper, identity)


class AdvancedClaimToGroup(ConditionalGrant):
    compatible = COMPATIBLE
    id = "oidc-advanced-group-idp-mapper"
    name = "Advanced Claim to Group"
    category = "Group Importer"
    help_text = "If all claims exists, assign the user to the specified group."
    gives = "group"
    properties = (_CLAIMS, _REGEX, _property("group", "Group", "Assign the user to the specified group.", "Group"),
                  _SYNC)

    def applies(self, mapper, identity):
        return all_claims_match(mapper, identity)


class ClaimAttributeImporter(MapperType):
    id = "oidc-user-attribute-idp-mapper"
    name = "Attribute Importer"
    category = "Attribute Importer"
    compatible = COMPATIBLE
    help_text = "Import declared claim if it exists in ID, access token or the claim set returned by the user " \
                "profile endpoint into the specified user property or attribute."
    properties = (_CLAIM, _property("user.attribute", "User Attribute Name", "User attribute name to store claim.  "
                                    "Use email, lastName, and firstName to map to those predefined user properties.",
                                    "UserProfileAttributeList"), _SYNC)

    def _mapped(self, mapper, identity):
        config = mapper.config or {}
        return config.get("user.attribute", ""), claim_values(identity, config.get("claim", ""))

    def preprocess(self, realm, idp, mapper, identity):
        """E-mail and names go on the identity: first broker login creates the user with them."""
        target, values = self._mapped(mapper, identity)
        field = _PROFILE.get(target.lower())
        if not values or field is None:
            return
        if field == "email":
            # Still verified only when it is the e-mail the provider vouched for.
            identity.email_verified = identity.email_verified and identity.email == values[0]
            identity.email = values[0]
        elif field == "firstName":
            identity.first_name = values[0]
        else:
            identity.last_name = values[0]

    def import_new_user(self, realm, idp, mapper, user, identity):
        target, values = self._mapped(mapper, identity)
        if target and values:
            field = _PROFILE.get(target.lower())
            set_attribute(user, field or target, values[:1] if field else values)

    def update_brokered_user(self, realm, idp, mapper, user, identity):
        """FORCE: the attribute follows the provider, and goes when the provider stops sending it
        (a profile field is kept: a user always has their e-mail and names)."""
        target, values = self._mapped(mapper, identity)
        field = _PROFILE.get(target.lower())
        if target and (values or field is None):
            set_attribute(user, field or target, values[:1] if field else values)


# The social presets' JSON attribute importers (Keycloak's AbstractJsonUserAttributeMapper) -----

_INDEX = re.compile(r"^(.*?)\[(\d+)\]$")


def json_field(profile, path):
    """A value of the provider's user JSON by Keycloak's ``jsonField`` path: dots go down,
    ``[n]`` takes a list's item (``contact.address[0].country``)."""
    value = profile
    for part in [p for p in re.split(r"(?<!\\)\.", path or "") if p]:
        part = part.replace("\\.", ".")
        indexes = []
        while (match := _INDEX.match(part)) is not None:
            part, index = match.group(1), int(match.group(2))
            indexes.insert(0, index)
        if part:
            value = value.get(part) if isinstance(value, dict) else None
        for index in indexes:
            value = value[index] if isinstance(value, list) and index < len(value) else None
        if value is None:
            return None
    return value


class JsonAttributeImporter(MapperType):
    """``<preset>-user-attribute-mapper``: a field of the social provider's user JSON into a user
    attribute (or ``email``, ``firstName``, ``lastName``), on first login and under FORCE."""

    name = "Attribute Importer"
    category = "Attribute Importer"
    help_text = "Import user profile information if it exists in Social provider JSON data into the specified " \
                "user attribute."
    properties = (_property("jsonField", "Social Profile JSON Field Path", "Path of field in Social provider User "
                            "Profile JSON data to get value from. You can use dot notation for nesting and square "
                            "brackets for array index. Eg. 'contact.address[0].country'."),
                  _property("userAttribute", "User Attribute Name", "User attribute name to store information into.",
                            "UserProfileAttributeList"), _SYNC)

    def __init__(self, preset_id, compatible):
        self.id, self.compatible = f"{preset_id}-user-attribute-mapper", compatible

    def _mapped(self, mapper, identity):
        config = mapper.config or {}
        return config.get("userAttribute", ""), _strings(json_field(identity.claims, config.get("jsonField", "")))

    def import_new_user(self, realm, idp, mapper, user, identity):
        target, values = self._mapped(mapper, identity)
        if target and values:
            field = _PROFILE.get(target.lower())
            set_attribute(user, field or target, values[:1] if field else values)

    update_brokered_user = import_new_user


# Keycloak's social attribute importers: mapper id prefix -> the presets it applies to.
JSON_IMPORTERS = {"github": ("github",), "google": ("google",), "facebook": ("facebook",),
                  "microsoft": ("microsoft",), "linkedin": ("linkedin-openid-connect",), "instagram": ("instagram",),
                  "paypal": ("paypal",), "stackoverflow": ("stackoverflow",)}


def register():
    for mapper_type in (ClaimAttributeImporter, ClaimToRole, AdvancedClaimToRole, AdvancedClaimToGroup):
        register_mapper_type(mapper_type)
    for prefix, compatible in JSON_IMPORTERS.items():
        register_mapper_type(JsonAttributeImporter(prefix, compatible))
