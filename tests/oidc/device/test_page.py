"""The user-code page and the sign-in it starts (RFC 8628 §3.3, Keycloak's DeviceEndpoint): the
form (filled in from verification_uri_complete, never submitted by a link alone), Keycloak's
messages for a wrong, expired, used or denied code, the realm's browser sign-in, the consent page
(Yes approves, No denies), the result pages, CSRF, and a page usable with the keyboard at phone
width."""
import re
from datetime import timedelta

from django.test import Client as HttpClient
from django.utils import timezone

from oidc.models import ConsentGrant, DeviceAuthorization
from realms.models import Event
from tests.oidc.device.conftest import (
    authorize,
    enter_code,
    error,
    form_action,
    page_url,
    poll,
    sign_in,
)

INVALID = "Invalid code, please try again."
EXPIRED = "The code has expired. Please go back to your device and try connecting again."


def text(response):
    return response.content.decode()


def test_form_is_usable_with_the_keyboard_at_phone_width(client, realm):
    page = client.get(page_url(realm))
    assert page.status_code == 200
    body = text(page)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in body
    assert '<label for="device-user-code">Enter the code provided by your device and click Submit</label>' in body
    assert re.search(r'<input id="device-user-code" name="device_user_code"[^>]* required', body)
    assert "autofocus" in body and 'type="submit"' in body and "csrfmiddlewaretoken" in body
    assert "<h1 id=\"kc-page-title\">Device Login</h1>" in body
    assert "oauth2Device" not in body  # no raw message key
    assert page["Cache-Control"] == "no-store, must-revalidate, max-age=0"


def test_verification_uri_complete_fills_the_form_and_starts_nothing(client, realm, http):
    started = authorize(http, realm).json()
    page = client.get(started["verification_uri_complete"].replace("http://testserver", ""))
    body = text(page)
    assert f'value="{started["user_code"]}"' in body
    # The submit button has the focus: Enter confirms; nothing was approved by opening the link.
    assert re.search(r'<button id="kc-login" type="submit" class="primary" autofocus>', body)
    assert not Event.objects.filter(type="OAUTH2_DEVICE_VERIFY_USER_CODE").exists()


def test_wrong_code_shows_keycloaks_message(client, realm, http):
    authorize(http, realm)
    page = enter_code(client, realm, "ABCD-EFGH")
    assert page.status_code == 400 and INVALID in text(page)
    assert 'role="alert"' in text(page) and 'aria-invalid="true"' in text(page)
    event = Event.objects.get(type="OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR")
    assert event.error == "invalid_oauth2_user_code"
    assert INVALID in text(enter_code(client, realm, ""))


def test_code_is_read_as_keycloak_formats_it(client, realm, http):
    user_code = authorize(http, realm).json()["user_code"]
    page = enter_code(client, realm, user_code.replace("-", "").lower())
    assert page.status_code == 200 and 'name="password"' in text(page)
    event = Event.objects.get(type="OAUTH2_DEVICE_VERIFY_USER_CODE")
    assert event.client_id == "tv" and event.details["scope"] == "openid"


def test_expired_code_shows_the_expired_message(client, realm, http):
    user_code = authorize(http, realm).json()["user_code"]
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    page = enter_code(client, realm, user_code)
    assert page.status_code == 400 and EXPIRED in text(page)
    assert Event.objects.get(type="OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR").details["reason"] == "device code expired"


def test_used_and_denied_codes_are_invalid(client, realm, http):
    approved = authorize(http, realm).json()
    sign_in(client, realm, approved["user_code"])
    assert INVALID in text(enter_code(HttpClient(), realm, approved["user_code"]))
    denied = authorize(http, realm).json()
    sign_in(HttpClient(), realm, denied["user_code"], consent="deny")
    assert INVALID in text(enter_code(HttpClient(), realm, denied["user_code"]))


def test_client_switched_off_after_the_request(client, realm, http):
    from tests.oidc.device.conftest import set_client_attributes

    user_code = authorize(http, realm).json()["user_code"]
    set_client_attributes(realm, "tv", **{"oauth2.device.authorization.grant.enabled": "false"})
    page = enter_code(client, realm, user_code)
    assert page.status_code == 400 and "The flow is disabled for the client." in text(page)


def test_consent_yes_approves_and_success_page(client, realm, http):
    started = authorize(http, realm, scope="openid email").json()
    login = enter_code(client, realm, started["user_code"])
    consent = client.post(form_action(login), {"username": "alice", "password": "device-password-1"})
    body = text(consent)
    # Keycloak asks on the device flow even when the client does not require consent.
    assert "Do you grant these access privileges?" in body and "Email address" in body
    assert ">Yes</button>" in body and ">No</button>" in body
    done = client.post(form_action(consent), {"consent": "accept"})
    assert done.status_code == 302
    result = client.get(done["Location"])
    assert result.status_code == 200 and "Device Login Successful" in text(result)
    assert "You may close this browser window and go back to your device." in text(result)
    assert ConsentGrant.objects.filter(client__client_id="tv").exists()
    assert Event.objects.get(type="LOGIN").details["consent"] == "consent_granted"
    assert poll(http, realm, started["device_code"]).status_code == 200

    # Granted once, remembered: the same browser (signed in) approves the next code at once.
    again = authorize(http, realm, scope="openid email").json()
    done = enter_code(client, realm, again["user_code"])
    assert done.status_code == 302 and done["Location"].endswith("/device/status")
    assert poll(http, realm, again["device_code"]).status_code == 200


def test_consent_no_denies_and_shows_keycloaks_page(client, realm, http):
    started = authorize(http, realm).json()
    denied = sign_in(client, realm, started["user_code"], consent="deny")
    result = client.get(denied["Location"])
    assert result.status_code == 400
    assert "Device Login Failed" in text(result) and "Consent denied for connecting the device." in text(result)
    assert Event.objects.get(type="LOGIN_ERROR").error == "consent_denied"
    assert error(poll(http, realm, started["device_code"]))[1] == "access_denied"
    assert not ConsentGrant.objects.exists()


def test_consent_required_client_asks_too(client, realm, http):
    started = authorize(http, realm, "strict").json()
    assert sign_in(client, realm, started["user_code"]).status_code == 302
    assert poll(http, realm, started["device_code"], "strict").status_code == 200


def test_wrong_password_keeps_the_code_pending(client, realm, http):
    started = authorize(http, realm).json()
    page = sign_in(client, realm, started["user_code"], password="wrong")
    assert page.status_code == 200 and "Invalid username or password." in text(page)
    assert DeviceAuthorization.objects.get().state == "pending"
    assert error(poll(http, realm, started["device_code"]))[1] == "authorization_pending"


def test_an_approval_after_expiry_is_refused(client, realm, http):
    started = authorize(http, realm).json()
    login = enter_code(client, realm, started["user_code"])
    consent = client.post(form_action(login), {"username": "alice", "password": "device-password-1"})
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    done = client.post(form_action(consent), {"consent": "accept"})
    assert done["Location"].endswith("/device/status?error=expired_token")
    assert EXPIRED in text(client.get(done["Location"]))
    assert DeviceAuthorization.objects.get().state == "pending"


def test_cancel_shows_the_denied_page(client, realm):
    page = client.post(page_url(realm), {"cancel": "on"})
    assert "Consent denied for connecting the device." in text(page)


def test_status_page_messages(client, realm):
    assert "Device Login Successful" in text(client.get(page_url(realm) + "/status"))
    assert EXPIRED in text(client.get(page_url(realm) + "/status?error=expired_token"))
    failed = text(client.get(page_url(realm) + "/status?error=server_error"))
    assert "You may close this browser window and go back to your device and try connecting again." in failed


def test_the_form_is_csrf_protected(realm, http):
    user_code = authorize(http, realm).json()["user_code"]
    browser = HttpClient(enforce_csrf_checks=True)
    assert browser.post(page_url(realm), {"device_user_code": user_code}).status_code == 403
    page = browser.get(page_url(realm))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text(page)).group(1)
    login = browser.post(page_url(realm), {"device_user_code": user_code, "csrfmiddlewaretoken": token})
    assert login.status_code == 200 and 'name="password"' in text(login)


def test_german_page(client, realm):
    from realms.models import Realm

    Realm.objects.filter(pk=realm.pk).update(internationalization_enabled=True, supported_locales=["en", "de"])
    from realms.data import realm_cache

    realm_cache.clear()
    body = text(client.get(page_url(realm), {"kc_locale": "de"}))
    assert "Geräteanmeldung" in body
