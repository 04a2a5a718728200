"""End to end over HTTP against a real upstream (pysaml2's identity provider on a loopback port,
tests/saml/broker): an organization member types their e-mail on the identity-first page and is
sent to their organization's provider because its domain says "redirect when e-mail domain
matches"; the provider's signed answer comes back to our broker endpoint. Without the redirect
(another domain, or the setting off) the password form follows instead. A managed member without
a password goes back to the provider they came in through whatever the redirect setting, is
signed in by the provider's answer, and our tokens' ``organization`` claim names the organization."""
import base64
import html
import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit
from urllib.request import Request, urlopen

import pytest
from django.test import Client as HttpClient

from realms.models import (
    FederatedIdentity,
    Organization,
    OrganizationDomain,
    OrganizationIdentityProvider,
    OrganizationMember,
    User,
)
from realms.users.accounts import create_user
from tests.saml.broker.conftest import make_idp, rf, upstream  # noqa: F401 (fixtures)
from tests.saml.sp import form_fields
from tests.selfservice.test_reset_and_registration import AUTH, PARAMS, form_action

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def corp(realm, web_app, make_idp):  # noqa: F811
    realm.organizations_enabled = True
    realm.save()
    org = Organization.objects.create(realm=realm, name="Corp", alias="corp")
    OrganizationDomain.objects.create(realm=realm, organization=org, name="example.org")
    idp = make_idp(postBindingAuthnRequest="true")
    OrganizationIdentityProvider.objects.create(organization=org, identity_provider=idp, domain="example.org",
                                                redirect_when_email_matches=True)
    return org


def upstream_answer(page):
    """The browser's part: post our AuthnRequest form to the upstream's SSO service and read the
    auto-posting form it answers (SAMLResponse and RelayState for our broker endpoint)."""
    action, fields = form_fields(page.content.decode())
    request = Request(action, data=urlencode(fields).encode(), method="POST")
    with urlopen(request, timeout=10) as answer:  # a loopback URL the test started
        return form_fields(answer.read().decode())


def test_a_member_is_sent_to_the_organizations_provider_by_email_domain(corp, upstream):  # noqa: F811
    http = HttpClient()
    first = http.get(AUTH, PARAMS)
    assert 'name="password"' not in first.content.decode()
    sent = http.post(form_action(first), {"username": "ada@example.org"})
    assert sent.status_code == 200 and "SAMLRequest" in sent.content.decode()
    action, fields = form_fields(sent.content.decode())
    assert action == upstream.sso  # straight to the organization's provider, no password asked
    endpoint, answer = upstream_answer(sent)
    assert endpoint == "http://testserver/realms/acme/broker/upstream/endpoint" and "SAMLResponse" in answer
    [(kind, parsed)] = upstream.requests
    assert kind == "AuthnRequest" and parsed.message.issuer.text == "http://testserver/realms/acme"


@pytest.mark.parametrize("case", ["another domain", "redirect off"])
def test_without_a_matching_redirect_the_password_form_follows(corp, upstream, case):  # noqa: F811
    if case == "redirect off":
        OrganizationIdentityProvider.objects.update(redirect_when_email_matches=False)
    username = "ada@elsewhere.example" if case == "another domain" else "ada@example.org"
    http = HttpClient()
    page = http.post(form_action(http.get(AUTH, PARAMS)), {"username": username})
    text = page.content.decode()
    if case == "another domain":
        assert 'name="password"' in text and "SAMLRequest" not in text
    else:  # an unknown user of the organization's domain: identity-first again, its provider offered
        assert 'name="password"' not in text and "SAMLRequest" not in text
        assert re.search(r'id="social-upstream"', text)
    assert html.unescape(re.search(r'<input id="username"[^>]*value="([^"]*)"', text).group(1)) == username



def claims_of(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_managed_member_goes_home_and_gets_the_organization_claim(realm, corp, upstream):  # noqa: F811
    OrganizationIdentityProvider.objects.update(redirect_when_email_matches=False)  # home, not the domain rule
    ada = create_user(realm, "ada", email="ada@example.org")
    idp = OrganizationIdentityProvider.objects.get().identity_provider
    FederatedIdentity.objects.create(realm=realm, user=ada, identity_provider=idp, subject="u-1001", user_name="u-1001")
    OrganizationMember.objects.create(organization=corp, user=ada, membership_type=OrganizationMember.MANAGED)
    http = HttpClient()
    sent = http.post(form_action(http.get(AUTH, {**PARAMS, "scope": "openid organization"})),
                     {"username": "ada@example.org"})
    assert form_fields(sent.content.decode())[0] == upstream.sso
    endpoint, answer = upstream_answer(sent)
    back = http.post(urlsplit(endpoint).path, answer)
    assert back.status_code == 302 and back["Location"].startswith("https://app.example/cb?"), back.content[:300]
    code = parse_qs(urlsplit(back["Location"]).query)["code"][0]
    tokens = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": PARAMS["redirect_uri"],
        "client_id": "web-app", "client_secret": "secret-of-web-app"})
    assert tokens.status_code == 200, tokens.content
    access = claims_of(tokens.json()["access_token"])
    assert access["sub"] == ada.pk and access["organization"] == ["corp"]


def test_someone_new_is_brokered_in_as_a_managed_member(realm, corp, upstream):  # noqa: F811
    """First broker login creates the user, and its Conditional Organization sub-flow makes them
    a MANAGED member of the organization whose provider brought them in."""
    http = HttpClient()
    sent = http.post(form_action(http.get(AUTH, {**PARAMS, "scope": "openid organization"})),
                     {"username": "ada@example.org"})
    endpoint, answer = upstream_answer(sent)
    review = http.post(urlsplit(endpoint).path, answer)
    assert 'id="kc-update-profile-form"' in review.content.decode()  # review profile: the assertion has no e-mail
    back = http.post(form_action(review), {"username": "ada", "email": "ada@example.org", "firstName": "Ada",
                                           "lastName": "Lovelace"})
    assert back.status_code == 302 and back["Location"].startswith("https://app.example/cb?"), back.content[:500]
    ada = User.objects.get(realm=realm, username="ada")
    assert OrganizationMember.objects.get(organization=corp, user=ada).membership_type == OrganizationMember.MANAGED
    assert FederatedIdentity.objects.get(user=ada).subject == "u-1001"
    code = parse_qs(urlsplit(back["Location"]).query)["code"][0]
    tokens = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": PARAMS["redirect_uri"],
        "client_id": "web-app", "client_secret": "secret-of-web-app"})
    assert claims_of(tokens.json()["access_token"])["organization"] == ["corp"]
