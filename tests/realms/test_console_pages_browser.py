"""Every page of the console, as an admin reads it in headless Chromium at 1280 and 390 px
(issue 29, decision 0065): each list, each "create" form and one object's page of every model the
admin site registers, signed in as the master realm's admin, in a realm with users, clients,
groups, roles, flows, events and sessions. Each page answers 200, fits the screen's width (a wide
table scrolls inside its own box), and shows no raw message key and no unformatted time.

The navigation is Keycloak's: its sections and names, in its order; the titles are its words."""
import re

import pytest
from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from realms.models import (
    AuthenticationFlow,
    AuthenticatorConfig,
    Client,
    ClientSession,
    ConsoleJob,
    Event,
    FederatedIdentity,
    Group,
    IdentityProvider,
    Organization,
    Realm,
    RealmOwned,
    RequiredActionProvider,
    Role,
    User,
    UserSession,
)
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, master_admin, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]

WIDTHS = (1280, 390)
FITS = "document.documentElement.scrollWidth <= window.innerWidth"
# The text a person reads, hidden tabs included; scripts and styles are no text, and a text area
# holds a stored value to edit, kept as stored (a built-in role's "${role_...}" description, as in
# Keycloak's form; the list shows it resolved).
TEXT = """() => { const body = document.body.cloneNode(true);
  body.querySelectorAll("script, style, template, noscript, textarea").forEach((el) => el.remove());
  return body.textContent; }"""
RAW_KEY = re.compile(r"\$\{|\b[a-z]+(?:[A-Z][a-z0-9]*)+(?:Message|Error)\b")
EPOCH = re.compile(r"(?<![\w.:-])\d{10,}(?![\w.:-])")
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
# Django's own rendering of a date field ("Nov. 28, 2026, 8:41 a.m."): a second format beside names.when's.
DJANGO_TIME = re.compile(r"\d{4}, (?:\d{1,2}(?::\d{2})? [ap]\.m\.|midnight|noon)")

# Pages of a list beyond its first view: the admin events' tab, the sub-flows.
# What sticks out past the screen's right edge (the innermost such elements), to say in a failure.
STICKING_OUT = """() => { const out = (el) => el.getBoundingClientRect().right > window.innerWidth + 1
    || (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === "visible");
  return Array.from(document.querySelectorAll("body *")).filter((el) => out(el)
    && !Array.from(el.children).some(out)).slice(0, 3).map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.className ? "." + String(el.className).split(" ").join(".") : "") + " "
    + JSON.stringify((el.textContent || "").trim().slice(0, 40))); }"""
MORE = {"realms.event": ("?kind__exact=admin",), "realms.authenticationflow": ("?top_level__exact=0",)}
MODELS = sorted(f"{m._meta.app_label}.{m._meta.model_name}" for m in admin.site._registry)


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20000)
    yield page
    context.close()


@pytest.fixture
def acme(transactional_db):
    """The master realm's admin ``root``, and a realm with something on every page."""
    root = master_admin(PASSWORD)
    master = root.realm
    realm = create_realm("acme", events_enabled=True, admin_events_enabled=True, organizations_enabled=True)
    alice = create_user(realm, "alice", email="alice@example.com", first_name="Alice", last_name="Liddell",
                        required_actions=["UPDATE_PASSWORD", "CONFIGURE_TOTP", "webauthn-register"])
    create_user(realm, "bob", email="bob@example.com")
    Role.objects.create(realm=realm, name="editor", description="Edits the catalogue")
    Group.objects.create(realm=realm, name="staff")
    Organization.objects.create(realm=realm, name="Acme Corporation", alias="acme-corp")
    partner = IdentityProvider.objects.create(realm=realm, alias="partner", provider_id="saml", display_name="Partner",
                                              config={"singleSignOnServiceUrl": "https://idp.partner.example/sso"})
    FederatedIdentity.objects.create(realm=realm, user=alice, identity_provider=partner, subject="p-123",
                                     user_name="alice@partner")
    AuthenticatorConfig.objects.create(realm=realm, alias="otp-condition", config={})
    account = Client.objects.get(realm=realm, client_id="account-console")
    now = timezone.now()
    user_session = UserSession.objects.create(realm=realm, user=alice, ip_address="192.0.2.10", started=now,
                                              last_refresh=now)
    ClientSession.objects.create(user_session=user_session, client=account)
    Event.objects.create(realm=realm, type="LOGIN", user_id=alice.pk, client_id="account-console",
                         session_id=user_session.pk, ip_address="192.0.2.10", details={"username": "alice"})
    Event.objects.create(realm=realm, type="LOGIN_ERROR", user_id=alice.pk, client_id="account-console",
                         ip_address="192.0.2.10", error="invalid_user_credentials")
    Event.objects.create(realm=realm, kind=Event.ADMIN, type="CREATE", user_id=root.pk, resource_type="USER",
                         resource_path=f"users/{alice.pk}", ip_address="192.0.2.1", details={"authRealmId": master.pk})
    ConsoleJob.objects.create(kind=ConsoleJob.KINDS[0][0], realm=realm, realm_name="acme", started_by=root,
                              status=ConsoleJob.DONE, progress=100, finished=now, result={"users": 2})
    return realm


def an_object(key, realm):
    """The object whose page the crawler opens for the model ``key``: the seeded one, else the
    realm's first, else none (a page with nothing to show)."""
    chosen = {"realms.realm": realm, "realms.user": User.objects.get(realm=realm, username="alice"),
              "realms.client": Client.objects.get(realm=realm, client_id="account-console"),
              "realms.authenticationflow": AuthenticationFlow.objects.get(realm=realm, alias="browser"),
              "realms.requiredactionprovider": RequiredActionProvider.objects.get(realm=realm,
                                                                                  alias="CONFIGURE_TOTP"),
              "realms.consolejob": ConsoleJob.objects.get()}
    if key in chosen:
        return chosen[key]
    model = admin.site._registry[next(m for m in admin.site._registry
                                      if f"{m._meta.app_label}.{m._meta.model_name}" == key)].model
    objects = model._default_manager.all()
    return (objects.filter(realm=realm) if issubclass(model, RealmOwned) else objects).first()


def read(page, url, tmp_path, name):
    """Open ``url`` at each width; what is wrong with it, one line each."""
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        response = page.goto(url)
        where = f"{name} at {width} px ({page.url})"
        if response is None or response.status != 200:
            problems.append(f"{where}: HTTP {response.status if response else 'none'}")
            continue
        page.screenshot(path=tmp_path / f"{name}-{width}.png", full_page=True)
        if not page.evaluate(FITS):
            wide = page.evaluate("document.documentElement.scrollWidth")
            problems.append(f"{where}: {wide} px wide, wider than the screen: {page.evaluate(STICKING_OUT)}")
        text = page.evaluate(TEXT)
        for label, pattern in (("raw message key", RAW_KEY), ("epoch number", EPOCH), ("ISO time", ISO_TIME),
                               ("Django's time format", DJANGO_TIME)):
            found = pattern.search(text)
            if found:
                problems.append(f"{where}: {label} {found.group(0)!r} in …{text[max(found.start() - 60, 0):found.end() + 60]!r}")
    return problems


@pytest.mark.parametrize("key", MODELS)
def test_every_page_of_the_model_reads_well_at_both_widths(page, live_server, acme, tmp_path, key):
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))  # work in acme
    app_label, model_name = key.split(".")
    changelist = base + reverse(f"admin:{app_label}_{model_name}_changelist")
    problems = read(page, changelist, tmp_path, f"{key}-list")
    for n, query in enumerate(MORE.get(key, ())):
        problems += read(page, changelist + query, tmp_path, f"{key}-list-{n}")
    page.goto(changelist)
    add = page.locator("#content-main .object-tools a.addlink")
    if add.count():  # the "create" form, when the admin is offered one
        problems += read(page, base + add.first.get_attribute("href"), tmp_path, f"{key}-add")
    obj = an_object(key, acme)
    if obj is not None:
        try:
            change = reverse(f"admin:{app_label}_{model_name}_change", args=[obj.pk])
        except NoReverseMatch:
            change = None
        if change:
            problems += read(page, base + change, tmp_path, f"{key}-object")
    assert not problems, "\n".join(problems)


def test_the_navigation_is_keycloaks(page, live_server, acme):
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD)
    page.goto(base + reverse("admin:realms_realm_change", args=[acme.pk]))  # work in acme (organizations on)
    page.goto(base + CONSOLE)
    sections = page.locator("#content-main .module")
    captions = [c.strip() for c in sections.locator("caption").all_text_contents()]
    assert captions == ["Manage", "Configure", "Server"]
    manage = sections.nth(0).locator("th[scope=row]").all_inner_texts()
    assert manage == ["Organizations", "Clients", "Client scopes", "Realm roles", "Users", "Groups", "Sessions",
                      "Events"]
    configure = sections.nth(1).locator("th[scope=row]").all_inner_texts()
    assert configure[:5] == ["Realm settings", "Keys", "Authentication", "Required actions", "Step settings"]
    assert {"LDAP providers", "Kerberos providers"} <= set(configure[5:])
    assert configure[5] == "Identity providers"  # Keycloak's place: after Authentication, before User federation
    text = page.locator("body").inner_text()
    assert "Periodic tasks" not in text and "Crontabs" not in text  # the LDAP providers' schedules are theirs
    # "Realm settings" opens the current realm's page; lists and forms say what Keycloak says.
    page.get_by_role("link", name="Realm settings").first.click()
    assert page.locator("h1").inner_text() == "Realm settings"
    page.goto(f"{base}{CONSOLE}realms/user/")
    assert page.locator("h1").inner_text() == "Users"
    assert page.title().startswith("Users |")
    page.locator("#content-main .object-tools a.addlink").click()
    assert page.locator("h1").inner_text() == "Create user"
    page.goto(base + reverse("admin:realms_user_change", args=[User.objects.get(username="alice").pk]))
    assert page.locator("h1").inner_text() == "User details"


def test_required_actions_flows_events_and_sessions_read_as_in_keycloak(page, live_server, acme):
    base = live_server.url
    sign_in_to_console(page, base, "root", PASSWORD)
    alice = User.objects.get(realm=acme, username="alice")
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(base + reverse("admin:realms_user_change", args=[alice.pk]))
    labels = page.locator("#id_required_actions label").all_inner_texts()
    assert {"Update Password", "Configure OTP", "Webauthn Register", "Terms and Conditions"} <= {x.strip() for x in labels}
    # A label is never broken inside a word at a phone's width: each word fits its line.
    for label in ("Update Password", "Configure OTP"):
        box = page.locator("#id_required_actions label", has_text=label).bounding_box()
        assert box["height"] < 2 * 24, label
    page.set_viewport_size({"width": 1280, "height": 900})

    # Flows: the top-level ones, "Used by" in Keycloak's words; sub-flows apart.
    page.goto(f"{base}{CONSOLE}realms/authenticationflow/")
    rows = {r.locator("th").inner_text(): r.locator("td.field-used_by").inner_text()
            for r in page.locator("#result_list tbody tr").all()}
    assert rows["browser"] == "Browser flow" and rows["direct grant"] == "Direct grant flow"
    assert "forms" not in rows  # browser's sub-flow
    page.goto(f"{base}{CONSOLE}realms/authenticationflow/?top_level__exact=0")
    assert "forms" in page.locator("#result_list").inner_text()

    # Events: user events first, with the user by name; admin events on their own tab.
    page.goto(f"{base}{CONSOLE}realms/event/")
    assert page.url.endswith("?kind__exact=user")
    headers = [h.strip() for h in page.locator("#result_list thead th").all_text_contents()]
    assert headers == ["Time", "Type", "User", "Client", "IP address", "Error"]
    assert "invalid_user_credentials" in page.locator("#result_list").inner_text()
    assert page.locator("#result_list").get_by_role("link", name="alice").count() == 2
    for header in ("User", "IP address", "Error"):  # on screen at 1280 px, not scrolled to
        box = page.locator("#result_list thead th", has_text=header).first.bounding_box()
        assert box["x"] + box["width"] <= 1280, header
    page.get_by_role("link", name="Admin events").click()
    headers = [h.strip() for h in page.locator("#result_list thead th").all_text_contents()]
    assert headers == ["Time", "Operation", "Resource type", "Resource path", "Admin user", "IP address"]
    assert "root" in page.locator("#result_list").inner_text()
    assert "LOGIN" not in page.locator("#result_list").inner_text()

    # Sessions: one page, the realm's, and "Sign out" ends one.
    page.goto(f"{base}{CONSOLE}realms/usersession/")
    row = page.locator("#result_list tbody tr")
    assert row.count() == 1 and "alice" in row.inner_text() and "account-console" in row.inner_text()
    assert re.search(r"\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2} UTC", row.inner_text())
    row.get_by_role("button", name="Sign out").click()
    page.wait_for_load_state()
    assert "Signed out a session of alice." in page.locator(".messagelist").inner_text()
    assert not UserSession.objects.filter(realm=acme).exists()
