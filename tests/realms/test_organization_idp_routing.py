"""Which organization a sign-in is about and which of its identity providers it goes to
(Keycloak's Organizations.resolveOrganization, resolveHomeBroker and the redirect on e-mail
domain match), which providers the login page offers in an organizations realm, and the first
broker login step ``idp-add-organization-member``: a user brokered in through an organization's
provider becomes its managed member, removed with the membership, and named by the
``organization`` claim of our tokens."""
import uuid

import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.brokering import context
from realms.brokering import organizations as org_idps
from realms.brokering.providers import BrokeredIdentity
from realms.models import (
    Client,
    FederatedIdentity,
    IdentityProvider,
    Organization,
    OrganizationDomain,
    OrganizationIdentityProvider,
    OrganizationMember,
    User,
)
from realms.representation import import_realm
from realms.signin.engine import AuthContext
from realms.signin.flows import Outcome, get_authenticator
from realms.sso.auth_sessions import AuthSession
from realms.users import organizations
from realms.users.accounts import create_user
from tests.oidc.endpoints.conftest import SECRET
from tests.oidc.endpoints.test_claims import add_mapper, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def realm(db):
    name = "o" + uuid.uuid4().hex[:10]
    realm = import_realm({"realm": name, "enabled": True, "organizationsEnabled": True, "clients": [
        {"clientId": "app", "secret": SECRET, "redirectUris": ["https://app.example/cb"]}]}).realm
    return realm


def org_with(realm, alias, *domains):
    org = Organization.objects.create(realm=realm, name=alias.title(), alias=alias)
    for name in domains:
        OrganizationDomain.objects.create(realm=realm, organization=org, name=name)
    return org


def provider(realm, alias, hidden=False):
    return IdentityProvider.objects.create(realm=realm, alias=alias, provider_id="oidc", hide_on_login=hidden)


def linked(org, idp, domain="", redirect=False):
    return OrganizationIdentityProvider.objects.create(organization=org, identity_provider=idp, domain=domain,
                                                       redirect_when_email_matches=redirect)


def test_the_organization_of_a_sign_in(realm):
    corp, beta = org_with(realm, "corp", "corp.example"), org_with(realm, "beta", "beta.example")
    off = org_with(realm, "off", "off.example")
    off.enabled = False
    off.save()
    alice = create_user(realm, "alice", email="alice@corp.example")
    assert org_idps.resolve_organization(realm, None, "corp.example") == corp  # no user: the domain's
    assert org_idps.resolve_organization(realm, None, "off.example") is None  # a disabled one: none
    assert org_idps.resolve_organization(realm, alice, "corp.example") == corp
    organizations.add_member(beta, alice)
    assert org_idps.resolve_organization(realm, alice, "corp.example") == beta  # her one membership
    organizations.add_member(corp, alice)
    assert org_idps.resolve_organization(realm, alice, "corp.example") == corp  # several: the domain's
    assert org_idps.resolve_organization(realm, alice, "elsewhere.example") is None
    OrganizationMember.objects.filter(organization=beta).update(membership_type=OrganizationMember.MANAGED)
    assert org_idps.resolve_organization(realm, alice, "corp.example") == beta  # the managed one first
    assert org_idps.resolve_organization(realm, alice, "", noted=corp.pk) == corp  # noted, still hers
    bob = create_user(realm, "bob")
    assert org_idps.resolve_organization(realm, bob, "", noted=corp.pk) is None  # noted, not his


def test_the_provider_a_domain_redirects_to(realm):
    corp = org_with(realm, "corp", "corp.example", "corp.test")
    any_domain, exact, quiet = provider(realm, "any-sso"), provider(realm, "exact-sso"), provider(realm, "quiet-sso")
    linked(corp, any_domain, "ANY", redirect=True)
    linked(corp, quiet, "corp.example", redirect=False)
    assert org_idps.redirect_provider(corp, "corp.example") == any_domain  # quiet does not redirect
    linked(corp, exact, "corp.example", redirect=True)
    assert org_idps.redirect_provider(corp, "corp.example") == exact  # the exact domain before ANY
    assert org_idps.redirect_provider(corp, "corp.test") == any_domain
    assert org_idps.redirect_provider(corp, "other.example") is None  # ANY is any of the organization's
    assert org_idps.redirect_provider(corp, "") is None


def test_a_managed_members_home_provider(realm):
    corp = org_with(realm, "corp", "corp.example")
    sso, other = provider(realm, "corp-sso"), provider(realm, "social")
    linked(corp, sso)
    alice = create_user(realm, "alice", email="alice@corp.example")
    FederatedIdentity.objects.create(realm=realm, user=alice, identity_provider=sso, subject="a-1")
    FederatedIdentity.objects.create(realm=realm, user=alice, identity_provider=other, subject="a-2")
    assert org_idps.home_providers(realm, alice) == []  # not a managed member
    organizations.add_member(corp, alice, OrganizationMember.MANAGED)
    assert org_idps.home_providers(realm, alice) == [sso]  # the organization's provider she came through
    assert org_idps.home_providers(realm, None) == []


def test_the_login_page_offers_the_realms_providers_and_then_the_organizations(realm):
    corp, beta = org_with(realm, "corp", "corp.example"), org_with(realm, "beta", "beta.example")
    social, corp_sso, beta_sso = provider(realm, "social"), provider(realm, "corp-sso"), provider(realm, "beta-sso")
    linked(corp, corp_sso)
    linked(beta, beta_sso)
    every = [social, corp_sso, beta_sso]
    session = AuthSession("r", "t", realm.pk, "", "openid-connect", {})
    assert org_idps.login_providers(realm, session, every) == [social]
    session.notes[org_idps.ORGANIZATION_NOTE] = corp.pk
    assert org_idps.login_providers(realm, session, every) == [social, corp_sso]
    assert org_idps.login_providers(realm, session, every, only_realm=True) == [social]
    realm.organizations_enabled = False
    assert org_idps.login_providers(realm, session, every) == every


def test_the_login_pages_buttons_are_those_providers(realm):
    from realms.brokering import login_page

    corp = org_with(realm, "corp", "corp.example")
    provider(realm, "social")
    linked(corp, provider(realm, "corp-sso"))
    app = Client.objects.get(realm=realm, client_id="app")
    session = AuthSession("r", "t", realm.pk, app.pk, "openid-connect", {})
    assert [b["id"] for b in login_page.buttons(realm, app, session)] == ["social-social"]
    session.notes[org_idps.ORGANIZATION_NOTE] = corp.pk
    assert [b["id"] for b in login_page.buttons(realm, app, session)] == ["social-corp-sso", "social-social"]


def brokered_ctx(realm, idp, user, email, noted=""):
    """The context first broker login gives its steps: the provider's identity kept in the
    authentication session, the user found or created."""
    session = AuthSession("r", "t", realm.pk, Client.objects.get(realm=realm, client_id="app").pk,
                          "openid-connect", {})
    if noted:
        session.notes[org_idps.ORGANIZATION_NOTE] = noted
    context.keep(session, idp, BrokeredIdentity(id="sub-1", username="upstream-alice", email=email))
    ctx = AuthContext(RequestFactory().get("/"), realm, Client.objects.get(realm=realm, client_id="app"), session)
    ctx.set_user(user)
    return ctx


def test_brokered_in_through_an_organizations_provider_a_managed_member(realm):
    step = get_authenticator("idp-add-organization-member")
    corp = org_with(realm, "corp", "corp.example")
    sso = provider(realm, "corp-sso")
    linked(corp, sso, "corp.example", redirect=True)
    alice = create_user(realm, "alice", email="alice@corp.example")
    ctx = brokered_ctx(realm, sso, alice, "alice@corp.example")
    assert step.configured_for(ctx, alice) and step.authenticate(ctx).kind == Outcome.SUCCESS
    member = organizations.membership(corp, alice.pk)
    assert member.membership_type == OrganizationMember.MANAGED

    # The organization claim of our tokens names it.
    add_mapper(realm, "oidc-organization-membership-mapper", {
        "claim.name": "organization", "multivalued": "true", "jsonType.label": "String",
        "access.token.claim": "true", "id.token.claim": "true"})
    at, idt, _ = tokens(HttpClient(), realm, alice)
    assert at["organization"] == ["corp"] and idt["organization"] == ["corp"]

    # Removing a managed member removes the user the organization provisioned.
    organizations.remove_member(member)
    assert not User.objects.filter(pk=alice.pk).exists()


def test_which_organization_a_shared_provider_brings_a_user_into(realm):
    step = get_authenticator("idp-add-organization-member")
    corp, beta = org_with(realm, "corp", "corp.example"), org_with(realm, "beta", "beta.example")
    shared = provider(realm, "shared-sso")
    linked(corp, shared, "corp.example")
    linked(beta, shared, "ANY")
    bob = create_user(realm, "bob", email="bob@beta.example")
    assert step.authenticate(brokered_ctx(realm, shared, bob, "bob@beta.example")).kind == Outcome.SUCCESS
    assert organizations.membership(beta, bob.pk).membership_type == OrganizationMember.MANAGED
    assert organizations.membership(corp, bob.pk) is None
    # An e-mail no organization of the provider has: no organization, the step does not apply.
    carol = create_user(realm, "carol", email="carol@elsewhere.example")
    ctx = brokered_ctx(realm, shared, carol, "carol@elsewhere.example")
    assert not step.configured_for(ctx, carol) and step.authenticate(ctx).kind == Outcome.ATTEMPTED
    assert not OrganizationMember.objects.filter(user=carol).exists()


def test_a_provider_not_the_noted_organizations_is_refused(realm):
    """The sign-in was in corp's scope (identity-first noted it) but came back through a provider
    corp does not use: Keycloak's ACCESS_DENIED, and no membership."""
    step = get_authenticator("idp-add-organization-member")
    corp, beta = org_with(realm, "corp", "corp.example"), org_with(realm, "beta", "beta.example")
    corp_sso, beta_sso = provider(realm, "corp-sso"), provider(realm, "beta-sso")
    linked(corp, corp_sso)
    linked(beta, beta_sso)
    dave = create_user(realm, "dave", email="dave@corp.example")
    outcome = step.authenticate(brokered_ctx(realm, beta_sso, dave, "dave@corp.example", noted=corp.pk))
    assert (outcome.kind, outcome.error) == (Outcome.FAILURE, "access_denied")
    assert not OrganizationMember.objects.filter(user=dave).exists()
    realm.organizations_enabled = False
    realm.save()
    ctx = brokered_ctx(realm, corp_sso, dave, "dave@corp.example")
    assert not step.configured_for(ctx, dave) and step.authenticate(ctx).kind == Outcome.ATTEMPTED
