"""The admin console (Django admin): who may sign in, one realm at a time, the forms that touch
secrets (passwords, client secrets, keys), and the admin events every change leaves behind.

Forms are submitted the way a browser does: the page is fetched, its form's fields are read
from the HTML (with their defaults), some are changed, and the whole form is posted back."""
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.hashers import make_password

from realms.data import keys
from realms.models import (
    Client,
    ClientScope,
    ClientScopeLink,
    Credential,
    Event,
    Group,
    Realm,
    RealmDefaultClientScope,
    RealmKey,
    Role,
    User,
)
from realms.users import storage
from tests.browser import CHROMIUM_ARGS, console_sign_in, sign_in_to_console
from tests.passwords import holds_password

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


@pytest.fixture(scope="module")
def password_hash():
    # Argon2id is slow on purpose: hash once per module, store the same hash for every user.
    return make_password(PASSWORD)


def with_password(user, encoded):
    Credential.objects.create(user=user, type=Credential.PASSWORD, secret_data=encoded)
    return user


@pytest.fixture
def master():
    return Realm.objects.get_or_create(name="master")[0]


def make_admin(master, username="root"):
    admin = User.objects.create(realm=master, username=username)
    admin.roles.add(Role.objects.get_or_create(realm=master, client=None, name="admin")[0])
    return admin


@pytest.fixture
def console(client, master):
    """A Django test client signed in as a master-realm admin."""
    client.force_login(make_admin(master))
    return client


@pytest.fixture
def acme():
    return Realm.objects.create(name="acme", admin_events_enabled=True, admin_events_details_enabled=True)


@pytest.fixture
def other():
    return Realm.objects.create(name="other")


# --- Reading and posting admin forms like a browser --------------------------------------------

class _FormReader(HTMLParser):
    """Collects the successful controls of one <form> (by id): what a browser would submit."""

    def __init__(self, form_id):
        super().__init__(convert_charrefs=True)
        self.form_id, self.inside, self.fields = form_id, False, []
        self._select = self._textarea = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside:
            return
        if tag == "input" and a.get("name") and a.get("type") not in ("submit", "button", "file"):
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value", "on")))
            else:
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select and "selected" in a:
            self.fields.append((self._select, a.get("value", "")))
        elif tag == "textarea":
            self._textarea = [a.get("name"), ""]

    def handle_data(self, data):
        if self._textarea is not None:
            self._textarea[1] += data

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            name, value = self._textarea
            # Browsers drop the one newline that follows <textarea>.
            self.fields.append((name, value[1:] if value.startswith("\n") else value))
            self._textarea = None
        elif tag == "form":
            self.inside = False


def read_form(html, form_id):
    reader = _FormReader(form_id)
    reader.feed(html)
    data = {}
    for name, value in reader.fields:
        data.setdefault(name, []).append(value)
    return data


def select_options(html, name):
    """The option values offered by <select name=...>."""
    match = re.search(rf'<select[^>]*name="{re.escape(name)}"[^>]*>(.*?)</select>', html, re.S)
    assert match, f"no select {name!r} on the page"
    return [v for v in re.findall(r'<option value="([^"]*)"', match.group(1)) if v]


def submit(client, url, form_id, changes=(), follow=True):
    """GET the page, keep its form's values, apply ``changes`` ({name: value or list}), POST."""
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    data = read_form(page.content.decode(), form_id)
    for name, value in dict(changes).items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value if isinstance(value, list) else [value]
    return client.post(url, data, follow=follow)


def errors_of(response):
    return re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode(), re.S)


def admin_events(realm, **filters):
    return list(Event.objects.filter(realm=realm, kind=Event.ADMIN, **filters).order_by("time"))


# --- Who may sign in ---------------------------------------------------------------------------

def test_only_admins_get_into_the_console(client, master, password_hash):
    with_password(make_admin(master, "root"), password_hash)
    with_password(User.objects.create(realm=master, username="plain"), password_hash)  # no admin role
    assert console_sign_in(client, "plain", PASSWORD).status_code == 302  # signed in to the realm...
    assert client.get("/admin/master/console/", follow=True).status_code == 403  # ...administering nothing
    client.post("/admin/master/console/logout/")

    response = console_sign_in(client, "root", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/admin/master/console/"
    assert client.get("/admin/master/console/").status_code == 200


def test_a_realm_user_named_like_the_admin_cannot_sign_in(client, master, acme, password_hash):
    with_password(make_admin(master, "root"), password_hash)
    twin = User.objects.create(realm=acme, username="root")
    storage.set_password(twin.realm, twin, "the-twins-own-password")
    twin.roles.add(Role.objects.create(realm=acme, name="admin"))
    response = console_sign_in(client, "root", "the-twins-own-password")
    assert response.status_code == 200 and "Invalid username or password." in response.content.decode()
    assert "_auth_user_id" not in client.session


# --- One realm at a time -----------------------------------------------------------------------

def test_lists_show_the_current_realm_only_and_remember_it(console, master, acme, other):
    Client.objects.create(realm=acme, client_id="acme-app")
    Client.objects.create(realm=other, client_id="other-app")

    page = console.get(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}").content.decode()
    assert "acme-app" in page and "other-app" not in page
    # Remembered in the session: the next list (of any kind) stays in acme.
    page = console.get("/admin/master/console/realms/client/").content.decode()
    assert "acme-app" in page and "other-app" not in page
    assert 'selected>acme</option>' in page  # the header's switcher shows it

    response = console.post("/admin/master/console/realms/realm/switch/",
                            {"realm": other.pk, "next": "/admin/master/console/realms/client/"})
    assert response.status_code == 302 and response["Location"] == "/admin/master/console/realms/client/"
    page = console.get("/admin/master/console/realms/client/").content.decode()
    assert "other-app" in page and "acme-app" not in page

    # An object's page belongs to its realm: opening it makes that realm the current one.
    acme_app = Client.objects.get(client_id="acme-app")
    page = console.get(f"/admin/master/console/realms/client/{acme_app.pk}/change/").content.decode()
    assert 'selected>acme</option>' in page and console.session["admin_console_realm_id"] == acme.pk

    # Never to another site.
    response = console.post("/admin/master/console/realms/realm/switch/", {"realm": acme.pk, "next": "https://evil.example/"})
    assert response["Location"] == "/admin/master/console/"
    assert console.get("/admin/master/console/realms/realm/switch/").status_code == 405


def test_new_objects_go_into_the_current_realm(console, acme, other):
    console.get(f"/admin/master/console/realms/role/?realm__id__exact={other.pk}")
    response = submit(console, "/admin/master/console/realms/role/add/", "role_form", {"name": "auditor"})
    assert not errors_of(response)
    assert Role.objects.get(name="auditor").realm == other
    # The same name again in the same realm is a form error, not a crash.
    response = submit(console, "/admin/master/console/realms/role/add/", "role_form", {"name": "auditor"}, follow=False)
    assert response.status_code == 200 and errors_of(response)
    # ... but fine in another realm.
    console.get(f"/admin/master/console/realms/role/?realm__id__exact={acme.pk}")
    submit(console, "/admin/master/console/realms/role/add/", "role_form", {"name": "auditor"})
    assert Role.objects.filter(name="auditor", realm=acme).exists()


def test_role_and_group_choices_are_limited_to_the_realm(console, acme, other):
    mine = Role.objects.create(realm=acme, name="reader")
    app = Client.objects.create(realm=acme, client_id="app")
    mine_client_role = Role.objects.create(realm=acme, client=app, name="viewer")
    theirs = Role.objects.create(realm=other, name="reader")
    Role.objects.create(realm=other, client=Client.objects.create(realm=other, client_id="app"), name="viewer")
    my_group = Group.objects.create(realm=acme, name="staff")
    Group.objects.create(realm=other, name="staff")
    scope = ClientScope.objects.create(realm=acme, name="profile")
    ClientScope.objects.create(realm=other, name="profile")
    user = User.objects.create(realm=acme, username="alice")

    page = console.get(f"/admin/master/console/realms/user/{user.pk}/change/").content.decode()
    assert set(select_options(page, "roles")) == {mine.pk, mine_client_role.pk}
    assert select_options(page, "groups") == [my_group.pk]
    page = console.get(f"/admin/master/console/realms/client/{app.pk}/change/").content.decode()
    assert set(select_options(page, "scope_roles")) == {mine.pk, mine_client_role.pk}
    assert select_options(page, "scope_links-__prefix__-client_scope") == [scope.pk]
    page = console.get(f"/admin/master/console/realms/role/{mine.pk}/change/").content.decode()
    assert select_options(page, "composites") == [mine_client_role.pk]  # not itself, not other's

    # A role of another realm posted anyway is refused.
    response = submit(console, f"/admin/master/console/realms/user/{user.pk}/change/", "user_form",
                      {"roles": [mine.pk, theirs.pk]}, follow=False)
    assert response.status_code == 200 and theirs.pk in "".join(errors_of(response))
    assert not user.roles.exists()


def test_a_group_cannot_be_moved_under_itself_or_its_subgroups(console, acme):
    top = Group.objects.create(realm=acme, name="top")
    sub = Group.objects.create(realm=acme, name="sub", parent=top)
    sibling = Group.objects.create(realm=acme, name="sibling")
    page = console.get(f"/admin/master/console/realms/group/{top.pk}/change/").content.decode()
    assert select_options(page, "parent") == [sibling.pk]
    assert sub.pk not in select_options(page, "parent")


# --- Realms ------------------------------------------------------------------------------------

def test_realm_created_in_the_console_has_the_built_ins(console):
    response = submit(console, "/admin/master/console/realms/realm/add/", "realm_form",
                      {"name": "shop", "display_name": "Shop", "admin_events_enabled": "on"})
    assert not errors_of(response), errors_of(response)
    realm = Realm.objects.get(name="shop")
    assert realm.display_name == "Shop" and realm.admin_events_enabled
    client_ids = set(Client.objects.filter(realm=realm).values_list("client_id", flat=True))
    assert {"account", "account-console", "admin-cli", "broker", "realm-management",
            "security-admin-console"} <= client_ids
    roles = set(Role.objects.filter(realm=realm, client=None).values_list("name", flat=True))
    assert {"offline_access", "uma_authorization", "default-roles-shop"} <= roles
    assert realm.default_role.name == "default-roles-shop"
    scopes = set(ClientScope.objects.filter(realm=realm).values_list("name", flat=True))
    assert {"profile", "email", "roles", "web-origins", "offline_access", "address", "phone", "acr",
            "basic"} <= scopes
    assert RealmKey.objects.filter(realm=realm, algorithm="RS256", status=RealmKey.ACTIVE).exists()
    # The console now works in the new realm, and the creation is an admin event in it.
    assert console.session["admin_console_realm_id"] == realm.pk
    assert [(e.type, e.resource_type) for e in admin_events(realm)] == [("CREATE", "REALM")]

    # Users and clients added there get what Keycloak gives them: the default role, the realm's
    # default client scopes, a service-account user when service accounts are on.
    submit(console, "/admin/master/console/realms/user/add/", "user_form", {"username": "Eve"})
    eve = User.objects.get(realm=realm, username="eve")
    assert list(eve.roles.all()) == [realm.default_role]
    response = submit(console, "/admin/master/console/realms/user/add/", "user_form", {"username": "EVE"}, follow=False)
    assert response.status_code == 200 and errors_of(response)  # the same name, whatever the case
    submit(console, "/admin/master/console/realms/client/add/", "client_form",
           {"client_id": "worker", "service_accounts_enabled": "on", "standard_flow_enabled": None})
    worker = Client.objects.get(realm=realm, client_id="worker")
    assert User.objects.get(service_account_client=worker).username == "service-account-worker"
    assert {"profile", "email", "roles", "web-origins", "acr", "basic"} <= set(
        worker.scope_links.filter(default=True).values_list("client_scope__name", flat=True))
    assert {"offline_access", "address", "phone"} <= set(
        worker.scope_links.filter(default=False).values_list("client_scope__name", flat=True))


def test_master_realm_cannot_be_deleted_or_renamed(console, master):
    page = console.get(f"/admin/master/console/realms/realm/{master.pk}/change/").content.decode()
    assert 'name="name"' not in page  # shown read-only
    assert console.post(f"/admin/master/console/realms/realm/{master.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Realm.objects.filter(name="master").exists()


def test_rotate_signing_key_action(console, acme):
    old = keys.generate_key(acme)
    response = console.post("/admin/master/console/realms/realm/", {"action": "rotate_signing_key",
                                                     "_selected_action": [acme.pk]}, follow=True)
    assert response.status_code == 200
    old.refresh_from_db()
    new = RealmKey.objects.get(realm=acme, status=RealmKey.ACTIVE)
    assert old.status == RealmKey.PASSIVE and new.priority > old.priority and new.kid != old.kid
    loaded = keys.realm_keys(acme)
    assert loaded.signer("RS256")[0] == new.kid and old.kid in loaded.by_kid  # old key still verifies
    assert new.kid in response.content.decode()
    events = [(e.type, e.resource_type, e.resource_path) for e in admin_events(acme)]
    assert events == [("CREATE", "COMPONENT", f"components/{new.pk}"),
                      ("UPDATE", "COMPONENT", f"components/{old.pk}")]


def test_realm_keys_listed_and_generated_without_private_key(console, acme):
    key = keys.generate_key(acme)
    page = console.get(f"/admin/master/console/realms/realmkey/?realm__id__exact={acme.pk}").content.decode()
    assert key.kid in page and "RS256" in page and "active" in page
    response = submit(console, "/admin/master/console/realms/realmkey/add/", "realmkey_form",
                      {"algorithm": "ES256", "priority": "50", "status": "passive"})
    assert not errors_of(response)
    added = RealmKey.objects.get(realm=acme, algorithm="ES256")
    assert added.status == "passive" and added.priority == 50
    page = console.get(f"/admin/master/console/realms/realmkey/{added.pk}/change/").content.decode()
    assert "PUBLIC KEY" in page and "PRIVATE KEY" not in page and added.private_key_encrypted not in page


# --- Clients -----------------------------------------------------------------------------------

def test_regenerate_client_secret(console, acme):
    app = Client(realm=acme, client_id="backend")
    app.set_secret("old-secret-value")
    app.save()
    old_digest = app.secret_digest
    page = console.get(f"/admin/master/console/realms/client/{app.pk}/change/").content.decode()
    assert "old-secret-value" not in page and old_digest not in page

    response = console.post(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}",
                            {"action": "regenerate_client_secret", "_selected_action": [app.pk]}, follow=True)
    shown = re.search(r"New client secret of backend: (\S+)", response.content.decode()).group(1)
    app.refresh_from_db()
    assert app.secret_digest != old_digest
    assert not app.check_secret("old-secret-value") and app.check_secret(shown)
    # Shown once: the next page does not carry it.
    assert shown not in console.get(f"/admin/master/console/realms/client/{app.pk}/change/").content.decode()
    assert [(e.type, e.resource_path) for e in admin_events(acme)] == [("ACTION", f"clients/{app.pk}/client-secret")]


def test_public_client_has_no_secret_to_regenerate(console, acme):
    spa = Client.objects.create(realm=acme, client_id="spa", public_client=True)
    response = console.post(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}",
                            {"action": "regenerate_client_secret", "_selected_action": [spa.pk]}, follow=True)
    assert "has no secret" in response.content.decode()
    spa.refresh_from_db()
    assert not spa.secret_digest and not admin_events(acme)


def test_client_added_in_console(console, acme):
    profile = ClientScope.objects.create(realm=acme, name="profile")
    phone = ClientScope.objects.create(realm=acme, name="phone")
    RealmDefaultClientScope.objects.create(realm=acme, client_scope=profile, default=True)
    RealmDefaultClientScope.objects.create(realm=acme, client_scope=phone, default=False)
    console.get(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}")
    response = submit(console, "/admin/master/console/realms/client/add/", "client_form", {
        "client_id": "shop",
        "redirect_uris": "https://shop.example/cb\r\n\r\nhttps://shop.example/cb2\r\n",
        "web_origins": "https://shop.example",
        "attributes-key": "pkce.code.challenge.method", "attributes-value": "S256",
        "protocol_mappers-TOTAL_FORMS": "1",
        "protocol_mappers-0-name": "audience",
        "protocol_mappers-0-protocol_mapper": "oidc-audience-mapper",
        "protocol_mappers-0-protocol": "openid-connect",
        "protocol_mappers-0-config": '{"included.client.audience": "api", "access.token.claim": "true"}',
        "roles-TOTAL_FORMS": "1",
        "roles-0-name": "buyer",
    })
    assert not errors_of(response), errors_of(response)
    shop = Client.objects.get(realm=acme, client_id="shop")
    assert shop.redirect_uris == ["https://shop.example/cb", "https://shop.example/cb2"]
    assert shop.web_origins == ["https://shop.example"] and shop.pkce_method == "S256"
    assert shop.protocol_mappers.get().config["included.client.audience"] == "api"
    assert Role.objects.get(client=shop, name="buyer").realm == acme
    # A confidential client gets a secret, shown once in the message.
    shown = re.search(r"Client secret of shop: (\S+)", response.content.decode()).group(1)
    assert shop.check_secret(shown)
    # The realm's default client scopes, as in Keycloak.
    assert {(link.client_scope.name, link.default) for link in shop.scope_links.all()} == {
        ("profile", True), ("phone", False)}
    events = {(e.type, e.resource_type) for e in admin_events(acme)}
    assert {("CREATE", "CLIENT"), ("CREATE", "PROTOCOL_MAPPER"), ("CREATE", "CLIENT_ROLE"),
            ("CREATE", "CLIENT_SCOPE_CLIENT_MAPPING")} <= events
    client_event = admin_events(acme, resource_type="CLIENT").pop()
    assert "shop.example/cb2" in client_event.representation
    assert shop.secret_digest not in client_event.representation and shop.secret_encrypted not in client_event.representation


# --- Users -------------------------------------------------------------------------------------

def test_set_password_through_the_console(console, acme):
    user = User.objects.create(realm=acme, username="alice")
    page = console.get(f"/admin/master/console/realms/user/{user.pk}/change/").content.decode()
    assert f"/admin/master/console/realms/user/{user.pk}/password/" in page and "No password" in page

    url = f"/admin/master/console/realms/user/{user.pk}/password/"
    response = console.post(url, {"new_password1": "n3w-Passw0rd", "new_password2": "typo"})
    assert response.status_code == 200 and errors_of(response)
    assert "n3w-Passw0rd" not in response.content.decode()  # never echoed back, even on an error
    assert not user.has_usable_password()

    response = console.post(url, {"new_password1": "n3w-Passw0rd", "new_password2": "n3w-Passw0rd",
                                  "temporary": "on"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert holds_password(user, "n3w-Passw0rd") and not holds_password(user, "typo")
    assert user.required_actions == ["UPDATE_PASSWORD"]
    credential = user.credentials.get(type=Credential.PASSWORD)
    assert credential.secret_data.startswith("argon2$argon2id$") and "n3w-Passw0rd" not in credential.secret_data
    assert [(e.type, e.resource_type, e.resource_path, e.representation) for e in admin_events(acme)] == [
        ("ACTION", "USER", f"users/{user.pk}/reset-password", "")]

    # Listed read-only by type and date; the hash never appears.
    page = console.get(f"/admin/master/console/realms/user/{user.pk}/change/").content.decode()
    assert "A password is set" in page and "password" in page and credential.secret_data not in page
    assert credential.secret_data.split("$")[-1] not in page


def test_user_changes_record_admin_events(console, acme, other):
    reader = Role.objects.create(realm=acme, name="reader")
    app = Client.objects.create(realm=acme, client_id="app")
    viewer = Role.objects.create(realm=acme, client=app, name="viewer")
    staff = Group.objects.create(realm=acme, name="staff")
    console.get(f"/admin/master/console/realms/user/?realm__id__exact={acme.pk}")

    response = submit(console, "/admin/master/console/realms/user/add/", "user_form",
                      {"username": "bob", "email": "bob@example.org"})
    assert not errors_of(response)
    bob = User.objects.get(realm=acme, username="bob")
    assert response.redirect_chain[-1][0] == f"/admin/master/console/realms/user/{bob.pk}/change/"

    submit(console, f"/admin/master/console/realms/user/{bob.pk}/change/", "user_form",
           {"roles": [reader.pk, viewer.pk], "groups": [staff.pk], "enabled": None})
    bob.refresh_from_db()
    assert not bob.enabled and set(bob.roles.all()) == {reader, viewer} and list(bob.groups.all()) == [staff]

    console.post(f"/admin/master/console/realms/user/{bob.pk}/delete/", {"post": "yes"})
    assert not User.objects.filter(pk=bob.pk).exists()

    got = [(e.type, e.resource_type, e.resource_path) for e in admin_events(acme)]
    assert got == [
        ("CREATE", "USER", f"users/{bob.pk}"),
        ("UPDATE", "USER", f"users/{bob.pk}"),
        ("CREATE", "REALM_ROLE_MAPPING", f"users/{bob.pk}/role-mappings/realm"),
        ("CREATE", "CLIENT_ROLE_MAPPING", f"users/{bob.pk}/role-mappings/clients/{app.pk}"),
        ("CREATE", "GROUP_MEMBERSHIP", f"users/{bob.pk}/groups/{staff.pk}"),
        ("DELETE", "USER", f"users/{bob.pk}"),
    ]
    events = admin_events(acme)
    assert '"username": "bob"' in events[0].representation and events[-1].representation == ""
    assert all(e.user_id for e in events)
    # Nothing stored in a realm that does not save admin events.
    carol = User.objects.create(realm=other, username="carol")
    submit(console, f"/admin/master/console/realms/user/{carol.pk}/change/", "user_form", {"email": "carol@example.org"})
    assert User.objects.get(pk=carol.pk).email == "carol@example.org" and not admin_events(other)


def test_disable_and_enable_users_actions(console, acme):
    users = [User.objects.create(realm=acme, username=n) for n in ("u1", "u2")]
    url = f"/admin/master/console/realms/user/?realm__id__exact={acme.pk}"
    console.post(url, {"action": "disable_users", "_selected_action": [u.pk for u in users]})
    assert not User.objects.filter(realm=acme, enabled=True).exists()
    console.post(url, {"action": "enable_users", "_selected_action": [users[0].pk]})
    assert list(User.objects.filter(realm=acme, enabled=True)) == [users[0]]
    assert [e.type for e in admin_events(acme)] == ["UPDATE", "UPDATE", "UPDATE"]


def test_deleting_a_credential_is_recorded(console, acme, password_hash):
    user = with_password(User.objects.create(realm=acme, username="dave"), password_hash)
    credential = user.credentials.get()
    submit(console, f"/admin/master/console/realms/user/{user.pk}/change/", "user_form", {"credentials-0-DELETE": "on"})
    assert not user.credentials.exists()
    assert [(e.type, e.resource_path) for e in admin_events(acme)] == [
        ("DELETE", f"users/{user.pk}/credentials/{credential.pk}"), ("UPDATE", f"users/{user.pk}")]


def test_client_link_inline_event_paths(console, acme):
    app = Client.objects.create(realm=acme, client_id="app", public_client=True)
    scope = ClientScope.objects.create(realm=acme, name="email")
    link = ClientScopeLink.objects.create(client=app, client_scope=scope, default=False)
    submit(console, f"/admin/master/console/realms/client/{app.pk}/change/", "client_form", {"scope_links-0-DELETE": "on"})
    assert not ClientScopeLink.objects.filter(pk=link.pk).exists()
    assert ("DELETE", f"clients/{app.pk}/optional-client-scopes/{scope.pk}") in [
        (e.type, e.resource_path) for e in admin_events(acme)]


# --- In a real browser -------------------------------------------------------------------------


@pytest.mark.browser
def test_bootstrap_admin_signs_in_with_chromium_and_sees_the_realms(live_server):
    from playwright.sync_api import sync_playwright

    from realms.representation.bootstrap import ensure_bootstrap_admin

    ensure_bootstrap_admin("ops", "bootstrap-pass-1")
    Realm.objects.create(name="acme", display_name="ACME Corp")
    # No database access below: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(15000)
            page.goto(f"{live_server.url}/admin/master/console/")
            assert "/realms/master/console-sign-in" in page.url  # the master realm's login page
            sign_in_to_console(page, live_server.url, "ops", "bootstrap-pass-1")
            page.locator('#content-main a[href="/admin/master/console/realms/realm/"]').first.click()
            page.wait_for_url(f"{live_server.url}/admin/master/console/realms/realm/")
            names = page.locator("#result_list th.field-name a").all_inner_texts()
            assert {"master", "acme"} <= set(names)
            assert page.locator("#realm-switcher-select option:checked").inner_text() == "master"
        finally:
            browser.close()


def test_realm_update_and_delete_events(console, acme):
    response = submit(console, f"/admin/master/console/realms/realm/{acme.pk}/change/", "realm_form", {
        "display_name": "ACME", "smtp_host": "127.0.0.1", "smtp_from": "idp@acme.example",
        "smtp_password": "smtp-pass"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.smtp_server["password"] == "smtp-pass"
    (update,) = admin_events(acme)
    assert (update.type, update.resource_type, update.resource_path) == ("UPDATE", "REALM", "")
    assert '"display_name": "ACME"' in update.representation and "smtp-pass" not in update.representation

    from realms.audit.events import realm_event

    seen = []

    def listener(sender, event, **kwargs):
        seen.append((event.realm.name, event.type, event.resource_type))

    realm_event.connect(listener)
    try:
        console.post(f"/admin/master/console/realms/realm/{acme.pk}/delete/", {"post": "yes"})
    finally:
        realm_event.disconnect(listener)
    assert not Realm.objects.filter(pk=acme.pk).exists()
    assert seen == [("acme", "DELETE", "REALM")]
