"""End to end over HTTP against a real upstream (pysaml2's identity provider on a loopback port,
tests/saml/broker): an organization member types their e-mail on the identity-first page and is
sent to their organization's provider because its domain says "redirect when e-mail domain
matches"; the provider's signed answer comes back to our broker endpoint. Without the redirect
(another domain, or the setting off) the password form follows instead."""
import html
import re
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from django.test import Client as HttpClient

from realms.models import Organization, OrganizationDomain, OrganizationIdentityProvider
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
