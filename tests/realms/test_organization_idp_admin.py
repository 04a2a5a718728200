"""An organization's identity providers on the Admin REST API (Keycloak 26's
OrganizationIdentityProvidersResource): link by alias (a JSON string), list, read and unlink
with Keycloak's statuses and messages and admin events; one provider shared by two organizations
(26.8); the domain and "redirect when e-mail domain matches" read and written as the provider's
``kc.org.*`` config keys, a domain that is not the organization's refused; an organization's
domain or the organization removed takes the provider's link with it, never the provider."""
import json

import pytest

from realms.brokering import organizations as org_idps
from realms.models import Event, IdentityProvider, OrganizationIdentityProvider
from realms.users.organizations import OrganizationError

from .test_admin_rest_api import acme, created_id, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

REDIRECT, DOMAIN = "kc.org.broker.redirect.mode.email-matches", "kc.org.domain"


@pytest.fixture
def orgs_on(acme):
    acme.organizations_enabled = True
    acme.save()
    return acme


@pytest.fixture
def corp(master_api, orgs_on):
    return created_id(master_api("post", "acme/organizations", {
        "name": "Corp", "domains": [{"name": "corp.example"}, {"name": "corp.test"}]}))


@pytest.fixture
def idp(orgs_on):
    return IdentityProvider.objects.create(realm=orgs_on, alias="corp-sso", display_name="Corp SSO", provider_id="oidc",
                                           config={"clientId": "ours", "issuer": "https://sso.corp.example"})


def raw_post(api, path, body):
    """POST ``body`` as it is (Keycloak takes the alias quoted as a JSON string, or bare)."""
    return api.client.post(f"/admin/realms/{path}", body, content_type="application/json")


def refused(resp, status, message):
    assert (resp.status_code, resp.json()) == (status, {"errorMessage": message})


def test_link_list_read_and_unlink_as_keycloak(master_api, corp, idp):
    base = f"acme/organizations/{corp}/identity-providers"
    assert master_api("get", base).json() == []
    assert raw_post(master_api, base, json.dumps("corp-sso")).status_code == 204
    [listed] = master_api("get", base).json()
    assert listed["alias"] == "corp-sso" and listed["organizationId"] == corp and listed["providerId"] == "oidc"
    assert listed["config"]["clientId"] == "ours" and listed["config"][REDIRECT] == "false"
    assert DOMAIN not in listed["config"]
    assert master_api("get", f"{base}/corp-sso").json() == listed

    refused(raw_post(master_api, base, '"corp-sso"'), 409, "Identity provider already associated to the organization")
    refused(raw_post(master_api, base, json.dumps("no-such")), 400, "Identity provider not found with the given alias")
    refused(raw_post(master_api, base, ""), 400, "Identity provider not found with the given alias")
    refused(master_api("get", f"{base}/no-such"), 404, "Identity provider not associated with the organization")

    other = IdentityProvider.objects.create(realm=idp.realm, alias="other", provider_id="oidc")
    refused(master_api("get", f"{base}/other"), 404, "Identity provider not associated with the organization")
    assert raw_post(master_api, base, f"  {other.internal_id}\n").status_code == 204  # bare, by internal id
    assert [p["alias"] for p in master_api("get", base).json()] == ["corp-sso", "other"]

    assert master_api("delete", f"{base}/other").status_code == 204
    refused(master_api("delete", f"{base}/other"), 404, "Identity provider not found with the given alias")
    assert IdentityProvider.objects.filter(alias="other").exists()  # unlinked, not removed
    events = list(Event.objects.filter(realm=idp.realm, resource_type="ORGANIZATION", resource_path__contains="identity")
                  .order_by("time").values_list("type", "resource_path"))
    assert events == [("CREATE", f"organizations/{corp}/identity-providers/corp-sso"),
                      ("CREATE", f"organizations/{corp}/identity-providers/other"),
                      ("DELETE", f"organizations/{corp}/identity-providers/other")]
    created = Event.objects.filter(realm=idp.realm, resource_path__endswith="/corp-sso").get()
    assert json.loads(created.representation)["organizationId"] == corp


def test_the_routes_need_the_realm_switch_and_the_organization(master_api, corp, idp, orgs_on):
    refused(master_api("get", "acme/organizations/nope/identity-providers"), 404, "Organization not found.")
    refused(raw_post(master_api, "acme/organizations/nope/identity-providers", '"corp-sso"'), 404,
            "Organization not found.")
    orgs_on.organizations_enabled = False
    orgs_on.save()
    refused(master_api("get", f"acme/organizations/{corp}/identity-providers"), 404,
            "Organizations not enabled for this realm.")


def test_a_provider_shared_by_two_organizations_each_with_its_settings(master_api, corp, idp):
    beta = created_id(master_api("post", "acme/organizations", {"name": "Beta", "domains": [{"name": "beta.example"}]}))
    for org in (corp, beta):
        assert raw_post(master_api, f"acme/organizations/{org}/identity-providers", '"corp-sso"').status_code == 204
    org_idps.apply_organization_fields(idp, {"organizationId": beta, "config": {DOMAIN: "beta.example", REDIRECT: "true"}})
    seen_by_beta = master_api("get", f"acme/organizations/{beta}/identity-providers/corp-sso").json()
    seen_by_corp = master_api("get", f"acme/organizations/{corp}/identity-providers/corp-sso").json()
    assert (seen_by_beta["organizationId"], seen_by_beta["config"][DOMAIN], seen_by_beta["config"][REDIRECT]) == (
        beta, "beta.example", "true")
    assert seen_by_corp["organizationId"] == corp and DOMAIN not in seen_by_corp["config"]
    assert seen_by_corp["config"][REDIRECT] == "false"
    # Unlinked from one, still the other's.
    assert master_api("delete", f"acme/organizations/{corp}/identity-providers/corp-sso").status_code == 204
    assert master_api("get", f"acme/organizations/{beta}/identity-providers/corp-sso").status_code == 200


def test_domain_and_redirect_are_the_providers_config_keys(master_api, corp, idp):
    assert raw_post(master_api, f"acme/organizations/{corp}/identity-providers", '"corp-sso"').status_code == 204

    def seen():
        return org_idps.organization_fields(idp)

    org_idps.apply_organization_fields(idp, {"organizationId": corp, "config": {DOMAIN: "Corp.Example", REDIRECT: "true"}})
    assert seen() == {"organizationId": corp, "config": {DOMAIN: "corp.example", REDIRECT: "true"}}
    org_idps.apply_organization_fields(idp, {"config": {DOMAIN: "ANY", REDIRECT: "true"}})  # no organizationId: its link
    assert seen()["config"] == {DOMAIN: "ANY", REDIRECT: "true"}
    with pytest.raises(OrganizationError, match="Domain unknown.org is not one of the organization's domains"):
        org_idps.apply_organization_fields(idp, {"organizationId": corp, "config": {DOMAIN: "unknown.org"}})
    with pytest.raises(OrganizationError, match=r"Organization \[somethingelse\] not found"):
        org_idps.apply_organization_fields(idp, {"organizationId": "somethingelse", "config": {}})
    assert seen()["config"] == {DOMAIN: "ANY", REDIRECT: "true"}  # nothing of the refused changes kept
    org_idps.apply_organization_fields(idp, {"organizationId": corp, "config": {DOMAIN: " "}})
    assert seen()["config"] == {REDIRECT: "false"}  # a blank domain removes it, as Keycloak
    org_idps.apply_organization_fields(idp, {"config": {DOMAIN: "corp.test", REDIRECT: "true"}})
    org_idps.apply_organization_fields(idp, {"config": {REDIRECT: "true"}})
    assert seen()["config"] == {REDIRECT: "true"}  # the key left out of the map: removed
    # The stored map never holds the organization's keys; the representation shows them.
    assert org_idps.stored_config({"clientId": "x", DOMAIN: "corp.test", REDIRECT: "true"}) == {"clientId": "x"}
    rep = org_idps.with_organization({"alias": "corp-sso", "config": {"clientId": "x", DOMAIN: "stale"}}, idp)
    assert rep == {"alias": "corp-sso", "organizationId": corp, "config": {"clientId": "x", REDIRECT: "true"}}


def test_a_new_provider_naming_an_organization_is_linked_to_it(corp, idp, orgs_on):
    new = IdentityProvider.objects.create(realm=orgs_on, alias="new-sso", provider_id="oidc")
    with pytest.raises(OrganizationError):
        org_idps.apply_organization_fields(new, {"organizationId": corp, "config": {DOMAIN: "unknown.org"}}, created=True)
    assert not OrganizationIdentityProvider.objects.filter(identity_provider=new).exists()
    org_idps.apply_organization_fields(new, {"organizationId": corp, "config": {DOMAIN: "corp.test"}}, created=True)
    assert org_idps.organization_fields(new) == {"organizationId": corp, "config": {DOMAIN: "corp.test", REDIRECT: "false"}}
    # An update never moves a link to another organization (Keycloak keeps it).
    other = IdentityProvider.objects.create(realm=orgs_on, alias="unlinked", provider_id="oidc")
    org_idps.apply_organization_fields(other, {"organizationId": corp, "config": {DOMAIN: "corp.test"}})
    assert org_idps.organization_fields(other) == {}


def test_removing_a_domain_or_the_organization_keeps_the_provider(master_api, corp, idp):
    assert raw_post(master_api, f"acme/organizations/{corp}/identity-providers", '"corp-sso"').status_code == 204
    org_idps.apply_organization_fields(idp, {"config": {DOMAIN: "corp.test", REDIRECT: "true"}})
    rep = master_api("get", f"acme/organizations/{corp}").json()
    rep["domains"] = [{"name": "corp.example"}]
    assert master_api("put", f"acme/organizations/{corp}", rep).status_code == 204
    assert org_idps.organization_fields(idp)["config"] == {REDIRECT: "true"}  # the domain unset, as Keycloak
    assert master_api("delete", f"acme/organizations/{corp}").status_code == 204
    assert IdentityProvider.objects.filter(pk=idp.pk).exists() and org_idps.organization_fields(idp) == {}


def test_the_providers_own_routes_read_and_write_the_organization_keys(master_api, corp):
    """Keycloak's console links a provider, then PUTs the provider with the ``kc.org.*`` keys:
    through ``identity-provider/instances/{alias}`` the link's domain and redirect are set, a
    domain the organization lacks refused (400), and the provider's row never stores the keys."""
    created = master_api("post", "acme/identity-provider/instances", {
        "alias": "corp-saml", "providerId": "saml", "config": {"singleSignOnServiceUrl": "https://sso.corp.example/saml"}})
    assert created.status_code == 201, created.content
    assert raw_post(master_api, f"acme/organizations/{corp}/identity-providers", '"corp-saml"').status_code == 204
    rep = master_api("get", "acme/identity-provider/instances/corp-saml").json()
    assert rep["organizationId"] == corp
    rep["config"][DOMAIN] = "unknown.org"
    refused(master_api("put", "acme/identity-provider/instances/corp-saml", rep), 400,
            "Domain unknown.org is not one of the organization's domains")
    rep["config"].update({DOMAIN: "corp.test", REDIRECT: "true"})
    assert master_api("put", "acme/identity-provider/instances/corp-saml", rep).status_code == 204
    seen = master_api("get", f"acme/organizations/{corp}/identity-providers/corp-saml").json()
    assert (seen["config"][DOMAIN], seen["config"][REDIRECT]) == ("corp.test", "true")
    stored = IdentityProvider.objects.get(alias="corp-saml").config
    assert DOMAIN not in stored and REDIRECT not in stored
