"""Keycloak 26's identity-first login (the browser flow's ``organization`` step) where no
identity provider applies: the username page first while the realm has organizations on and
some organization exists, then the password form with the username filled in; nothing changes
for a realm without organizations. Driven through the login pages."""
import re

import pytest
from django.test import Client as HttpClient

from realms.models import Organization, OrganizationDomain, OrganizationMember
from realms.signin.flows import get_authenticator
from tests.oidc.browser.conftest import PASSWORD
from tests.selfservice.test_reset_and_registration import AUTH, PARAMS, form_action, html, redirect_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(realm, fresh_caches):
    realm.organizations_enabled = True
    realm.save()
    org = Organization.objects.create(realm=realm, name="ACME Corp", alias="acme-corp")
    OrganizationDomain.objects.create(realm=realm, organization=org, name="example.com")
    return org


def username_value(page):
    found = re.search(r'<input id="username"[^>]*value="([^"]*)"', html(page))
    return found.group(1) if found else None


def is_identity_first(page):
    return 'id="kc-form-login"' in html(page) and 'name="password"' not in html(page)


def test_the_steps_are_registered_from_brokering():
    assert get_authenticator("organization").display_name == "Organization Identity-First Login"
    assert get_authenticator("idp-add-organization-member").display_name == "Organization Member Onboard"
    assert type(get_authenticator("organization")).__module__ == "realms.brokering.organization_steps"


def test_username_first_then_the_password_form(realm, org, web_app, bob):
    OrganizationMember.objects.create(organization=org, user=bob)
    http = HttpClient()
    page = http.get(AUTH, PARAMS)
    assert page.status_code == 200 and is_identity_first(page)
    blank = http.post(form_action(page), {"username": "  "})
    assert is_identity_first(blank) and "Invalid username." in html(blank)
    password_page = http.post(form_action(blank), {"username": "bob"})
    assert 'name="password"' in html(password_page) and username_value(password_page) == "bob"
    wrong = http.post(form_action(password_page), {"username": "bob", "password": "not-his"})
    assert wrong.status_code == 200 and "Invalid username or password." in html(wrong)
    assert "code" in redirect_query(http.post(form_action(wrong), {"username": "bob", "password": PASSWORD}))


def test_someone_unknown_outside_any_organization_gets_the_password_form(realm, org, web_app, bob):
    """Nothing tells an unknown name from a known one: the same password form follows."""
    http = HttpClient()
    page = http.post(form_action(http.get(AUTH, PARAMS)), {"username": "nobody@elsewhere.example"})
    assert 'name="password"' in html(page) and username_value(page) == "nobody@elsewhere.example"
    refused = http.post(form_action(page), {"username": "nobody@elsewhere.example", "password": "x"})
    assert "Invalid username or password." in html(refused)


def test_unknown_user_of_an_organization_domain_stays_on_the_username_page(realm, org, web_app):
    """Keycloak's unknownUserChallenge: the e-mail's domain is an organization's and no account
    exists; no provider redirects, so the identity-first page is shown again, no password asked."""
    http = HttpClient()
    page = http.post(form_action(http.get(AUTH, PARAMS)), {"username": "new@example.com"})
    assert is_identity_first(page) and username_value(page) == "new@example.com"


def test_login_hint_is_taken_at_once(realm, org, web_app, bob):
    """The client's ``login_hint`` stands for the typed username (Keycloak reads the client note)."""
    http = HttpClient()
    page = http.get(AUTH, {**PARAMS, "login_hint": "bob"})
    assert 'name="password"' in html(page) and username_value(page) == "bob"
    assert "code" in redirect_query(http.post(form_action(page), {"username": "bob", "password": PASSWORD}))


def test_a_disabled_member_is_refused_at_the_username_page(realm, org, web_app, bob):
    OrganizationMember.objects.create(organization=org, user=bob)
    bob.enabled = False
    bob.save()
    http = HttpClient()
    page = http.post(form_action(http.get(AUTH, PARAMS)), {"username": "bob"})
    assert is_identity_first(page) and "Invalid username or password." in html(page)


@pytest.mark.parametrize("switch", ["off", "no organization"])
def test_unchanged_without_organizations(realm, fresh_caches, web_app, bob, switch):
    """Organizations off, or on without any organization: the password form first, as before."""
    realm.organizations_enabled = switch != "off"
    realm.save()
    if switch == "off":
        Organization.objects.create(realm=realm, name="ACME Corp", alias="acme-corp")
    http = HttpClient()
    page = http.get(AUTH, PARAMS)
    assert 'name="password"' in html(page) and username_value(page) == ""
    assert "code" in redirect_query(http.post(form_action(page), {"username": "bob", "password": PASSWORD}))
