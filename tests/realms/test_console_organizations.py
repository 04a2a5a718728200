"""The console's Organizations page (Django admin): shown only while the realm's "Organizations"
switch is on; create with domains and members, the alias fixed once set, a domain of another
organization refused, admin events, and the invitation by e-mail."""
import re
from unittest import mock

import pytest
from django.urls import reverse

from realms.models import Event, Organization, OrganizationMember
from realms.users import organizations

from .test_admin import errors_of, submit
from .test_console import acme, alice, console, master  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
ADD = reverse("admin:realms_organization_add")


def in_acme(console, acme):  # noqa: F811
    console.get(reverse("admin:realms_client_changelist"), {"realm__id__exact": acme.pk})


def test_hidden_until_the_realm_switches_organizations_on(console, acme):  # noqa: F811
    in_acme(console, acme)
    assert console.get(reverse("admin:realms_organization_changelist")).status_code == 403
    assert "realms/organization/" not in console.get(reverse("admin:index")).content.decode()
    resp = submit(console, reverse("admin:realms_realm_change", args=[acme.pk]), "realm_form",
                  {"organizations_enabled": "on"})
    assert resp.status_code == 200 and not errors_of(resp)
    acme.refresh_from_db()
    assert acme.organizations_enabled
    assert console.get(reverse("admin:realms_organization_changelist")).status_code == 200


def test_create_edit_members_domains_and_invite(console, acme, alice):  # noqa: F811
    acme.organizations_enabled = True
    acme.save()
    in_acme(console, acme)
    resp = submit(console, ADD, "organization_form", {
        "name": "ACME Corp", "alias": "", "enabled": "on", "attributes": "{}",
        "domains-TOTAL_FORMS": "1", "domains-0-name": "ACME.example",
        "memberships-TOTAL_FORMS": "1", "memberships-0-user": alice.pk, "memberships-0-membership_type": "UNMANAGED"})
    assert resp.status_code == 200 and not errors_of(resp), errors_of(resp)
    org = Organization.objects.get(realm=acme, name="ACME Corp")
    assert org.alias == "ACME Corp" and [d.name for d in org.domains.all()] == ["acme.example"]
    assert OrganizationMember.objects.filter(organization=org, user=alice).exists()
    kinds = set(Event.objects.filter(realm=acme, resource_type__startswith="ORGANIZATION").values_list(
        "resource_type", "type"))
    assert {("ORGANIZATION", "CREATE"), ("ORGANIZATION_MEMBERSHIP", "CREATE")} <= kinds

    change = reverse("admin:realms_organization_change", args=[org.pk])
    page = console.get(change).content.decode()
    assert 'id="org-invite"' in page and re.search(r'<input[^>]*name="alias"[^>]*disabled', page)
    submit(console, change, "organization_form", {"alias": "renamed", "description": "Widgets"})
    org.refresh_from_db()
    assert (org.alias, org.description) == ("ACME Corp", "Widgets")
    other = submit(console, ADD, "organization_form", {
        "name": "Other", "alias": "other", "attributes": "{}", "domains-TOTAL_FORMS": "1",
        "domains-0-name": "acme.example", "memberships-TOTAL_FORMS": "0"})
    assert "already linked to another organization" in " ".join(errors_of(other))

    invite = reverse("admin:realms_organization_invite", args=[org.pk])
    with mock.patch.object(organizations, "invite") as sent:
        done = console.post(invite, {"email": "new@acme.example", "first_name": "N", "last_name": "P"})
    assert done.status_code == 302 and sent.call_args.args[1].email == "new@acme.example"
    refused = console.post(invite, {"email": "alice@example.org"})
    assert "User already a member of the organization" in refused.content.decode()
