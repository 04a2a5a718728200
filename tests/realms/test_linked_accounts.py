"""The Account REST API's linked accounts (Keycloak 26's LinkedAccountsResource) and the account
console's "Linked accounts" page: which providers are listed (linked, and those the user may
link: enabled, realm-level, shown in the account console), Keycloak's representation and order,
``linked``/``search``/``first``/``max``, and unlinking with Keycloak's refusals and event."""
import re

import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.brokering import broker, context, linking, providers
from realms.models import (
    Client,
    Credential,
    Event,
    FederatedIdentity,
    IdentityProvider,
    Organization,
    OrganizationIdentityProvider,
    OrganizationMember,
    Role,
)
from realms.signin.engine import AuthContext
from realms.signin.flows import Outcome
from realms.sso.auth_sessions import AuthSession
from tests.realms.test_account_api import PASSWORD, acme, bob, bob_token, call, token  # noqa: F401 (fixtures)
from tests.realms.test_signin import redirect_query, sign_in

pytestmark = pytest.mark.django_db


class Social(providers.ProviderType):
    """A social type for the ``social`` flag (the real presets register from federation)."""

    provider_id, name, social = "test-social", "Test Social", True


@pytest.fixture
def social(monkeypatch):
    monkeypatch.setitem(providers._types, Social.provider_id, Social())


def add(realm, alias, provider_id="saml", **fields):
    config = fields.pop("config", {})
    return IdentityProvider.objects.create(realm=realm, alias=alias, provider_id=provider_id, config=config, **fields)


def link(user, idp, subject=None, user_name=None):
    return FederatedIdentity.objects.create(realm=user.realm, user=user, identity_provider=idp,
                                            subject=subject or f"{idp.alias}-sub", user_name=user_name or f"{idp.alias}-me")


@pytest.fixture
def setup(acme, bob, social):
    corp = add(acme, "corp", display_name="Corp SSO", config={"guiOrder": "2"})
    add(acme, "google", "test-social")
    add(acme, "links", link_only=True, hide_on_login=True, config={"guiOrder": "9"})
    add(acme, "off", enabled=False)
    add(acme, "never", config={"showInAccountConsole": "NEVER"})
    when = add(acme, "when-linked", config={"showInAccountConsole": "WHEN_LINKED"})
    add(acme, "unknown-type", "no-such-type")
    org = Organization.objects.create(realm=acme, name="Org", alias="org")
    OrganizationIdentityProvider.objects.create(organization=org, identity_provider=add(acme, "org-sso"))
    link(bob, corp, user_name="bob@corp")
    return {"corp": corp, "when": when}


def reps(access, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    resp = call(access, "get", "linked-accounts" + (f"?{query}" if query else ""))
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_the_list_in_keycloaks_shape_and_order(setup, bob_token):
    body = reps(bob_token["access_token"])
    # Without a GUI order first (by alias), then GUI order highest first; link-only and hidden
    # ones listed; disabled, NEVER, WHEN_LINKED unlinked, organization-bound unlinked, and a type
    # this server lacks, not.
    assert [r["providerAlias"] for r in body] == ["google", "links", "corp"]
    assert body[2] == {"connected": True, "social": False, "providerAlias": "corp", "providerName": "corp",
                       "displayName": "Corp SSO", "linkedUsername": "bob@corp"}
    assert body[0] == {"connected": False, "social": True, "providerAlias": "google", "providerName": "google",
                       "displayName": "Test Social"}


def test_linked_and_unlinked(setup, bob, bob_token):
    access = bob_token["access_token"]
    link(bob, setup["when"])
    link(bob, IdentityProvider.objects.get(alias="org-sso"))
    link(bob, IdentityProvider.objects.get(alias="unknown-type"))
    assert [r["providerAlias"] for r in reps(access, linked="true")] == ["org-sso", "unknown-type", "when-linked",
                                                                        "corp"]
    assert all(r["connected"] for r in reps(access, linked="true"))
    assert [r["providerAlias"] for r in reps(access, linked="false")] == ["google", "links"]
    assert not any(r["connected"] for r in reps(access, linked="false"))


def test_search_and_pages(setup, bob_token):
    access = bob_token["access_token"]
    assert [r["providerAlias"] for r in reps(access, linked="true", search="Corp")] == ["corp"]  # display name
    assert reps(access, linked="true", search="corp*") == reps(access, linked="true", search="*orp*")
    assert reps(access, linked="true", search="orp") == []
    assert [r["providerAlias"] for r in reps(access, linked="true", search='"Corp SSO"')] == ["corp"]
    assert [r["providerAlias"] for r in reps(access, linked="false", search="GOO")] == ["google"]
    assert [r["providerAlias"] for r in reps(access, linked="false", search="*ink*")] == ["links"]
    assert [r["providerAlias"] for r in reps(access, linked="false", search='"links"')] == ["links"]
    assert reps(access, linked="false", search="goo?le") == []  # no wildcard but *
    assert [r["providerAlias"] for r in reps(access, linked="false", first="1", max="1")] == ["links"]
    assert reps(access, linked="false", first="2") == []
    refused = call(access, "get", "linked-accounts?linked=false&first=-1")
    assert refused.status_code == 400 and refused.json() == {"errorMessage": "Invalid parameter: first"}


def test_unlink_and_its_refusals(setup, acme, bob, bob_token):
    access = bob_token["access_token"]
    gone = call(access, "delete", "linked-accounts/nope")
    assert gone.status_code == 400 and gone.json() == {"errorMessage": "identityProviderNotFoundMessage"}
    not_linked = call(access, "delete", "linked-accounts/google")
    assert not_linked.json() == {"errorMessage": "This identity is not active anymore."}
    assert call(access, "delete", "linked-accounts/corp").status_code == 204
    assert not FederatedIdentity.objects.filter(user=bob).exists()
    event = Event.objects.get(realm=acme, type="REMOVE_FEDERATED_IDENTITY")
    assert event.user_id == bob.pk and event.client_id == "account-console"
    assert event.details == {"username": "bob", "identity_provider": "corp", "identity_provider_identity": "bob@corp"}


def test_the_only_way_to_sign_in_is_never_removed(setup, acme, bob, bob_token):
    access = bob_token["access_token"]
    bob.credentials.filter(type=Credential.PASSWORD).delete()
    bob.forget_credentials()
    refused = call(access, "delete", "linked-accounts/corp")
    assert refused.status_code == 400
    assert refused.json() == {"errorMessage": "You can't remove last federated identity as you don't have a password."}
    # Another link is another way in.
    link(bob, IdentityProvider.objects.get(alias="google"))
    assert call(access, "delete", "linked-accounts/corp").status_code == 204


def test_an_organizations_provider_a_managed_member_came_through_stays(setup, acme, bob, bob_token):
    acme.organizations_enabled = True
    acme.save()
    org_sso = IdentityProvider.objects.get(alias="org-sso")
    link(bob, org_sso)
    OrganizationMember.objects.create(organization=Organization.objects.get(alias="org"), user=bob,
                                      membership_type=OrganizationMember.MANAGED)
    context.identity_providers(acme)  # (read through the realm cache, as the API does)
    refused = call(bob_token["access_token"], "delete", "linked-accounts/org-sso")
    assert refused.json() == {
        "errorMessage": "You cannot remove the link to an identity provider associated with an organization."}


def test_view_profile_alone_may_list_but_not_unlink(setup, acme, bob):
    # web-app has full scope: its token carries view-profile, and the "account" audience.
    manage = Role.objects.get(client__realm=acme, client__client_id="account", name="manage-account")
    Role.objects.get(realm=acme, client=None, name="default-roles-acme").composites.remove(manage)
    access = token("acme", "bob", client_id="web-app", client_secret="secret-of-web-app")["access_token"]
    assert call(access, "get", "linked-accounts").status_code == 200
    assert call(access, "delete", "linked-accounts/corp").status_code == 403
    assert FederatedIdentity.objects.filter(user=bob).exists()


# The account console's page --------------------------------------------------------------------

CONSOLE = "/realms/acme/account/account-security/linked-accounts"


def _csrf(page):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)


@pytest.fixture
def browser(setup, acme, fresh_caches):
    plain = HttpClient()
    redirect_query(sign_in(plain, "bob", PASSWORD))
    http = HttpClient(enforce_csrf_checks=True)
    http.cookies = plain.cookies
    return http


def test_the_page_lists_links_and_unlinks(browser, bob):
    page = browser.get(CONSOLE)
    text = page.content.decode()
    assert page.status_code == 200
    linked, unlinked = text.split('id="unlinked-idps"')
    assert 'id="corp-idp"' in linked and "bob@corp" in linked and 'id="corp-idp-unlink"' in linked
    assert 'id="google-idp-link"' in unlinked and 'id="links-idp-link"' in unlinked and "org-sso" not in text
    href = re.search(r'href="([^"]+)" id="google-idp-link"', unlinked).group(1).replace("&amp;", "&")
    assert "kc_action=idp_link%3Agoogle" in href and "client_id=account&" in href
    done = browser.post(CONSOLE, {"csrfmiddlewaretoken": _csrf(page), "unlink": "corp"})
    assert done.status_code == 302 and "notice=unLinkSuccess" in done["Location"]
    assert not FederatedIdentity.objects.filter(user=bob).exists()
    assert "Successfully unlinked account" in browser.get(done["Location"]).content.decode()


def test_the_page_says_why_an_unlink_is_refused(browser, bob):
    bob.credentials.filter(type=Credential.PASSWORD).delete()
    page = browser.get(CONSOLE)
    refused = browser.post(CONSOLE, {"csrfmiddlewaretoken": _csrf(page), "unlink": "corp"})
    assert refused.status_code == 400
    assert "You can&#x27;t remove last federated identity as you don&#x27;t have a password." in refused.content.decode()
    assert FederatedIdentity.objects.filter(user=bob).exists()


def test_unlinking_needs_the_csrf_token(browser, bob):
    assert browser.post(CONSOLE, {"unlink": "corp"}).status_code == 403
    assert FederatedIdentity.objects.filter(user=bob).exists()


# The idp_link action's refusals (before any provider is asked) --------------------------------

def _signed_in_to_web_app():
    http = HttpClient()
    redirect_query(sign_in(http, "bob", PASSWORD))
    return http


AUTH = "/realms/acme/protocol/openid-connect/auth"
PARAMS = {"client_id": "web-app", "redirect_uri": "https://app.example/cb", "response_type": "code",
          "scope": "openid", "state": "st"}


@pytest.mark.parametrize("roles, shown", [((), False), (("manage-account-links",), True), (("manage-account",), True)])
def test_idp_link_needs_manage_account_or_manage_account_links(setup, acme, bob, roles, shown):
    bob.roles.clear()  # not the default roles
    bob.roles.add(*Role.objects.filter(realm=acme, client__client_id="account", name__in=roles))
    http = _signed_in_to_web_app()
    answer = http.get(AUTH, {**PARAMS, "kc_action": "idp_link:google"})
    if shown:
        assert answer.status_code == 200 and "Do you want to link your account with Test Social?" in answer.content.decode()
        assert 'name="cancel-aia"' in answer.content.decode()
    else:
        query = redirect_query(answer)
        assert query["kc_action_status"] == ["error"] and query["code"]
        event = Event.objects.get(realm=acme, type="FEDERATED_IDENTITY_LINK_ERROR")
        assert (event.error, event.user_id, event.details) == ("not_allowed", bob.pk, {"identity_provider": "google"})


@pytest.mark.parametrize("alias", ["nope", "off", "unknown-type", ""])
def test_idp_link_to_no_usable_provider_is_an_error(setup, acme, bob, alias):
    http = _signed_in_to_web_app()
    query = redirect_query(http.get(AUTH, {**PARAMS, "kc_action": f"idp_link:{alias}"}))
    assert query["kc_action_status"] == ["error"] and query["code"]
    assert Event.objects.get(realm=acme, type="FEDERATED_IDENTITY_LINK_ERROR").error == "unknown_identity_provider"
    assert not FederatedIdentity.objects.filter(user=bob).exclude(identity_provider__alias="corp").exists()


def test_idp_link_after_the_providers_answer(setup, acme, bob):
    """What the action makes of the provider's answer (the broker's link mode leaves it): a
    refusal by the person is a cancelled action, another error Keycloak's error page, no link
    an error, the link a success."""
    action = linking.IdpLink()
    client = Client.objects.get(realm=acme, client_id="web-app")

    def answer(**notes):
        session = AuthSession("r", "t", acme.pk, client.pk, "openid-connect", {})
        session.notes.update({linking.LINKING: "google", **notes})
        ctx = AuthContext(RequestFactory().post("/"), acme, client, session, is_action=True)
        ctx.set_user(bob)
        ctx.action_parameter = "google"
        return action.process(ctx)

    cancelled = answer(**{broker.BROKER_ERROR: [linking.CANCELLED_AT_PROVIDER, "Test Social"]})
    assert (cancelled.kind, cancelled.error) == (Outcome.FAILURE, "rejected_by_user")
    failed = answer(**{broker.BROKER_ERROR: ["identityProviderAlreadyLinkedMessage", "Test Social"]})
    assert failed.kind == Outcome.CHALLENGE and failed.response.status_code == 400
    assert "Federated identity returned by Test Social is already linked to another user." in failed.response.content.decode()
    nothing = answer()
    assert (nothing.kind, nothing.error) == (Outcome.FAILURE, "invalid_request")
    link(bob, IdentityProvider.objects.get(alias="google"))
    assert answer().kind == Outcome.SUCCESS


def test_view_profile_alone_sees_the_page_without_its_buttons(setup, acme, bob):
    manage = Role.objects.get(client__realm=acme, client__client_id="account", name="manage-account")
    Role.objects.get(realm=acme, client=None, name="default-roles-acme").composites.remove(manage)
    plain = HttpClient()
    redirect_query(sign_in(plain, "bob", PASSWORD))
    http = HttpClient(enforce_csrf_checks=True)
    http.cookies = plain.cookies
    page = http.get(CONSOLE)
    text = page.content.decode()
    assert page.status_code == 200 and "bob@corp" in text
    assert "-idp-unlink" not in text and "-idp-link" not in text
    assert plain.post(CONSOLE, {"unlink": "corp"}).status_code == 404  # (no form here to take a CSRF token from)
    assert FederatedIdentity.objects.filter(user=bob).exists()
