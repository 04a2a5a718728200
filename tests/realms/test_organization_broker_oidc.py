"""End to end against panva's oidc-provider (tests/federation/broker, an OpenID Certified provider
on its own loopback port): on the identity-first page a member of an organization types their
e-mail, is sent to the organization's OpenID Connect provider because its domain redirects on
match (login_hint forwarded as the username), signs in there, first broker login creates them as
a MANAGED member, and our tokens' ``organization`` claim names the organization. The client's
``login_hint`` does the same without the page."""
import base64
import json
from urllib.parse import parse_qs, urlsplit

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
from tests.federation.broker.conftest import _loopback, make_idp, oidc_idp, upstream  # noqa: F401 (fixtures)
from tests.selfservice.test_reset_and_registration import AUTH, PARAMS, form_action

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def corp(realm, web_app, oidc_idp):  # noqa: F811
    realm.organizations_enabled = True
    realm.save()
    org = Organization.objects.create(realm=realm, name="Upstream Inc", alias="upstream-inc")
    OrganizationDomain.objects.create(realm=realm, organization=org, name="upstream.example")
    idp = oidc_idp(fields={"trust_email": True}, loginHint="true")
    OrganizationIdentityProvider.objects.create(organization=org, identity_provider=idp, domain="upstream.example",
                                                redirect_when_email_matches=True)
    return org


def access_claims(realm, back):
    assert back.status_code == 302 and back["Location"].startswith(PARAMS["redirect_uri"] + "?"), back.content[:500]
    code = parse_qs(urlsplit(back["Location"]).query)["code"][0]
    answer = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "authorization_code", "code": code, "redirect_uri": PARAMS["redirect_uri"],
        "client_id": "web-app", "client_secret": "secret-of-web-app"})
    assert answer.status_code == 200, answer.content
    payload = answer.json()["access_token"].split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def through_the_provider(http, upstream, sent):  # noqa: F811
    """The browser at the provider: its login form, then back to our broker endpoint."""
    assert sent.status_code == 302 and sent["Location"].startswith(upstream.issuer), sent.content[:300]
    back = urlsplit(upstream.sign_in(sent["Location"], "ada"))
    return http.get(back.path, {k: v[0] for k, v in parse_qs(back.query).items()})


def test_a_member_sent_to_the_organizations_provider_by_email_domain(realm, corp, upstream):  # noqa: F811
    http = HttpClient()
    page = http.get(AUTH, {**PARAMS, "scope": "openid organization"})
    assert 'name="password"' not in page.content.decode()
    sent = http.post(form_action(page), {"username": "ada@upstream.example"})
    assert parse_qs(urlsplit(sent["Location"]).query)["login_hint"] == ["ada@upstream.example"]
    claims = access_claims(realm, through_the_provider(http, upstream, sent))
    ada = User.objects.get(realm=realm, username="ada")
    assert claims["sub"] == ada.pk and claims["organization"] == ["upstream-inc"]
    assert OrganizationMember.objects.get(organization=corp, user=ada).membership_type == OrganizationMember.MANAGED
    assert FederatedIdentity.objects.get(user=ada).identity_provider.alias == "upstream"


def test_the_clients_login_hint_goes_straight_to_the_provider(realm, corp, upstream):  # noqa: F811
    http = HttpClient()
    sent = http.get(AUTH, {**PARAMS, "scope": "openid organization", "login_hint": "ada@upstream.example"})
    claims = access_claims(realm, through_the_provider(http, upstream, sent))
    assert claims["organization"] == ["upstream-inc"]
