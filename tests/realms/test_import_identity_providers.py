"""Realm import, export and partial import keep a realm's identity providers, their mappers and
the users' links to them (``identityProviders``, ``identityProviderMappers``, users'
``federatedIdentities``) in Keycloak's JSON. What this server cannot run (a provider or mapper
type it does not have, a flow the realm lacks, a link to no provider of the file) refuses the
import with its JSON path, and nothing is written."""
import copy
import json
from pathlib import Path

import pytest

from realms.models import (
    Event,
    FederatedIdentity,
    IdentityProvider,
    IdentityProviderMapper,
    OrganizationIdentityProvider,
    Realm,
)
from realms.representation import RepresentationError, export_realm, import_realm
from realms.users.accounts import create_user

from .test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
DATA = Path(__file__).resolve().parents[1] / "data" / "keycloak-brokering"
MASK = "**********"


def load(name):
    return json.loads((DATA / name).read_text())


def corp(alias="corp", **extra):
    return {"alias": alias, "displayName": "Corp SSO", "providerId": "oidc", "enabled": True, "trustEmail": True,
            "storeToken": True, "linkOnly": False, "hideOnLogin": True, "firstBrokerLoginFlowAlias": "first broker login",
            "postBrokerLoginFlowAlias": "browser",
            "config": {"clientId": "our-app", "clientSecret": "corp-secret", "clientAuthMethod": "client_secret_post",
                       "authorizationUrl": "https://sso.corp.example/authorize",
                       "tokenUrl": "https://sso.corp.example/token", "issuer": "https://sso.corp.example",
                       "jwksUrl": "https://sso.corp.example/jwks", "useJwksUrl": "true", "validateSignature": "true",
                       "syncMode": "FORCE", "guiOrder": "2"}, **extra}


def mapper(name, alias="corp", mapper_type="hardcoded-attribute-idp-mapper", **config):
    return {"name": name, "identityProviderAlias": alias, "identityProviderMapper": mapper_type,
            "config": {"syncMode": "INHERIT", **config}}


def realm_file(name="brokered", **extra):
    return {"realm": name, "enabled": True, "identityProviders": [corp()],
            "identityProviderMappers": [mapper("dept", attribute="dept", **{"attribute.value": "sales"}),
                                        mapper("staff", mapper_type="oidc-hardcoded-role-idp-mapper",
                                               role="offline_access")],
            "users": [{"username": "ann", "enabled": True, "federatedIdentities": [
                {"identityProvider": "corp", "userId": "corp-17", "userName": "ann@corp.example"}]}], **extra}


def comparable(rep):
    """An export's providers, mappers and links without the ids an import may give anew."""
    return ([{k: v for k, v in i.items() if k != "internalId"} for i in rep["identityProviders"]],
            sorted(({k: v for k, v in m.items() if k != "id"} for m in rep["identityProviderMappers"]),
                   key=lambda m: m["name"]),
            {u["username"]: u.get("federatedIdentities") for u in rep["users"]})


def test_import_keeps_providers_mappers_and_links_and_export_round_trips():
    result = import_realm(realm_file())
    realm = result.realm
    assert not [w for w in result.warnings if "identityProvider" in w or "federatedIdentities" in w]
    idp = IdentityProvider.objects.get(realm=realm, alias="corp")
    assert (idp.provider_id, idp.trust_email, idp.store_token, idp.hide_on_login, idp.sync_mode, idp.gui_order) == (
        "oidc", True, True, True, "FORCE", 2)
    assert (idp.first_broker_login_flow_alias, idp.post_broker_login_flow_alias) == ("first broker login", "browser")
    assert idp.config["clientSecret"] == "corp-secret"
    assert sorted(idp.mappers.values_list("name", flat=True)) == ["dept", "staff"]
    link = FederatedIdentity.objects.get(realm=realm)
    assert (link.user.username, link.identity_provider_id, link.subject, link.user_name) == (
        "ann", idp.pk, "corp-17", "ann@corp.example")

    exported = export_realm(realm)
    assert exported["identityProviders"][0]["config"]["clientSecret"] == "corp-secret"  # a full export's
    assert exported["identityProviders"][0]["internalId"] == idp.internal_id
    assert "organizationId" not in exported["identityProviders"][0]
    assert exported["users"][0]["federatedIdentities"] == [
        {"identityProvider": "corp", "userId": "corp-17", "userName": "ann@corp.example"}]

    again = copy.deepcopy(exported)
    again["realm"] = "brokered-copy"
    copied = import_realm(again).realm
    assert comparable(export_realm(copied)) == comparable(exported)
    # Ids taken by the first realm are given anew in the copy.
    assert IdentityProvider.objects.get(realm=copied).internal_id != idp.internal_id


def test_keycloak_testsuite_realm_with_social_providers_and_links():
    data = load("keycloak-testsuite-model-testrealm-brokering.json")
    realm = import_realm(data).realm
    assert sorted(IdentityProvider.objects.filter(realm=realm).values_list("alias", "provider_id")) == [
        ("facebook1", "facebook"), ("google1", "google"), ("twitter1", "twitter")]
    assert IdentityProvider.objects.get(realm=realm, alias="google1").config["clientSecret"] == "googleSecret"
    links = {(f.identity_provider.alias, f.subject, f.user_name)
             for f in FederatedIdentity.objects.filter(realm=realm).select_related("identity_provider")}
    assert links == {("facebook1", "facebook1", "fbuser1"), ("twitter1", "twitter1", "twuser1"),
                     ("google1", "google1", "mySocialUser@gmail.com")}
    exported = export_realm(realm)
    assert {i["alias"]: i["config"]["clientSecret"] for i in exported["identityProviders"]} == {
        "facebook1": "facebookSecret", "google1": "googleSecret", "twitter1": "twitterSecret"}
    user = next(u for u in exported["users"] if u["username"] == "mysocialuser")
    assert sorted(user["federatedIdentities"], key=lambda f: f["identityProvider"]) == sorted(
        data["users"][0]["federatedIdentities"], key=lambda f: f["identityProvider"])


@pytest.mark.parametrize(("change", "path", "message"), [
    (lambda d: d["identityProviders"][0].update(providerId="no-such-type"), "identityProviders[0]",
     "Invalid identity provider id [no-such-type]"),
    (lambda d: d["identityProviders"][0].update(alias="a b"), "identityProviders[0]", "Empty Space not allowed."),
    (lambda d: d["identityProviders"][0].update(firstBrokerLoginFlowAlias="gone"), "identityProviders[0]",
     "No available authentication flow with alias: gone"),
    (lambda d: d["identityProviders"][0].update(authenticateByDefault=True), "identityProviders[0].authenticateByDefault",
     None),
    (lambda d: d["identityProviders"].append(corp()), "identityProviders[1].alias", "duplicate 'corp'"),
    (lambda d: d["identityProviderMappers"][0].update(identityProviderMapper="no-such-mapper"),
     "identityProviderMappers[0]", "Invalid identity provider mapper type [no-such-mapper]"),
    (lambda d: d["identityProviderMappers"][0].update(identityProviderAlias="elsewhere"),
     "identityProviderMappers[0].identityProviderAlias", None),
    (lambda d: d["users"][0]["federatedIdentities"][0].update(identityProvider="elsewhere"),
     "users[0].federatedIdentities[0].identityProvider", None),
    (lambda d: d["users"].append({"username": "bob", "federatedIdentities": [
        {"identityProvider": "corp", "userId": "corp-17"}]}), "users[1].federatedIdentities[0].userId", None),
])
def test_what_cannot_run_refuses_the_import_and_writes_nothing(change, path, message):
    data = realm_file()
    change(data)
    before = (Realm.objects.count(), IdentityProvider.objects.count(), IdentityProviderMapper.objects.count(),
              FederatedIdentity.objects.count())
    with pytest.raises(RepresentationError) as exc:
        import_realm(data)
    assert exc.value.path == path
    if message is not None:
        assert exc.value.message == message
    assert (Realm.objects.count(), IdentityProvider.objects.count(), IdentityProviderMapper.objects.count(),
            FederatedIdentity.objects.count()) == before


def test_partial_import_of_providers_and_mappers(master_api, acme):
    body = {"ifResourceExists": "FAIL", "identityProviders": [corp()],
            "identityProviderMappers": [mapper("dept", attribute="dept")],
            "users": [{"username": "cid", "federatedIdentities": [{"identityProvider": "corp", "userId": "c-1"}]}]}
    resp = master_api("post", "acme/partialImport", body)
    assert resp.status_code == 200, resp.content
    idp = IdentityProvider.objects.get(realm=acme, alias="corp")
    assert resp.json()["results"][0] == {"action": "ADDED", "resourceType": "IDP", "resourceName": "corp",
                                         "id": idp.internal_id}
    assert list(idp.mappers.values_list("name", flat=True)) == ["dept"]
    assert FederatedIdentity.objects.get(realm=acme).user.username == "cid"
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_path=f"identity-provider/instances/{idp.pk}",
                                type="CREATE").exists()

    again = {**body, "users": []}
    resp = master_api("post", "acme/partialImport", again)
    assert resp.status_code == 409 and resp.json() == {"errorMessage": "Identity Provider 'corp' already exists."}
    skipped = master_api("post", "acme/partialImport", {**again, "ifResourceExists": "SKIP"}).json()
    assert [(r["action"], r["resourceType"]) for r in skipped["results"]] == [("SKIPPED", "IDP")]
    assert IdentityProviderMapper.objects.filter(realm=acme).count() == 1

    changed = {**again, "ifResourceExists": "OVERWRITE", "identityProviders": [corp(displayName="Renamed")]}
    overwritten = master_api("post", "acme/partialImport", changed).json()
    assert [(r["action"], r["resourceType"]) for r in overwritten["results"]] == [("OVERWRITTEN", "IDP")]
    assert IdentityProvider.objects.get(realm=acme, alias="corp").display_name == "Renamed"
    assert list(IdentityProviderMapper.objects.filter(realm=acme).values_list("name", flat=True)) == ["dept"]

    refused = master_api("post", "acme/partialImport", {"identityProviders": [corp("x", providerId="nope")]})
    assert refused.json() == {"errorMessage": "identityProviders[0]: Invalid identity provider id [nope]"}
    assert not IdentityProvider.objects.filter(realm=acme, alias="x").exists()


def test_partial_export_masks_the_client_secret(master_api, acme):
    create_user(acme, "dora")
    import_realm({**realm_file("other"), "users": []})  # another realm's provider stays out
    master_api("post", "acme/partialImport", {"identityProviders": [corp()]})
    rep = master_api("post", "acme/partial-export").json()
    assert [i["alias"] for i in rep["identityProviders"]] == ["corp"]
    assert rep["identityProviders"][0]["config"]["clientSecret"] == MASK
    assert "corp-secret" not in json.dumps(rep)


def test_organizations_providers_round_trip_with_their_link_settings():
    data = realm_file("orgs", organizationsEnabled=True, organizations=[{
        "name": "Acme", "alias": "acme", "domains": [{"name": "acme.example"}],
        "identityProviders": [{"alias": "corp", "config": {"kc.org.domain": "acme.example",
                                                           "kc.org.broker.redirect.mode.email-matches": "true"}}]}])
    realm = import_realm(data).realm
    link = OrganizationIdentityProvider.objects.get(identity_provider__realm=realm)
    assert (link.organization.alias, link.identity_provider.alias, link.domain, link.redirect_when_email_matches) == (
        "acme", "corp", "acme.example", True)
    assert "kc.org.domain" not in link.identity_provider.config
    exported = export_realm(realm)
    org_idps = exported["organizations"][0]["identityProviders"]
    assert [(i["alias"], i["config"]["kc.org.domain"], i["config"]["kc.org.broker.redirect.mode.email-matches"])
            for i in org_idps] == [("corp", "acme.example", "true")]
    assert org_idps[0]["config"]["clientSecret"] == MASK  # the realm's list carries it
    copied = import_realm({**exported, "realm": "orgs-copy"}).realm
    again = OrganizationIdentityProvider.objects.get(identity_provider__realm=copied)
    assert (again.domain, again.redirect_when_email_matches) == ("acme.example", True)

    bad = copy.deepcopy(data)
    bad["realm"] = "orgs-bad"
    bad["organizations"][0]["identityProviders"][0]["alias"] = "elsewhere"
    with pytest.raises(RepresentationError) as exc:
        import_realm(bad)
    assert exc.value.path == "organizations[0].identityProviders[0].alias"
    assert not Realm.objects.filter(name="orgs-bad").exists()
