"""Keycloak's SAML identity provider mappers over an assertion pysaml2 issued (and one with an
XML-valued attribute for the XPath importer), on import and on a later sign-in per sync mode."""
import json

import pytest
from saml2 import BINDING_HTTP_POST

from realms.brokering import mappers
from realms.brokering.providers import BrokeredIdentity
from realms.models import Role
from realms.users.accounts import create_user

from .conftest import saml_request_of

MAIL = "urn:oid:0.9.2342.19200300.100.1.3"
AFFILIATION = "urn:oid:1.3.6.1.4.1.5923.1.1.1.1"


@pytest.fixture
def brokered(make_idp, trip, answer, upstream):
    """(idp, the identity pysaml2's answer proves) for ``upstream.user``."""

    made = []

    def run(**attributes):
        if not made:
            made.append(make_idp())
        idp = made[0]
        if attributes:
            upstream.user["attributes"] = attributes
        broker, response = trip(idp)
        message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
        return idp, answer(idp, broker, upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text))

    return run


def mapper(idp, mapper_type, **config):
    return idp.mappers.create(realm=idp.realm, name=mapper_type + str(idp.mappers.count()), mapper_type=mapper_type,
                              config=config)


def test_saml_mapper_types_are_registered_for_saml_only():
    for mapper_id in ("saml-role-idp-mapper", "saml-user-attribute-idp-mapper", "saml-xpath-attribute-idp-mapper",
                      "saml-advanced-role-idp-mapper"):
        found = mappers.get_mapper_type(mapper_id)
        assert found.applies_to("saml") and not found.applies_to("oidc")


def test_attribute_to_role_granted_and_taken_away(brokered, realm, upstream):
    idp, identity = brokered()
    role = Role.objects.create(realm=realm, name="staff")
    row = mapper(idp, "saml-role-idp-mapper", **{"attribute.name": AFFILIATION, "attribute.value": "staff",
                                                 "role": "staff"})
    kind = mappers.get_mapper_type("saml-role-idp-mapper")
    user = create_user(realm, "ada")
    kind.import_new_user(realm, idp, row, user, identity)
    assert user.roles.filter(pk=role.pk).exists()
    identity = brokered(eduPersonAffiliation=["member"])[1]
    kind.update_brokered_user(realm, idp, row, user, identity)
    assert not user.roles.filter(pk=role.pk).exists()


def test_attribute_to_role_by_friendly_name_and_another_mapper_keeps_the_role(brokered, realm):
    idp, identity = brokered()
    role = Role.objects.create(realm=realm, name="staff")
    user = create_user(realm, "ada")
    granting = mapper(idp, "saml-role-idp-mapper", **{"attribute.friendly.name": "eduPersonAffiliation",
                                                      "attribute.value": "member", "role": "staff"})
    not_applying = mapper(idp, "saml-role-idp-mapper", **{"attribute.friendly.name": "eduPersonAffiliation",
                                                          "attribute.value": "faculty", "role": "staff"})
    kind = mappers.get_mapper_type("saml-role-idp-mapper")
    kind.update_brokered_user(realm, idp, granting, user, identity)
    kind.update_brokered_user(realm, idp, not_applying, user, identity)  # KEYCLOAK-8730: not removed
    assert user.roles.filter(pk=role.pk).exists()


@pytest.mark.parametrize("pairs, regex, expected", [
    ([{"key": "eduPersonAffiliation", "value": "staff"}, {"key": MAIL, "value": "ada@example.org"}], "false", True),
    ([{"key": "eduPersonAffiliation", "value": "staff"}, {"key": "mail", "value": "eve@example.org"}], "false", False),
    ([{"key": "mail", "value": ".*@example\\.org"}], "true", True),
    ([{"key": "mail", "value": "example"}], "true", False),  # the whole value must match
])
def test_advanced_attribute_to_role(brokered, realm, pairs, regex, expected):
    idp, identity = brokered()
    Role.objects.create(realm=realm, name="partner")
    row = mapper(idp, "saml-advanced-role-idp-mapper", attributes=json.dumps(pairs),
                 **{"are.attribute.values.regex": regex, "role": "partner"})
    user = create_user(realm, "ada")
    mappers.get_mapper_type("saml-advanced-role-idp-mapper").import_new_user(realm, idp, row, user, identity)
    assert user.roles.filter(name="partner").exists() is expected


def test_attribute_importer(brokered, realm):
    idp, identity = brokered()
    idp.trust_email = True
    kind = mappers.get_mapper_type("saml-user-attribute-idp-mapper")
    email = mapper(idp, kind.id, **{"attribute.friendly.name": "mail", "user.attribute": "email"})
    first = mapper(idp, kind.id, **{"attribute.name": "urn:oid:2.5.4.42", "user.attribute": "firstName"})
    groups = mapper(idp, kind.id, **{"attribute.friendly.name": "eduPersonAffiliation", "user.attribute": "affiliation"})
    for row in (email, first, groups):
        kind.preprocess(realm, idp, row, identity)
    assert (identity.email, identity.email_verified, identity.first_name) == ("ada@example.org", True, "Ada")
    user = create_user(realm, "ada", email=identity.email, first_name=identity.first_name)
    kind.import_new_user(realm, idp, groups, user, identity)
    user.refresh_from_db()
    assert user.attributes["affiliation"] == ["staff", "member"]
    # FORCE on a later sign-in: the provider no longer sends it, so it goes.
    identity = brokered(mail=["ada@example.org"])[1]
    kind.update_brokered_user(realm, idp, groups, user, identity)
    user.refresh_from_db()
    assert "affiliation" not in (user.attributes or {})


PERSON = ('<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="a1" Version="2.0">'
          '<saml:AttributeStatement><saml:Attribute Name="urn:person" FriendlyName="person"><saml:AttributeValue>'
          '<my:Person xmlns:my="http://my.namespace/schema"><my:FirstName>John</my:FirstName>'
          '<my:Role>engineer</my:Role></my:Person></saml:AttributeValue></saml:Attribute>'
          '<saml:Attribute Name="plain"><saml:AttributeValue>just text</saml:AttributeValue></saml:Attribute>'
          '</saml:AttributeStatement></saml:Assertion>')


@pytest.mark.parametrize("config, expected", [
    ({"attribute.xpath": "//my:FirstName", "attribute.name": "urn:person"}, ["John"]),
    ({"attribute.xpath": "/root/my:Person/my:Role", "attribute.friendly.name": "person"}, ["engineer"]),
    ({"attribute.xpath": "/root", "attribute.name": "plain"}, ["just text"]),
    ({"attribute.xpath": "count(//my:FirstName)", "attribute.name": "urn:person"}, ["1"]),
    ({"attribute.xpath": "//*[", "attribute.name": "urn:person"}, []),  # not an expression: nothing, logged
    ({"attribute.xpath": "//my:FirstName", "attribute.name": "absent"}, []),
])
def test_xpath_attribute_importer(realm, config, expected):
    from realms.models import IdentityProvider

    idp = IdentityProvider.objects.create(realm=realm, alias="x", provider_id="saml", config={})
    identity = BrokeredIdentity(id="j", context={"assertion": PERSON})
    row = mapper(idp, "saml-xpath-attribute-idp-mapper", **config, **{"user.attribute": "note"})
    kind = mappers.get_mapper_type("saml-xpath-attribute-idp-mapper")
    user = create_user(realm, "john")
    kind.import_new_user(realm, idp, row, user, identity)
    user.refresh_from_db()
    assert (user.attributes or {}).get("note", []) == expected


def test_xpath_importer_into_first_name(realm):
    from realms.models import IdentityProvider

    idp = IdentityProvider.objects.create(realm=realm, alias="x", provider_id="saml", config={})
    identity = BrokeredIdentity(id="j", context={"assertion": PERSON})
    row = mapper(idp, "saml-xpath-attribute-idp-mapper", **{"attribute.xpath": "//my:FirstName",
                                                            "user.attribute": "firstName"})
    mappers.get_mapper_type("saml-xpath-attribute-idp-mapper").preprocess(realm, idp, row, identity)
    assert identity.first_name == "John"
