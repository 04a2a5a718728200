"""Enter in a field of a console page saves the page's object and does nothing else (issue 29,
decision 0062). The pages are taken from the admin site's registry: the add page and a seeded
object's change page of every model the admin may add or change. Headless Chromium at 1280 px
presses Enter in each named text, e-mail, number, URL and password field, tab by tab. Every press
must submit the object's form with its own save button: the browser's implicit submission is
watched (the submit event, its form and submitter, then stopped) so that all of a page's fields
are tried on one load, and no request may leave the page meanwhile. Then one press is let through:
it must end in a save (the success message, or the form shown again with its errors, in the
console). Nothing else may happen: no user session begins (impersonation) or ends (sign-out), no
e-mail reaches the SMTP sink (the realm's test e-mail), no confirmation is asked, the OTP device
and the consent stay, and no admin event but CREATE or UPDATE is recorded. The action buttons
still work from outside the object's form: "Sign out all sessions", once its confirmation is
accepted."""
import re

import pytest
from django.conf import settings
from django.contrib import admin
from django.test import Client as HttpClient
from django.test import RequestFactory
from django.urls import reverse
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from federation.ldap.api import add_default_mappers
from federation.models import LdapComponent
from oidc.models import ConsentGrant
from realms.models import (
    Client,
    ClientScope,
    Component,
    Credential,
    Event,
    Group,
    IdentityProvider,
    Organization,
    Realm,
    Role,
    UserSession,
)
from realms.representation.services import create_realm
from realms.sso.sessions import create_user_session, get_or_create_client_session
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (chromium: a fixture)
from tests.selfservice.conftest import mailbox, smtp_server, smtp_settings  # noqa: F401 (fixtures)
from webhooks import services as webhooks

from .test_admin import make_admin

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]

# The fields of the object's form in which Enter submits it, as the admin sees them: not a hidden
# tab's, nor the inlines' empty template rows. Left out: a disabled field (nobody types in it) and
# an input without a name, which is no field of the form (a two-list picker's filter box, where
# Enter picks the highlighted entry).
TEXT_FIELDS = """(form) => Array.from(form.elements).filter((el) => el.tagName === "INPUT" && el.name
  && ["text", "email", "number", "url", "password", "search", "tel"].includes(el.type)
  && !el.disabled && el.checkVisibility()).map((el) => [el.name,
  Array.from(form.elements).filter((other) => other.name === el.name).indexOf(el)])"""
# Watches the page's submissions: which form, by which button (its formaction, if any), then
# stops each, so that the next field is tried on the same page. Implicit submission clicks the
# form's default button first, so a button's own confirmation would still show (and be counted).
WATCH = """() => { window.submits = []; document.addEventListener("submit", (event) => {
  window.submits.push({own: event.target.matches("#content-main form[novalidate]"),
    formaction: event.submitter ? event.submitter.getAttribute("formaction") : null});
  event.preventDefault(); }, true); }"""
# Django's messages of a save, and the LDAP mapper page's ("Mapper username saved.").
SAVED = re.compile(r"was (changed|added) successfully|\bsaved\.")
CONSOLE = "/admin/master/console/"


@pytest.fixture
def world(smtp_settings):  # noqa: F811
    """Realm acme with one object of each kind the console edits, and what its actions would
    change: a user with a session (and a client session), an OTP device and a consent."""
    operator = make_admin(Realm.objects.get_or_create(name="master")[0])
    operator.email = "root@example.org"  # where the realm's test e-mail would go
    operator.save()
    realm = create_realm("acme")
    realm.admin_events_enabled = realm.organizations_enabled = True
    realm.smtp_server = smtp_settings
    realm.save()
    app = Client.objects.create(realm=realm, client_id="web-app", redirect_uris=["https://app.example/cb"])
    app.regenerate_secret()
    app.save()
    alice = create_user(realm, "alice", password="alice-pass-1", email="alice@example.org", first_name="Alice")
    get_or_create_client_session(create_user_session(realm, alice, ip_address="192.0.2.10"), app)
    Credential.objects.create(user=alice, type=Credential.OTP, secret_data="{}", user_label="phone")
    ConsentGrant.objects.create(realm=realm, user=alice, client=app,
                                scope_ids=[ClientScope.objects.get(realm=realm, name="profile").pk])
    org = Organization.objects.create(realm=realm, name="ACME Corp", alias="acme-corp")
    ldap = LdapComponent.objects.create(
        realm=realm, name="corp", provider_id="ldap", provider_type=Component.USER_STORAGE, parent_id=realm.pk,
        config={k: [v] for k, v in {
            "enabled": "true", "vendor": "other", "connectionUrl": "ldap://127.0.0.1:9", "authType": "simple",
            "bindDn": "cn=idp,dc=example,dc=org", "editMode": "READ_ONLY", "usersDn": "ou=people,dc=example,dc=org",
            "usernameLDAPAttribute": "uid", "rdnLDAPAttribute": "uid", "uuidLDAPAttribute": "entryUUID",
            "userObjectClasses": "inetOrgPerson", "searchScope": "1", "batchSizeForSync": "100",
            "fullSyncPeriod": "-1", "changedSyncPeriod": "-1", "priority": "0"}.items()})
    add_default_mappers(ldap)
    Component.objects.create(realm=realm, name="kerberos", provider_id="kerberos", provider_type=Component.USER_STORAGE,
                             parent_id=realm.pk, config={k: [v] for k, v in {
                                 "kerberosRealm": "EXAMPLE.ORG", "serverPrincipal": "HTTP/idp.example.org@EXAMPLE.ORG",
                                 "keyTab": "/etc/krb5.keytab", "editMode": "READ_ONLY", "enabled": "true",
                                 "priority": "0"}.items()})
    endpoint, _ = webhooks.create_endpoint(realm, "https://hooks.example/in", ["*"], description="audit")
    partner = IdentityProvider.objects.create(realm=realm, alias="partner", provider_id="saml", config={
        "singleSignOnServiceUrl": "https://idp.partner.example/sso", "syncMode": "IMPORT"})
    seeds = {Realm: realm, Client: app, type(alice): alice, Group: Group.objects.create(realm=realm, name="staff"),
             Role: Role.objects.create(realm=realm, name="reader", description="Reads"), Organization: org,
             LdapComponent: ldap, type(endpoint): endpoint, IdentityProvider: partner}
    return operator, realm, seeds


def _first_of(model, realm):
    rows = model._default_manager.order_by("pk")
    if any(f.name == "realm" for f in model._meta.fields):
        rows = rows.filter(realm=realm)
    return rows.first()


def _pages(model, operator, realm, seeds):
    """(what, url) of the model's pages with the object's form: its add page and a seeded object's
    change page, where the operator may add or change."""
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/")
    request.user, request._console_realm = operator, realm  # the console's current realm
    name = f"{model._meta.app_label}_{model._meta.model_name}"
    pages = [("add", reverse(f"admin:{name}_add"))] if model_admin.has_add_permission(request) else []
    obj = seeds.get(model) or _first_of(model, realm)
    if obj is None:
        assert not model_admin.has_change_permission(request), f"seed an object of {name} in world()"
    elif model_admin.has_change_permission(request, obj):
        pages.append((str(obj), reverse(f"admin:{name}_change", args=[obj.pk])))
    return pages


def _state(realm):
    """What an action other than saving would change."""
    return {"sessions": sorted(UserSession.objects.values_list("pk", flat=True)),
            "otp": Credential.objects.filter(type=Credential.OTP).count(),
            "consents": ConsentGrant.objects.count(),
            "other admin events": list(Event.objects.filter(kind=Event.ADMIN).exclude(type__in=["CREATE", "UPDATE"])
                                       .values_list("type", "resource_path"))}


def _signed_in(chromium, operator, base):
    """A 1280 px browser with the operator's console session (Django's own, as force_login makes it)."""
    http = HttpClient()
    http.force_login(operator)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": http.cookies[settings.SESSION_COOKIE_NAME].value,
                          "url": base}])
    page = context.new_page()
    page.set_default_timeout(15000)
    dialogs = {"seen": [], "accept": False}

    def answer(dialog):
        dialogs["seen"].append(dialog.message)
        dialog.accept() if dialogs["accept"] else dialog.dismiss()

    page.on("dialog", answer)
    return context, page, dialogs


def _open(page, url, tab):
    """The page as loaded, at ``tab``, its collapsed sections open; returns the object's form."""
    page.goto(url, wait_until="domcontentloaded")
    if tab:
        page.locator(f'#console-tabs button[data-tab="{tab}"]').click()
    form = page.locator("#content-main form[novalidate]")  # Django's change form
    form.evaluate("(form) => form.querySelectorAll('details').forEach((d) => { d.open = true; })")
    return form


def _cases():
    """One case per tab of each registered model's pages (their first tab also takes a page
    without tabs, such as an add page showing a few fields)."""
    for model, model_admin in admin.site._registry.items():
        for slug, _label in getattr(model_admin, "tabs", ()) or [(None, None)]:
            yield pytest.param(model, slug, id=f"{model._meta.label}-{slug}" if slug else model._meta.label)


@pytest.mark.parametrize("model, tab", list(_cases()))
def test_enter_in_any_field_saves_and_does_nothing_else(chromium, world, live_server, mailbox, model, tab):  # noqa: F811
    operator, realm, seeds = world
    home = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    first_tab = (getattr(admin.site._registry[model], "tabs", ()) or [(None, None)])[0][0]
    before = _state(realm)
    context, page, dialogs = _signed_in(chromium, operator, live_server.url)
    failures, sent = [], []

    def record(request):
        sent.append(request)

    try:
        page.goto(f"{live_server.url}{home}?realm__id__exact={realm.pk}")  # the add page adds into acme
        for what, url in _pages(model, operator, realm, seeds):
            url = live_server.url + url
            page.goto(url, wait_until="domcontentloaded")
            assert page.url.split("#")[0] == url, f"{what}: not shown ({page.url})"
            shown_tabs = page.locator("#console-tabs button").evaluate_all("(bs) => bs.map((b) => b.dataset.tab)")
            if tab not in shown_tabs and (shown_tabs or tab != first_tab):
                continue
            form = page.locator("#content-main form[novalidate]")  # the object's (Django's change form)
            fields = _open(page, url, tab if shown_tabs else None).evaluate(TEXT_FIELDS)
            page.evaluate(WATCH)
            sent.clear()
            page.on("request", record)  # nothing may leave the page while its submissions are stopped
            for name, nth in fields:
                form.locator(f'input[name="{name}"]').nth(nth).press("Enter")
                submits = page.evaluate("() => window.submits.splice(0)")
                if submits != [{"own": True, "formaction": None}] or dialogs["seen"]:
                    failures.append(f"{what}: Enter in {name}: submitted {submits}, asked {dialogs['seen']}")
                    dialogs["seen"] = []
            page.remove_listener("request", record)
            if sent:
                failures.append(f"{what}: Enter sent {[request.url for request in sent]}")
            if not fields:
                continue
            # One press let through: the save itself, and nothing besides.
            name, nth = fields[0]
            _open(page, url, tab if shown_tabs else None)
            try:
                with page.expect_navigation(timeout=5000, wait_until="domcontentloaded"):
                    form.locator(f'input[name="{name}"]').nth(nth).press("Enter")
            except PlaywrightTimeout:
                failures.append(f"{what}: Enter in {name}: nothing was submitted")
                continue
            shown = " ".join(page.locator("ul.messagelist li").all_inner_texts())
            saved = SAVED.search(shown) or page.locator(".errornote").count()
            where = page.url.removeprefix(live_server.url)
            now = _state(realm)
            if not saved or not where.startswith(CONSOLE) or dialogs["seen"] or now != before or mailbox.messages:
                failures.append(f"{what}: Enter in {name}: at {where}, {shown or 'no message'}, asked "
                                f"{dialogs['seen']}, {len(mailbox.messages)} e-mails, {before} -> {now}")
                before, dialogs["seen"] = now, []
                mailbox.clear()
    finally:
        context.close()
    assert not failures, "\n".join(failures)


def test_the_action_buttons_post_their_own_form(chromium, world, live_server):
    """Outside the object's form, a button still posts its action, with its own form's CSRF token,
    once its confirmation is accepted."""
    operator, realm, seeds = world
    alice = seeds[type(operator)]
    context, page, dialogs = _signed_in(chromium, operator, live_server.url)
    dialogs["accept"] = True
    try:
        page.goto(live_server.url + reverse("admin:realms_user_change", args=[alice.pk]) + "#sessions")
        with page.expect_navigation():
            page.get_by_role("button", name="Sign out all sessions").click()
        assert dialogs["seen"] == ["Sign out every session now? Tokens issued before now stop working."]
        assert "Signed out every session of alice." in page.locator("ul.messagelist").inner_text()
    finally:
        context.close()
    assert not UserSession.objects.filter(user=alice).exists()
