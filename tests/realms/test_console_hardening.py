"""Issue 11 findings at the admin console: a cross-site GET does not change the current realm,
and the realm page never shows the stored SMTP password."""

import pytest
from django.urls import reverse

from realms.models import Realm, Role, User

from .test_admin import errors_of, read_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client):
    master = Realm.objects.get_or_create(name="master")[0]
    admin = User.objects.create(realm=master, username="root")
    admin.roles.add(Role.objects.get_or_create(realm=master, client=None, name="admin")[0])
    client.force_login(admin)
    return client


def _remembered(console):
    return console.session.get("admin_console_realm_id")


def test_cross_site_get_does_not_switch_the_realm(console):
    acme = Realm.objects.create(name="acme")
    evil = Realm.objects.create(name="evil")
    clients = reverse("admin:realms_client_changelist")
    console.get(f"{clients}?realm__id__exact={acme.pk}", HTTP_SEC_FETCH_SITE="same-origin")
    assert _remembered(console) == acme.pk
    # A link or image on another site (the browser says so) is not remembered ...
    console.get(f"{clients}?realm__id__exact={evil.pk}", HTTP_SEC_FETCH_SITE="cross-site")
    assert _remembered(console) == acme.pk
    console.get(f"{clients}?realm__id__exact={evil.pk}", HTTP_SEC_FETCH_SITE="same-site")
    assert _remembered(console) == acme.pk
    # ... nor from an old browser that only sends a Referer of another host.
    console.get(f"{clients}?realm__id__exact={evil.pk}", HTTP_REFERER="https://evil.example/page")
    assert _remembered(console) == acme.pk
    # Opening an object's page from another site does not switch either.
    evil_role = Role.objects.create(realm=evil, name="r")
    console.get(reverse("admin:realms_role_change", args=[evil_role.pk]), HTTP_SEC_FETCH_SITE="cross-site")
    assert _remembered(console) == acme.pk
    # The admin's own navigation (or a typed address) does.
    console.get(f"{clients}?realm__id__exact={evil.pk}", HTTP_SEC_FETCH_SITE="none")
    assert _remembered(console) == evil.pk


def test_smtp_password_is_masked_and_kept(console):
    acme = Realm.objects.create(name="acme", smtp_server={"host": "mail.example", "from": "idp@mail.example",
                                                         "auth": "true", "user": "mailer",
                                                         "password": "smtp-Secret-1"})
    url = reverse("admin:realms_realm_change", args=[acme.pk])
    page = console.get(url).content.decode()
    assert "smtp-Secret-1" not in page and "**********" in page
    # Posting the page back unchanged keeps the stored password.
    data = read_form(page, "realm_form")
    response = console.post(url, data)
    assert response.status_code == 302, errors_of(response)
    acme.refresh_from_db()
    assert acme.smtp_server["password"] == "smtp-Secret-1"
    # A new password replaces it.
    data["smtp_password"] = ["new-Secret-2"]
    assert console.post(url, data).status_code == 302
    acme.refresh_from_db()
    assert acme.smtp_server["password"] == "new-Secret-2"
