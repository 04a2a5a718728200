"""An organization's invitations end to end (Keycloak 26's ``members/invite-user`` and
``invite-existing-user``): the ``org-invite`` e-mail through a real SMTP server, its ``ORGIVT``
link letting someone new register (the address fixed) or an existing user join, once, within the
realm's lifespan for links sent by an administrator."""
import time
from urllib.parse import urlencode

import pytest
from django.test import Client as HttpClient

from realms.models import Event, Organization, OrganizationDomain, OrganizationMember, User
from realms.signin.flows import get_authenticator
from tests.oidc.browser.conftest import PASSWORD

from .conftest import link_in, text_of
from .test_reset_and_registration import AUTH, PARAMS, form_action, html, redirect_query

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(realm):
    realm.organizations_enabled = True
    realm.action_token_generated_by_admin_lifespan = 600
    realm.admin_events_enabled = True
    realm.save()
    return Organization.objects.create(realm=realm, name="ACME Corp", alias="acme-corp",
                                       redirect_url="https://acme.example/welcome")


def invite(admin_api, org, path, send, **form):
    with send(execute=True):
        return admin_api.client.post(f"/admin/realms/acme/organizations/{org.pk}/members/{path}", urlencode(form),
                                     content_type="application/x-www-form-urlencoded")


def local(url):
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def test_someone_new_registers_through_the_link_and_is_a_member(realm, org, admin_api, mailbox,
                                                                django_capture_on_commit_callbacks):
    resp = invite(admin_api, org, "invite-user", django_capture_on_commit_callbacks,
                  email="newbie@acme.example", firstName="New", lastName="Person")
    assert resp.status_code == 204, resp.content
    message, = mailbox.wait()
    assert message["Subject"] == "Invitation to join the ACME Corp organization"
    assert 'Hi, "New" "Person".' in text_of(message) and "10 minutes" in text_of(message)
    http = HttpClient()
    page = http.get(local(link_in(message)))  # registration is off for everyone else
    assert page.status_code == 200 and 'id="kc-register-form"' in html(page)
    assert 'value="newbie@acme.example"' in html(page) and "readonly" in html(page)
    done = http.post(form_action(page), {"username": "newbie", "email": "other@evil.example", "firstName": "New",
                                         "lastName": "Person", "password": "Newbie-pass-1",
                                         "password-confirm": "Newbie-pass-1"})
    assert done.status_code == 200, html(done)
    user = User.objects.get(realm=realm, username="newbie")
    assert (user.email, user.email_verified) == ("newbie@acme.example", True)
    assert OrganizationMember.objects.filter(organization=org, user=user, membership_type="UNMANAGED").exists()
    assert Event.objects.filter(realm=realm, type="INVITE_ORG", user_id=user.pk).exists()
    # The link is used up: a second registration through it is refused (even with the address free again).
    user.delete()
    again = HttpClient()
    page = again.get(local(link_in(message)))
    refused = again.post(form_action(page), {"username": "second", "firstName": "S", "lastName": "S",
                                             "password": "Second-pass-1", "password-confirm": "Second-pass-1"})
    assert refused.status_code == 400 and "Action expired." in html(refused)
    assert not User.objects.filter(realm=realm, username="second").exists()
    admin = Event.objects.filter(realm=realm, resource_type="ORGANIZATION_MEMBERSHIP").get()
    assert (admin.type, admin.resource_path) == ("ACTION", f"organizations/{org.pk}/members/invite-user")


def test_an_existing_user_joins_once(realm, org, bob, admin_api, mailbox, django_capture_on_commit_callbacks):
    assert invite(admin_api, org, "invite-existing-user", django_capture_on_commit_callbacks,
                  id=bob.pk).status_code == 204
    message, = mailbox.wait()
    assert 'Hi, "Bob" "Builder".' in text_of(message)
    http = HttpClient()
    page = http.get(local(link_in(message)))
    assert "You were invited to join the ACME Corp organization." in html(page)
    assert not OrganizationMember.objects.filter(user=bob).exists()  # a GET (a mail scanner) joins no one
    joined = http.post(form_action(page))
    assert (joined.status_code, joined["Location"]) == (302, "https://acme.example/welcome")
    assert OrganizationMember.objects.filter(organization=org, user=bob).exists()
    OrganizationMember.objects.filter(user=bob).delete()
    reused = HttpClient().post(form_action(page))
    assert reused.status_code == 400 and not OrganizationMember.objects.filter(user=bob).exists()


def test_an_expired_link_is_refused(realm, org, bob, admin_api, mailbox, django_capture_on_commit_callbacks,
                                    time_machine):
    invite(admin_api, org, "invite-user", django_capture_on_commit_callbacks, email="carl@acme.example",
           firstName="Carl")
    message, = mailbox.wait()
    assert "Hi," not in text_of(message)  # not personalized without both names
    time_machine.move_to(time.time() + 601)
    page = HttpClient().get(local(link_in(message)))
    assert page.status_code == 400 and "Action expired." in html(page)


def test_invitation_errors_are_keycloaks(realm, org, bob, admin_api, django_capture_on_commit_callbacks):
    def refused(path, status, body, **form):
        resp = invite(admin_api, org, path, django_capture_on_commit_callbacks, **form)
        assert (resp.status_code, resp.json()) == (status, body)

    refused("invite-user", 400, {"errorMessage": "To invite a member you need to provide an email and/or username"})
    refused("invite-existing-user", 400, {"error": "To invite a member you need to provide the user id"})
    refused("invite-existing-user", 400, {"errorMessage": "User does not exist"}, id="nobody")
    OrganizationMember.objects.create(organization=org, user=bob)
    refused("invite-user", 409, {"errorMessage": "User already a member of the organization"}, email="bob@example.com")
    realm.smtp_server = {}
    realm.save()
    refused("invite-user", 500, {"errorMessage": "Failed to send invite email"}, email="x@acme.example")


def test_the_organization_step_skips_no_factor(realm, org, web_app, bob):
    """Organizations on and bob a member of an organization with his domain: the browser flow's
    organization step asks for the username first (identity-first) and, no identity provider
    applying, passes the sign-in on to the password form (tests/realms/test_organization_idp_login.py)."""
    assert get_authenticator("organization").display_name == "Organization Identity-First Login"
    OrganizationDomain.objects.create(realm=realm, organization=org, name="example.com")
    OrganizationMember.objects.create(organization=org, user=bob)
    http = HttpClient()
    first = http.get(AUTH, PARAMS)
    assert 'id="kc-form-login"' in html(first) and 'name="password"' not in html(first)
    page = http.post(form_action(first), {"username": "bob"})
    assert 'id="kc-form-login"' in html(page) and 'name="password"' in html(page)
    wrong = http.post(form_action(page), {"username": "bob", "password": "not-his"})
    assert wrong.status_code == 200 and "code=" not in wrong.get("Location", "")
    assert "code" in redirect_query(http.post(form_action(wrong), {"username": "bob", "password": PASSWORD}))
