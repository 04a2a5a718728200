"""Keycloak's SAML identity provider mappers (``org.keycloak.broker.saml.mappers``), compatible
with the ``saml`` type only:

* ``saml-role-idp-mapper`` (SAML Attribute to Role): the role when an attribute (by name and/or
  friendly name) has the value;
* ``saml-advanced-role-idp-mapper`` (Advanced Attribute to Role): the role when every listed
  attribute has its value (or matches it as a regular expression);
* ``saml-user-attribute-idp-mapper`` (Attribute Importer): an attribute's values into a user
  attribute, or into ``email``, ``firstName``, ``lastName``;
* ``saml-xpath-attribute-idp-mapper`` (XPath Attribute Importer): an XPath over each value of an
  attribute (wrapped in ``<root>``, its namespace prefixes kept), as Keycloak evaluates it.

They read the assertion the type kept in the identity's context, parsed again by the hardened
parser (``saml.xml``). A role mapper that no longer applies on a later sign-in (FORCE, LEGACY)
takes its role away, unless another mapper of the same sign-in granted it (Keycloak's
KEYCLOAK-8730 rule)."""
import copy
import logging

from lxml import etree

from realms.brokering.mappers import SYNC_MODE_PROPERTY as _SYNC
from realms.brokering.mappers import (
    ConditionalGrant,
    MapperType,
    all_match,
    register_mapper_type,
    set_attribute,
)
from realms.brokering.mappers import config_property as _property

from .. import xml
from ..errors import UntrustedRequest
from .response import attributes_of

logger = logging.getLogger("idp.broker")

COMPATIBLE = ("saml",)
_PROFILE = {"email": "email", "firstname": "firstName", "lastname": "lastName"}


_NAME = _property("attribute.name", "Attribute Name", "Name of attribute to search for in assertion.  You can leave "
                  "this blank and specify a friendly name instead.")
_FRIENDLY = _property("attribute.friendly.name", "Friendly Name", "Friendly name of attribute to search for in "
                      "assertion.  You can leave this blank and specify a name instead.")
_ROLE = _property("role", "Role", "Role to grant to user.  Click 'Select Role' button to browse roles, or just type "
                  "it in the textbox.  To reference a client role the syntax is clientname.clientrole, i.e. "
                  "myclient.myrole", "Role")


def _assertion(identity):
    kept = identity.context.get("assertion", "")
    try:
        return xml.parse(kept.encode()) if kept else None
    except UntrustedRequest:
        return None


def _attribute_elements(identity, wanted):
    """The saml:Attribute elements whose name or friendly name is ``wanted`` (blank: all)."""
    assertion = _assertion(identity)
    if assertion is None:
        return []
    return [a for a in assertion.iter("{urn:oasis:names:tc:SAML:2.0:assertion}Attribute")
            if not wanted or wanted in (a.get("Name"), a.get("FriendlyName"))]


def _values(identity, config):
    name = (config.get("attribute.name") or "").strip()
    friendly = (config.get("attribute.friendly.name") or "").strip()
    assertion = _assertion(identity)
    if assertion is None:
        return []
    for attribute in attributes_of(assertion):
        if (not name or attribute.name == name) and (not friendly or attribute.friendly_name == friendly):
            return attribute.values  # the first matching attribute, as Keycloak's
    return []


class _RoleMapper(ConditionalGrant):
    compatible = COMPATIBLE


class AttributeToRole(_RoleMapper):
    id = "saml-role-idp-mapper"
    name = "SAML Attribute to Role"
    category = "Role Mapper"
    help_text = "If an attribute exists, grant the user the specified realm or client role."
    properties = (_NAME, _FRIENDLY, _property("attribute.value", "Attribute Value", "Value the attribute must have.  "
                                              "If the attribute is a list, then the value must be contained in the list."),
                  _ROLE, _SYNC)

    def applies(self, mapper, identity):
        config = mapper.config or {}
        wanted = config.get("attribute.value") or ""
        name, friendly = (config.get("attribute.name") or "").strip(), (config.get("attribute.friendly.name") or "").strip()
        assertion = _assertion(identity)
        return assertion is not None and any(
            wanted in attribute.values for attribute in attributes_of(assertion)
            if (not name or attribute.name == name) and (not friendly or attribute.friendly_name == friendly))


class AdvancedAttributeToRole(_RoleMapper):
    id = "saml-advanced-role-idp-mapper"
    name = "Advanced Attribute to Role"
    help_text = "If the set of attributes exists and can be matched, grant the user the specified realm or client role."
    properties = (_property("attributes", "Attributes", "Name and (regex) value of the attributes to search for in "
                            "token.  The configured name of an attribute is searched in SAML attribute name and "
                            "attribute friendly name fields. Every given attribute description must be met to set the "
                            "role. If the attribute is an array, then the value must be contained in the array. If an "
                            "attribute can be found several times, then one match is sufficient.", "Map"),
                  _property("are.attribute.values.regex", "Regex Attribute Values",
                            "If enabled attribute values are interpreted as regular expressions.", "boolean"),
                  _ROLE, _SYNC)

    def applies(self, mapper, identity):
        assertion = _assertion(identity)
        if assertion is None:
            return False
        attributes = attributes_of(assertion)
        # Several attributes of the same name count as one with all their values.
        return all_match(mapper, "attributes", "are.attribute.values.regex",
                         lambda key: [v for a in attributes if key in (a.name, a.friendly_name) for v in a.values])


def _apply_to_identity(identity, idp, target, values):
    """What first broker login creates the user with: e-mail and names on the identity itself,
    other attributes kept for ``import_new_user``."""
    field = _PROFILE.get(target.lower())
    if field == "email":
        identity.email, identity.email_verified = values[0], idp.trust_email
    elif field == "firstName":
        identity.first_name = values[0]
    elif field == "lastName":
        identity.last_name = values[0]


def _store(user, target, values):
    field = _PROFILE.get(target.lower())
    set_attribute(user, field or target, values[:1] if field else values)


class AttributeImporter(MapperType):
    id = "saml-user-attribute-idp-mapper"
    name = "Attribute Importer"
    category = "Attribute Importer"
    compatible = COMPATIBLE
    help_text = "Import declared saml attribute if it exists in assertion into the specified user property or attribute."
    properties = (_NAME, _FRIENDLY, _property("user.attribute", "User Attribute Name", "User attribute name to store "
                                              "saml attribute.  Use email, lastName, and firstName to map to those "
                                              "predefined user properties.", "UserProfileAttributeList"), _SYNC)

    def values(self, mapper, identity):
        return _values(identity, mapper.config or {})

    def preprocess(self, realm, idp, mapper, identity):
        target = (mapper.config or {}).get("user.attribute", "")
        values = self.values(mapper, identity)
        if target and values:
            _apply_to_identity(identity, idp, target, values)

    def import_new_user(self, realm, idp, mapper, user, identity):
        target = (mapper.config or {}).get("user.attribute", "")
        values = self.values(mapper, identity)
        if target and values:
            _store(user, target, values)

    def update_brokered_user(self, realm, idp, mapper, user, identity):
        """FORCE: the attribute follows the provider, and goes when the provider stops sending it."""
        target = (mapper.config or {}).get("user.attribute", "")
        if target:
            _store(user, target, self.values(mapper, identity))


def _xpath_values(elements, expression):
    found = []
    for attribute in elements:
        for value in attribute.findall("{urn:oasis:names:tc:SAML:2.0:assertion}AttributeValue"):
            root = etree.Element("root")
            root.text = value.text
            for child in value:
                root.append(copy.deepcopy(child))  # its namespaces go with it
            namespaces = {p: u for e in root.iter() if isinstance(e.tag, str) for p, u in e.nsmap.items() if p}
            try:
                # No EXSLT regular expressions, no variables, no extension functions.
                result = etree.XPath(expression, namespaces=namespaces, regexp=False, smart_strings=False)(root)
            except etree.XPathSyntaxError:
                logger.warning("XPath attribute importer: %r is not an XPath expression", expression)
                return []
            except etree.XPathError:
                continue  # e.g. a prefix this value does not declare
            text = _string(result)
            if text:
                found.append(text)
    return found


def _string(result):
    """XPath's string() of an evaluation result (Keycloak asks for XPathConstants.STRING)."""
    if isinstance(result, list):
        if not result:
            return ""
        first = result[0]
        return "".join(first.itertext()) if isinstance(first, etree._Element) else str(first)
    if isinstance(result, bool):
        return "true" if result else "false"
    if isinstance(result, float):
        return str(int(result)) if result.is_integer() else str(result)
    return str(result)


class XPathAttributeImporter(AttributeImporter):
    id = "saml-xpath-attribute-idp-mapper"
    name = "XPath Attribute Importer"
    help_text = "Extract text of a saml attribute via XPath expression and import into the specified user property or attribute."
    properties = (_property("attribute.xpath", "Attribute XPath", "XPath expression to search for. All attributes are "
                            "surrounded with a <root> element. Given prefixes and namespaces are preserved."),
                  _property("attribute.name", "Attribute Name", "Name of attribute to search for in assertion and apply "
                            "XPath. You can leave this blank to try to apply XPath to all attributes or specify a "
                            "friendly name instead."),
                  _property("attribute.friendly.name", "Friendly Name", "Friendly name of attribute to search for in "
                            "assertion. You can leave this blank to try to apply XPath to all attributes or specify a "
                            "name instead."),
                  AttributeImporter.properties[2], _SYNC)

    def values(self, mapper, identity):
        config = mapper.config or {}
        expression = config.get("attribute.xpath") or ""
        if not expression:
            return []
        # Keycloak matches the one configured name against both the name and the friendly name.
        wanted = config.get("attribute.name") or config.get("attribute.friendly.name") or ""
        return _xpath_values(_attribute_elements(identity, wanted), expression)

    def update_brokered_user(self, realm, idp, mapper, user, identity):
        """Keycloak's XPath importer keeps the attribute when the provider sends nothing."""
        target = (mapper.config or {}).get("user.attribute", "")
        values = self.values(mapper, identity)
        if target and values:
            _store(user, target, values)


def register():
    """Called from ``SamlConfig.ready``."""
    for mapper_type in (AttributeToRole, AdvancedAttributeToRole, AttributeImporter, XPathAttributeImporter):
        register_mapper_type(mapper_type)
