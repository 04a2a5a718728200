"""The console's organization page, "Identity providers" tab: link one of the realm's providers
with a domain (one of the organization's, or any) and "redirect when email domain matches",
change it, unlink it (the provider stays); a provider of another realm is not on offer; each
change an admin event, as the Admin API records it."""
import pytest
from django.urls import reverse

from realms.brokering import organizations as org_idps
from realms.models import Event, IdentityProvider, Organization, OrganizationDomain
from realms.representation.services import create_realm

from .test_admin import errors_of, submit
from .test_console import acme, console, master  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
DOMAIN, REDIRECT = "kc.org.domain", "kc.org.broker.redirect.mode.email-matches"


@pytest.fixture
def corp(acme):  # noqa: F811
    acme.organizations_enabled = acme.admin_events_enabled = True
    acme.save()
    org = Organization.objects.create(realm=acme, name="Corp", alias="corp")
    for name in ("corp.example", "corp.test"):
        OrganizationDomain.objects.create(realm=acme, organization=org, name=name)
    return org


def test_link_change_and_unlink_a_provider(console, acme, corp):  # noqa: F811
    idp = IdentityProvider.objects.create(realm=acme, alias="corp-sso", provider_id="oidc")
    elsewhere = IdentityProvider.objects.create(realm=create_realm("other"), alias="foreign-sso", provider_id="oidc")
    change = reverse("admin:realms_organization_change", args=[corp.pk])
    page = console.get(change).content.decode()
    assert 'id="tab-button-identity-providers"' in page and "Identity providers" in page
    assert "corp-sso" in page and "foreign-sso" not in page  # only this realm's providers

    resp = submit(console, change, "organization_form", {
        "identity_provider_links-TOTAL_FORMS": "1", "identity_provider_links-0-identity_provider": idp.pk,
        "identity_provider_links-0-domain": "corp.test", "identity_provider_links-0-redirect_when_email_matches": "on"})
    assert resp.status_code == 200 and not errors_of(resp), errors_of(resp)
    assert org_idps.organization_fields(idp) == {"organizationId": corp.pk,
                                                 "config": {DOMAIN: "corp.test", REDIRECT: "true"}}

    refused = submit(console, change, "organization_form", {"identity_provider_links-0-domain": "unknown.org"})
    assert any("Select a valid choice" in e for e in errors_of(refused))
    foreign = submit(console, change, "organization_form", {
        "identity_provider_links-TOTAL_FORMS": "2", "identity_provider_links-1-identity_provider": elsewhere.pk,
        "identity_provider_links-1-domain": ""})
    assert any("Select a valid choice" in e for e in errors_of(foreign))

    resp = submit(console, change, "organization_form", {
        "identity_provider_links-0-domain": "ANY", "identity_provider_links-0-redirect_when_email_matches": None})
    assert not errors_of(resp), errors_of(resp)
    assert org_idps.organization_fields(idp)["config"] == {DOMAIN: "ANY", REDIRECT: "false"}

    resp = submit(console, change, "organization_form", {"identity_provider_links-0-DELETE": "on"})
    assert not errors_of(resp), errors_of(resp)
    assert org_idps.organization_fields(idp) == {} and IdentityProvider.objects.filter(pk=idp.pk).exists()
    events = list(Event.objects.filter(realm=acme, kind=Event.ADMIN).exclude(resource_path=f"organizations/{corp.pk}")
                  .order_by("time").values_list("type", "resource_type", "resource_path"))
    path = f"organizations/{corp.pk}/identity-providers/corp-sso"
    assert events == [("CREATE", "ORGANIZATION", path),
                      ("UPDATE", "IDENTITY_PROVIDER", "identity-provider/instances/corp-sso"),
                      ("DELETE", "ORGANIZATION", path)]
