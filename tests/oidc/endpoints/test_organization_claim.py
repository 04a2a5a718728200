"""The ``organization`` claim of Keycloak 26's ``oidc-organization-membership-mapper``."""
from realms.models import Organization, OrganizationMember

from .test_claims import add_mapper, tokens

CONFIG = {"claim.name": "organization", "multivalued": "true", "jsonType.label": "String",
          "access.token.claim": "true", "id.token.claim": "true"}


def test_the_members_organizations_by_alias_then_with_id_and_attributes(http, realm, alice):
    realm.organizations_enabled = True
    realm.save()
    acme = Organization.objects.create(realm=realm, name="ACME", alias="acme", attributes={"tier": ["gold"]})
    Organization.objects.create(realm=realm, name="Other", alias="other")  # not hers
    off = Organization.objects.create(realm=realm, name="Off", alias="off", enabled=False)
    for org in (acme, off):
        OrganizationMember.objects.create(organization=org, user=alice)
    mapper = add_mapper(realm, "oidc-organization-membership-mapper", CONFIG)
    at, idt, _ = tokens(http, realm, alice)
    assert at["organization"] == ["acme"] and idt["organization"] == ["acme"]

    mapper.config = {**CONFIG, "addOrganizationId": "true", "addOrganizationAttributes": "true"}
    mapper.save()
    at, _, _ = tokens(http, realm, alice)
    assert at["organization"] == {"acme": {"id": acme.pk, "tier": ["gold"]}}

    realm.organizations_enabled = False
    realm.save()
    at, _, _ = tokens(http, realm, alice)
    assert "organization" not in at


def test_the_builtin_optional_organization_scope_carries_it(http, realm, alice):
    realm.organizations_enabled = True
    realm.save()
    org = Organization.objects.create(realm=realm, name="ACME", alias="acme")
    OrganizationMember.objects.create(organization=org, user=alice)
    at, _, _ = tokens(http, realm, alice)
    assert "organization" not in at  # an optional scope: only when asked for
    at, _, _ = tokens(http, realm, alice, scope="openid organization")
    assert at["organization"] == ["acme"] and "organization" in at["scope"].split()
