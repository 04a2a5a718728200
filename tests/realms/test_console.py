"""The console as a newcomer meets it: settings as validated forms instead of JSON, names from the
message bundle, sessions that really end when signed out (a refresh token from them is refused),
consents, effective roles, resetting OTP, and impersonation recorded as Keycloak records it."""
import pytest
from django.test import Client as HttpClient
from django.urls import reverse

from realms.models import Client, ClientScope, Credential, Event, Realm, Role, User, UserSession
from realms.representation.services import create_realm
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user

from .test_admin import errors_of, make_admin, read_form, submit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]

PASSWORD = "console-user-pass-1"
TOKEN = "/realms/acme/protocol/openid-connect/token"


@pytest.fixture
def master():
    return Realm.objects.get_or_create(name="master")[0]


@pytest.fixture
def console(client, master):
    client.force_login(make_admin(master))
    return client


@pytest.fixture
def acme():
    realm = create_realm("acme")
    realm.events_enabled = True
    realm.admin_events_enabled = True
    realm.save()
    return realm


@pytest.fixture
def app(acme):
    client = Client.objects.create(realm=acme, client_id="web-app", direct_access_grants_enabled=True,
                                   redirect_uris=["https://app.example/cb"])
    client.secret = client.regenerate_secret()
    client.save()
    return client


@pytest.fixture
def alice(acme):
    return create_user(acme, "alice", password=PASSWORD, email="alice@example.org")


def realm_url(realm):
    return reverse("admin:realms_realm_change", args=[realm.pk])


def user_url(user):
    return reverse("admin:realms_user_change", args=[user.pk])


def refresh_token(app):
    response = HttpClient().post(TOKEN, {"grant_type": "password", "username": "alice", "password": PASSWORD,
                                         "client_id": app.client_id, "client_secret": app.secret})
    assert response.status_code == 200, response.content
    return response.json()["refresh_token"]


def refresh(app, token):
    return HttpClient().post(TOKEN, {"grant_type": "refresh_token", "refresh_token": token,
                                     "client_id": app.client_id, "client_secret": app.secret})


# --- Realm settings as forms -------------------------------------------------------------------

def test_realm_settings_forms_store_keycloaks_keys(console, acme):
    response = submit(console, realm_url(acme), "realm_form", {
        "smtp_host": "mail.acme.example", "smtp_port": "587", "smtp_from": "idp@acme.example", "smtp_starttls": "on",
        "smtp_auth": "on", "smtp_user": "mailer", "smtp_password": "smtp-Secret-1",
        "otp_algorithm": "HmacSHA256", "otp_digits": "8", "otp_period": "60",
        "webauthn_rp_entity_name": "ACME", "webauthn_signature_algorithms": ["ES256", "Ed25519"],
        "passwordless_user_verification": "required",
        "header_xFrameOptions": "DENY", "header_contentSecurityPolicy": "frame-ancestors 'none'",
        "internationalization_enabled": "on", "supported_locales": ["en"], "default_locale": "en",
        "localization_texts": "en:loginTitle=Welcome to {0}",
        "enabled_event_types": ["LOGIN", "LOGIN_ERROR"],
    })
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.smtp_server == {"host": "mail.acme.example", "port": "587", "from": "idp@acme.example",
                                "ssl": "false", "starttls": "true", "auth": "true", "user": "mailer",
                                "password": "smtp-Secret-1"}
    assert acme.otp_policy["otpPolicyAlgorithm"] == "HmacSHA256" and acme.otp_policy["otpPolicyDigits"] == 8
    assert acme.otp_policy["otpPolicyPeriod"] == 60 and acme.otp_policy["otpPolicyCodeReusable"] is False
    assert acme.webauthn_policy["webAuthnPolicyRpEntityName"] == "ACME"
    assert acme.webauthn_policy["webAuthnPolicySignatureAlgorithms"] == ["ES256", "Ed25519"]
    assert acme.webauthn_policy["webAuthnPolicyPasswordlessUserVerificationRequirement"] == "required"
    assert acme.browser_security_headers["xFrameOptions"] == "DENY"
    assert acme.browser_security_headers["contentSecurityPolicy"] == "frame-ancestors 'none'"
    assert acme.localization_texts == {"en": {"loginTitle": "Welcome to {0}"}}
    assert acme.enabled_event_types == ["LOGIN", "LOGIN_ERROR"]
    # The page shows the forms, not JSON text areas, and never the stored SMTP password.
    page = console.get(realm_url(acme)).content.decode()
    assert 'name="smtp_server"' not in page and 'name="otp_policy"' not in page
    assert "smtp-Secret-1" not in page


@pytest.mark.parametrize("changes, field, message", [
    ({"smtp_host": "mail.example", "smtp_from": ""}, "smtp_from", "give the From address"),
    ({"smtp_host": "mail.example", "smtp_from": "not-an-address"}, "smtp_from", "valid email"),
    ({"smtp_port": "70000"}, "smtp_port", "less than or equal to 65535"),
    ({"smtp_ssl": "on", "smtp_starttls": "on", "smtp_host": "h", "smtp_from": "a@b.example"}, "smtp_starttls",
     "not both"),
    ({"smtp_auth": "on", "smtp_user": ""}, "smtp_user", "needs a username"),
    ({"otp_digits": "7"}, "otp_digits", "Select a valid choice"),
    ({"otp_period": "0"}, "otp_period", "greater than or equal to 1"),
    ({"webauthn_signature_algorithms": None}, "webauthn_signature_algorithms", "at least one"),
    ({"header_xFrameOptions": "ALLOWALL"}, "header_xFrameOptions", "DENY, SAMEORIGIN"),
    ({"header_strictTransportSecurity": "forever"}, "header_strictTransportSecurity", "max-age"),
    ({"header_referrerPolicy": "sometimes"}, "header_referrerPolicy", "Not a referrer policy"),
    ({"internationalization_enabled": "on", "supported_locales": None}, "supported_locales", "at least one locale"),
    ({"localization_texts": "loginTitle=Hello"}, "localization_texts", "write locale:key=text"),
    ({"enabled_event_types": ["NO_SUCH_EVENT"]}, "enabled_event_types", "Select a valid choice"),
])
def test_realm_settings_forms_refuse_bad_values_with_a_clear_message(console, acme, changes, field, message):
    before = Realm.objects.get(pk=acme.pk)
    response = submit(console, realm_url(acme), "realm_form", changes)
    form = response.context["adminform"].form
    assert field in form.errors, form.errors
    assert message in " ".join(form.errors[field]), form.errors[field]
    acme.refresh_from_db()
    assert (acme.smtp_server, acme.otp_policy, acme.browser_security_headers) == (
        before.smtp_server, before.otp_policy, before.browser_security_headers)


def test_controls_for_what_does_not_exist_are_not_shown(console, acme, alice):
    page = console.get(realm_url(acme)).content.decode()
    for name in ("events_listeners", "first_broker_login_flow", "docker_authentication_flow"):
        assert f'name="{name}"' not in page, name
    assert 'name="organizations_enabled"' in page  # organizations exist (docs/decisions/0037)
    client = Client.objects.get(realm=acme, client_id="account")
    page = console.get(reverse("admin:realms_client_change", args=[client.pk])).content.decode()
    assert 'name="authorization_services_enabled"' in page  # Authorization Services exist (decision 0092)


# --- Clients -----------------------------------------------------------------------------------

def test_protocol_and_authenticator_are_choices_and_saml_clients_show_no_oidc_fields(console, acme, app):
    page = console.get(reverse("admin:realms_client_change", args=[app.pk])).content.decode()
    assert 'name="public_client"' in page and 'name="saml_encrypt"' not in page
    assert '<select name="client_authenticator_type"' in page and '<select name="protocol"' in page
    saml = Client.objects.create(realm=acme, client_id="https://sp.example/saml", protocol="saml")
    page = console.get(reverse("admin:realms_client_change", args=[saml.pk])).content.decode()
    assert 'name="saml_encrypt"' in page
    for oidc_only in ("public_client", "client_authenticator_type", "standard_flow_enabled", "web_origins"):
        assert f'name="{oidc_only}"' not in page, oidc_only
    response = submit(console, reverse("admin:realms_client_change", args=[app.pk]), "client_form",
                      {"client_authenticator_type": "client-x509-unknown"})
    assert "client_authenticator_type" in response.context["adminform"].form.errors


def test_display_names_are_resolved_through_the_message_bundle(console, acme):
    page = console.get(reverse("admin:realms_client_changelist") + f"?realm__id__exact={acme.pk}").content.decode()
    assert "Account Console" in page and "${client_account-console}" not in page
    page = console.get(reverse("admin:realms_role_changelist") + f"?realm__id__exact={acme.pk}").content.decode()
    assert "Offline access" in page and "${role_offline-access}" not in page


# --- Sessions ----------------------------------------------------------------------------------

def test_signing_out_one_session_refuses_its_refresh_token(console, acme, app, alice):
    token = refresh_token(app)
    (user_session,) = UserSession.objects.filter(user=alice)
    page = console.get(user_url(alice)).content.decode()
    assert reverse("admin:realms_realm_signout_session", args=[user_session.pk]) in page
    assert "web-app" in page  # the session's clients are listed
    response = console.post(reverse("admin:realms_realm_signout_session", args=[user_session.pk]) + "?tab=sessions",
                            HTTP_REFERER=f"http://testserver{user_url(alice)}")
    assert response.status_code == 302 and response["Location"].endswith(f"{user_url(alice)}#sessions")
    assert not UserSession.objects.filter(pk=user_session.pk).exists()
    assert refresh(app, token).json()["error"] == "invalid_grant"
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_type="USER_SESSION", type="DELETE").exists()


def test_log_out_all_ends_every_session_and_moves_not_before(console, acme, app, alice):
    token = refresh_token(app)
    page = console.get(realm_url(acme)).content.decode()
    assert "alice" in page and reverse("admin:realms_realm_logout_all", args=[acme.pk]) in page
    assert console.get(reverse("admin:realms_realm_logout_all", args=[acme.pk])).status_code == 405
    console.post(reverse("admin:realms_realm_logout_all", args=[acme.pk]))
    acme.refresh_from_db()
    assert acme.not_before > 0 and not UserSession.objects.filter(realm=acme).exists()
    assert refresh(app, token).json()["error"] == "invalid_grant"
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="ACTION", resource_path="logout-all").exists()


def test_user_sign_out_all_ends_the_users_sessions(console, acme, app, alice):
    token = refresh_token(app)
    console.post(reverse("admin:realms_user_logout", args=[alice.pk]))
    alice.refresh_from_db()
    assert alice.not_before > 0 and not UserSession.objects.filter(user=alice).exists()
    assert refresh(app, token).json()["error"] == "invalid_grant"


def test_client_page_lists_the_clients_sessions(console, app, alice):
    refresh_token(app)
    page = console.get(reverse("admin:realms_client_change", args=[app.pk])).content.decode()
    assert "alice" in page and "Sign out" in page


# --- Consents, effective roles, credentials ------------------------------------------------------

def test_consents_are_listed_and_revocable(console, acme, app, alice):
    from oidc.models import ConsentGrant

    profile = ClientScope.objects.get(realm=acme, name="profile")
    ConsentGrant.objects.create(realm=acme, user=alice, client=app, scope_ids=[profile.pk])
    page = console.get(user_url(alice)).content.decode()
    revoke = reverse("admin:realms_user_revoke_consent", args=[alice.pk, app.pk])
    assert "profile" in page and revoke in page
    console.post(revoke)
    assert not ConsentGrant.objects.filter(user=alice).exists()
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="DELETE",
                                resource_path=f"users/{alice.pk}/consents/web-app").exists()


def test_effective_roles_expand_groups_and_composites(console, acme, alice):
    inner = Role.objects.create(realm=acme, name="reader", description="${role_view-profile}")
    outer = Role.objects.create(realm=acme, name="editor")
    outer.composites.add(inner)
    alice.roles.add(outer)
    page = console.get(user_url(alice)).content.decode()
    section = page.split("Effective roles", 1)[1]
    assert "editor" in section and "reader" in section and "View profile" in section


def test_reset_otp_removes_the_devices_and_asks_for_a_new_one(console, acme, alice):
    Credential.objects.create(user=alice, type=Credential.OTP, secret_data="{}", user_label="phone")
    assert "Reset OTP" in console.get(user_url(alice)).content.decode()
    console.post(reverse("admin:realms_user_reset_otp", args=[alice.pk]))
    alice.refresh_from_db()
    assert not alice.credentials.filter(type=Credential.OTP).exists()
    assert alice.credentials.filter(type=Credential.PASSWORD).exists()
    assert "CONFIGURE_TOTP" in alice.required_actions


def test_user_form_offers_the_known_required_actions(console, alice):
    response = submit(console, user_url(alice), "user_form", {"required_actions": ["CONFIGURE_TOTP"]})
    assert not errors_of(response), errors_of(response)
    alice.refresh_from_db()
    assert alice.required_actions == ["CONFIGURE_TOTP"]
    response = submit(console, user_url(alice), "user_form", {"required_actions": ["MAKE_COFFEE"]})
    assert "required_actions" in response.context["adminform"].form.errors


# --- Impersonation -----------------------------------------------------------------------------

def test_impersonation_from_the_console_opens_a_marked_session_and_records_the_event(console, master, acme, alice):
    response = console.post(reverse("admin:realms_user_impersonate", args=[alice.pk]))
    assert response.status_code == 302 and response["Location"] == "/realms/acme/account"
    cookie = response.cookies["SERVICE_IDENTITY"]
    assert cookie["path"] == "/realms/acme/" and cookie["httponly"]
    (user_session,) = UserSession.objects.filter(user=alice)
    impersonator_id = User.objects.get(realm=master, username="root").pk
    assert user_session.notes["IMPERSONATOR_ID"] == impersonator_id
    assert user_session.notes["IMPERSONATOR_USERNAME"] == "root"
    (event,) = Event.objects.filter(realm=acme, type="IMPERSONATE")
    assert event.user_id == alice.pk and event.session_id == user_session.pk
    assert event.details == {"impersonator_realm": "master", "impersonator": "root",
                             "impersonator_id": impersonator_id}
    # The session is told apart in the console's lists.
    assert "impersonated by root" in console.get(user_url(alice)).content.decode()


def test_impersonation_admin_api_needs_the_impersonation_role(acme, alice):
    from .test_admin_rest_api import Api, token

    manager = create_user(acme, "helpdesk", password="api-admin-password-1")
    management = Client.objects.get(realm=acme, client_id="realm-management")
    manager.roles.add(Role.objects.get(realm=acme, client=management, name="view-users"))
    path = f"acme/users/{alice.pk}/impersonation"
    assert Api(token("acme", "helpdesk"))("post", path).status_code == 403
    manager.roles.add(Role.objects.get(realm=acme, client=management, name="impersonation"))
    response = Api(token("acme", "helpdesk"))("post", path)
    assert response.status_code == 200, response.content
    assert response.json() == {"sameRealm": True, "redirect": "http://testserver/realms/acme/account"}
    assert "SERVICE_IDENTITY" in response.cookies
    event = Event.objects.get(realm=acme, type="IMPERSONATE")
    assert event.details["impersonator"] == "helpdesk" and event.details["impersonator_id"] == manager.pk
    alice.enabled = False
    alice.save()
    refused = Api(token("acme", "helpdesk"))("post", path)
    assert refused.status_code == 400 and refused.json() == {"errorMessage": "User is disabled"}


def test_buttons_only_answer_post(console, alice):
    for name in ("realms_user_impersonate", "realms_user_reset_otp", "realms_user_logout"):
        assert console.get(reverse(f"admin:{name}", args=[alice.pk])).status_code == 403


def test_read_form_helper_sees_the_tabs(console, acme):
    page = console.get(realm_url(acme)).content.decode()
    assert 'id="console-tabs"' in page and "tab-security" in page
    assert read_form(page, "realm_form")["otp_type"] == ["totp"]


# --- In Chromium at 1280 px --------------------------------------------------------------------

# The page, and each table and form shown: wider than the window (or its own box, when it scrolls
# inside one) is listed.
WIDER_THAN_THE_WINDOW = """() => {
  const wide = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) wide.push(`page ${root.scrollWidth} > ${root.clientWidth}`);
  for (const el of document.querySelectorAll("table, form, fieldset")) {
    const box = el.getBoundingClientRect();
    if (!box.width) continue;  // a hidden tab's
    const label = `${el.tagName.toLowerCase()}#${el.id || el.className || el.getAttribute("name") || ""}`;
    if (box.left < 0 || box.right > root.clientWidth + 1) wide.push(`${label} spans ${box.left}..${box.right}`);
    if (el.scrollWidth > el.clientWidth + 1) wide.push(`${label} scrolls ${el.scrollWidth} > ${el.clientWidth}`);
  }
  return wide;
}"""

@pytest.mark.browser
def test_realm_client_and_user_pages_fit_1280_pixels_in_every_tab(live_server, tmp_path):
    from playwright.sync_api import sync_playwright

    from realms.representation.bootstrap import ensure_bootstrap_admin
    from tests.browser import CHROMIUM_ARGS, sign_in_to_console

    ensure_bootstrap_admin("ops", "bootstrap-pass-1")
    realm = create_realm("acme")
    app = Client.objects.create(realm=realm, client_id="web-app", redirect_uris=["https://app.example/cb"])
    user = create_user(realm, "alice", password=PASSWORD, email="alice@example.org")
    create_user_session(realm, user, ip_address="192.0.2.10")
    pages = {"realm": realm_url(realm), "client": reverse("admin:realms_client_change", args=[app.pk]),
             "user": user_url(user)}
    too_wide = []
    # No database access below: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15000)
            sign_in_to_console(page, live_server.url, "ops", "bootstrap-pass-1")
            for name, url in pages.items():
                page.goto(live_server.url + url)
                tabs = page.locator("#console-tabs button")
                assert tabs.count() >= 5, name
                for i in range(tabs.count()):
                    tab = tabs.nth(i)
                    tab.click()
                    assert tab.get_attribute("aria-selected") == "true"
                    label = tab.inner_text()
                    page.screenshot(path=str(tmp_path / f"{name}-{i}.png"), full_page=True)
                    too_wide += [f"{name}: {label}: {wide}" for wide in page.evaluate(WIDER_THAN_THE_WINDOW)]
                visible = page.locator("fieldset:not(.console-tab-hidden)").count()
                assert visible >= 1, name
            # The user's Sessions tab shows its buttons with their labels.
            page.goto(live_server.url + pages["user"] + "#sessions")
            assert page.get_by_role("button", name="Sign out all sessions").is_visible()
            assert page.get_by_role("button", name="Sign out", exact=True).is_visible()
            # Only the chosen tab's sections are shown.
            page.goto(live_server.url + pages["realm"] + "#email")
            assert page.locator("#id_smtp_host").is_visible() and not page.locator("#id_otp_type").is_visible()
        finally:
            browser.close()
    assert not too_wide, too_wide
