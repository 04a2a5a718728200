"""The mappers that read nothing from the provider (Keycloak's hardcoded role, attribute and group
mappers) and the username template importer, compatible with every provider type."""
import re

from .mappers import SYNC_MODE_PROPERTY as _SYNC
from .mappers import ConditionalGrant, MapperType, register_mapper_type, set_attribute
from .mappers import config_property as _property


class HardcodedRole(ConditionalGrant):
    """Always gives its role (a grant whose condition always holds)."""

    id = "oidc-hardcoded-role-idp-mapper"
    name = "Hardcoded Role"
    help_text = "When user is imported from provider, hardcode a role mapping for it."
    properties = (_property("role", "Role", "Role to grant to user.", "Role"), _SYNC)

    def applies(self, mapper, identity):
        return True


class HardcodedAttribute(MapperType):
    id = "hardcoded-attribute-idp-mapper"
    name = "Hardcoded Attribute"
    category = "Attribute Importer"
    help_text = "When user is imported from provider, hardcode a value to a specific user attribute."
    properties = (_property("attribute", "User Attribute", "Name of user attribute you want to hardcode"),
                  _property("attribute.value", "User Attribute Value", "Value you want to hardcode"), _SYNC)

    def import_new_user(self, realm, idp, mapper, user, identity):
        config = mapper.config or {}
        if config.get("attribute"):
            set_attribute(user, config["attribute"], [config.get("attribute.value", "")])

    update_brokered_user = import_new_user


class HardcodedGroup(HardcodedRole):
    id = "oidc-hardcoded-group-idp-mapper"
    name = "Hardcoded Group"
    category = "Group Importer"
    gives = "group"
    help_text = "When user is imported from provider, hardcode a group mapping for it."
    properties = (_property("group", "Group", "Group to assign the user to.", "Group"), _SYNC)


_TEMPLATE = re.compile(r"\$\{([^}|]+)((?:\s*\|\s*\w+)*)\}")
_TRANSFORMERS = {"lowercase": str.lower, "uppercase": str.upper,
                 "localpart": lambda value: value.split("@", 1)[0]}


def _expand(template, idp, identity):
    def value(match):
        name = match.group(1).strip()
        if name == "ALIAS":
            found = idp.alias
        elif name == "NAMEID":
            found = identity.context.get("name_id", identity.id)
        elif name.startswith(("CLAIM.", "ATTRIBUTE.")):
            found = identity.claims.get(name.split(".", 1)[1], "")
            found = found[0] if isinstance(found, list) and found else found
        else:
            found = ""
        found = "" if found is None else str(found)
        for transformer in [t.strip() for t in match.group(2).split("|") if t.strip()]:
            found = _TRANSFORMERS.get(transformer, lambda v: v)(found)
        return found

    return _TEMPLATE.sub(value, template)


class UsernameTemplate(MapperType):
    """The username (or the broker id / broker username) built from a template of the provider's
    claims: ``${ALIAS}``, ``${CLAIM.name}``, ``${ATTRIBUTE.name}``, ``${NAMEID}``, each with
    ``| lowercase``, ``| uppercase`` or ``| localpart``."""

    id = "oidc-username-idp-mapper"
    name = "Username Template Importer"
    default_template = "${ALIAS}.${CLAIM.preferred_username}"
    category = "Preprocessor"
    help_text = "Format the username to import."
    properties = (_property("template", "Template", "Template to use to format the username to import. "
                            "Substitutions are enclosed in ${}.", defaultValue=default_template),
                  _property("target", "Target", "Destination field for the mapper.", "List", defaultValue="LOCAL",
                            options=["LOCAL", "BROKER_ID", "BROKER_USERNAME"]), _SYNC)

    def preprocess(self, realm, idp, mapper, identity):
        config = mapper.config or {}
        expanded = _expand(config.get("template") or self.default_template, idp, identity)
        target = config.get("target") or "LOCAL"
        if target == "BROKER_ID":
            identity.id = expanded
        elif target == "BROKER_USERNAME":
            identity.username = identity.context["broker_username"] = expanded
        else:  # the local user's name; the link keeps the provider's own username
            identity.context.setdefault("broker_username", identity.username)
            identity.username = expanded


class SamlUsernameTemplate(UsernameTemplate):
    id = "saml-username-idp-mapper"
    default_template = "${ALIAS}.${NAMEID}"
    properties = (_property("template", "Template", "Template to use to format the username to import. "
                            "Substitutions are enclosed in ${}.", defaultValue=default_template),
                  *UsernameTemplate.properties[1:])


def register():
    """Called from RealmsConfig.ready."""
    for mapper_type in (HardcodedRole, HardcodedAttribute, HardcodedGroup, UsernameTemplate, SamlUsernameTemplate):
        register_mapper_type(mapper_type)
