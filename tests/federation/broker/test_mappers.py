"""The claim-reading mappers (Keycloak's ids): Attribute Importer, Claim to Role, Advanced Claim
to Role and to Group. Each rule: the claim path (nested, escaped dot, list items), the value or
regular expression, what first broker login imports, what a later sign-in under FORCE changes
(a role or group taken away when the claims stop matching, unless another mapper gave it)."""
import json

import pytest

from realms.brokering.mappers import get_mapper_type
from realms.brokering.providers import BrokeredIdentity
from realms.models import Group, IdentityProviderMapper, Role
from realms.users.accounts import create_user

CLAIMS = {"sub": "u-1", "email": "u1@upstream.test", "groups": ["staff", "dev"], "department": "R&D",
          "address": {"country": "NL", "locality": "Delft"}, "urn.weird": "dotted", "admin": True, "level": 3}


@pytest.fixture
def idp(make_idp):
    return make_idp({"authorizationUrl": "https://up.test/a", "tokenUrl": "https://up.test/t", "clientId": "c"})


@pytest.fixture
def user(realm):
    return create_user(realm, "una", email="una@example.org")


def identity(**claims):
    return BrokeredIdentity(id="u-1", username="una", email="u1@upstream.test", email_verified=True,
                            claims={**CLAIMS, **claims})


def mapper(realm, idp, mapper_type, **config):
    return IdentityProviderMapper(realm=realm, identity_provider=idp, name=mapper_type, mapper_type=mapper_type,
                                  config=config)


def run(step, realm, idp, m, *args):
    return getattr(get_mapper_type(m.mapper_type), step)(realm, idp, m, *args)


def test_registered_for_oidc_types_only():
    for mapper_id in ("oidc-user-attribute-idp-mapper", "oidc-role-idp-mapper", "oidc-advanced-role-idp-mapper",
                      "oidc-advanced-group-idp-mapper"):
        mapper_type = get_mapper_type(mapper_id)
        assert mapper_type.applies_to("oidc") and mapper_type.applies_to("keycloak-oidc")
        assert not mapper_type.applies_to("saml") and not mapper_type.applies_to("github")


@pytest.mark.parametrize("claim, expected", [
    ("department", ["R&D"]), ("address.country", ["NL"]), ("urn\\.weird", ["dotted"]), ("groups", ["staff", "dev"]),
    ("admin", ["true"]), ("level", ["3"]), ("address.missing", []), ("nothing", []),
])
def test_attribute_importer_claim_paths(realm, idp, user, claim, expected):
    m = mapper(realm, idp, "oidc-user-attribute-idp-mapper", claim=claim, **{"user.attribute": "imported"})
    run("import_new_user", realm, idp, m, user, identity())
    user.refresh_from_db()
    assert user.attributes.get("imported", []) == expected


def test_attribute_importer_profile_fields_and_force_update(realm, idp, user):
    email = mapper(realm, idp, "oidc-user-attribute-idp-mapper", claim="address.locality",
                   **{"user.attribute": "firstName"})
    brokered = identity()
    run("preprocess", realm, idp, email, brokered)
    assert brokered.first_name == "Delft"  # first broker login creates the user with it
    dept = mapper(realm, idp, "oidc-user-attribute-idp-mapper", claim="department", **{"user.attribute": "dept"})
    run("import_new_user", realm, idp, dept, user, brokered)
    run("update_brokered_user", realm, idp, dept, user, identity(department="Sales"))
    user.refresh_from_db()
    assert user.attributes["dept"] == ["Sales"]
    run("update_brokered_user", realm, idp, dept, user, identity(department=None))
    user.refresh_from_db()
    assert "dept" not in user.attributes  # the provider stopped sending it


def test_an_imported_email_stays_verified_only_if_it_is_the_vouched_one(realm, idp):
    m = mapper(realm, idp, "oidc-user-attribute-idp-mapper", claim="department", **{"user.attribute": "email"})
    brokered = identity(department="other@example.org")
    run("preprocess", realm, idp, m, brokered)
    assert brokered.email == "other@example.org" and brokered.email_verified is False


def test_claim_to_role(realm, idp, user):
    role = Role.objects.create(realm=realm, name="developer")
    m = mapper(realm, idp, "oidc-role-idp-mapper", claim="groups", role="developer", **{"claim.value": "dev"})
    run("import_new_user", realm, idp, m, user, identity())
    assert role in user.roles.all()
    run("update_brokered_user", realm, idp, m, user, identity(groups=["staff"]))
    assert role not in user.roles.all()  # no longer in the claim: taken away
    run("update_brokered_user", realm, idp, m, user, identity(groups="dev"))
    assert role in user.roles.all()


def test_claim_to_client_role_and_unknown_role(realm, idp, user):
    from tests.oidc.browser.conftest import make_client

    app = make_client(realm, "my.app")
    role = Role.objects.create(realm=realm, client=app, name="viewer")
    m = mapper(realm, idp, "oidc-role-idp-mapper", claim="admin", role="my.app.viewer", **{"claim.value": "true"})
    run("import_new_user", realm, idp, m, user, identity())
    assert role in user.roles.all()
    missing = mapper(realm, idp, "oidc-role-idp-mapper", claim="admin", role="nope", **{"claim.value": "true"})
    run("import_new_user", realm, idp, missing, user, identity())  # logged, nothing granted, no error
    assert list(user.roles.filter(name="nope")) == []


def claims_config(pairs, regex=False):
    return {"claims": json.dumps([{"key": k, "value": v} for k, v in pairs]),
            "are.claim.values.regex": "true" if regex else "false"}


@pytest.mark.parametrize("pairs, regex, applies", [
    ([("groups", "dev"), ("address.country", "NL")], False, True),
    ([("groups", "dev"), ("address.country", "BE")], False, False),
    ([("groups", "de.*")], False, False),
    ([("groups", "de.*")], True, True),
    ([("department", "R&")], True, False),  # a full match, not a search
    ([("department", "R&.")], True, True),
    ([("missing", ".*")], True, False),
    ([], False, False),
])
def test_advanced_claim_to_role(realm, idp, user, pairs, regex, applies):
    role = Role.objects.create(realm=realm, name="eng")
    m = mapper(realm, idp, "oidc-advanced-role-idp-mapper", role="eng", **claims_config(pairs, regex))
    run("import_new_user", realm, idp, m, user, identity())
    assert (role in user.roles.all()) is applies


def test_advanced_claims_not_a_list_or_bad_regex_grant_nothing(realm, idp, user):
    Role.objects.create(realm=realm, name="eng")
    for config in ({"claims": "{not json", "are.claim.values.regex": "false"},
                   claims_config([("groups", "(")], regex=True)):
        run("import_new_user", realm, idp, mapper(realm, idp, "oidc-advanced-role-idp-mapper", role="eng", **config),
            user, identity())
    assert not user.roles.filter(name="eng").exists()


def test_advanced_claim_to_group(realm, idp, user):
    parent = Group.objects.create(realm=realm, name="eng")
    child = Group.objects.create(realm=realm, name="dev", parent=parent)
    m = mapper(realm, idp, "oidc-advanced-group-idp-mapper", group="/eng/dev",
               **claims_config([("groups", "dev"), ("address.country", "N.")], regex=True))
    run("import_new_user", realm, idp, m, user, identity())
    assert list(user.groups.all()) == [child]
    run("update_brokered_user", realm, idp, m, user, identity(address={"country": "BE"}))
    assert not user.groups.exists()


def test_another_mapper_of_the_same_sign_in_keeps_the_role(realm, idp, user):
    role = Role.objects.create(realm=realm, name="eng")
    gives = mapper(realm, idp, "oidc-role-idp-mapper", claim="groups", role="eng", **{"claim.value": "dev"})
    would_take = mapper(realm, idp, "oidc-role-idp-mapper", claim="groups", role="eng", **{"claim.value": "ops"})
    brokered = identity()
    run("update_brokered_user", realm, idp, gives, user, brokered)
    run("update_brokered_user", realm, idp, would_take, user, brokered)
    assert role in user.roles.all()


@pytest.mark.parametrize("path, expected", [
    ("company", ["@github"]), ("plan.name", ["pro"]), ("orgs[1].login", ["acme"]), ("orgs[5].login", []),
    ("orgs", ['{"login":"octo"}', '{"login":"acme"}']), ("missing.deeper", []),
])
def test_social_json_attribute_importer(realm, make_idp, user, path, expected):
    github = make_idp({"clientId": "gh", "clientSecret": "s"}, provider_id="github", alias="github")
    mapper_type = get_mapper_type("github-user-attribute-mapper")
    assert mapper_type.applies_to("github") and not mapper_type.applies_to("oidc")
    m = mapper(realm, github, "github-user-attribute-mapper", jsonField=path, userAttribute="imported")
    profile = BrokeredIdentity(id="583231", claims={"company": "@github", "plan": {"name": "pro"},
                                                    "orgs": [{"login": "octo"}, {"login": "acme"}]})
    run("import_new_user", realm, github, m, user, profile)
    user.refresh_from_db()
    assert user.attributes.get("imported", []) == expected


def test_social_json_importers_registered():
    for prefix, preset in (("google", "google"), ("facebook", "facebook"), ("microsoft", "microsoft"),
                           ("linkedin", "linkedin-openid-connect"), ("instagram", "instagram"), ("paypal", "paypal"),
                           ("stackoverflow", "stackoverflow")):
        assert get_mapper_type(f"{prefix}-user-attribute-mapper").applies_to(preset)
