"""One-time codes (TOTP/HOTP under the realm's OTP policy) and recovery codes: the browser's
2FA sub-flow, the password grant's ``totp`` parameter, replay, lockout, CONFIGURE_TOTP,
CONFIGURE_RECOVERY_AUTHN_CODES and Keycloak's credential JSON through import and export. Codes
are computed by pyotp, independently of the server's implementation."""
import base64
import html
import json
import re
import time

import pyotp
import pytest
import time_machine
from django.core.cache import cache
from django.test import Client as HttpClient

from realms.credentials import get_credential_type
from realms.credentials.otp import OtpPolicy
from realms.credentials.recovery_codes import TYPE as RECOVERY_CODES
from realms.credentials.recovery_codes import generate_codes
from realms.models import Credential, Event, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.signin import flows
from realms.signin.flows import ALTERNATIVE, BROWSER_FLOW, CONDITIONAL, REQUIRED, Flow, step, sub_flow
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.realms.test_signin import AUTH, PARAMS, password_grant, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]

# Keycloak's form of the secret: the HMAC key is these characters' bytes.
SECRET = "hJ7kQ2pXw9LmN4vR8sTz"
KC_SECRET_DATA = json.dumps({"value": SECRET})
KC_CREDENTIAL_DATA = json.dumps({"subType": "totp", "digits": 6, "counter": 0, "period": 30, "algorithm": "HmacSHA1"})


def app_totp(secret=SECRET, **kwargs):
    """What an authenticator app holding ``secret`` shows."""
    return pyotp.TOTP(base64.b32encode(secret.encode()).decode(), **kwargs)


def add_otp(user, secret=SECRET, label="phone"):
    return get_credential_type(Credential.OTP).create(user, secret, label=label)


def action_of(page):
    text = page.content.decode()
    return html.unescape(re.search(r'<form[^>]*action="([^"]+)"', text).group(1))


def password_page(http):
    page = http.get(AUTH, PARAMS)
    return http.post(action_of(page), {"username": "bob", "password": PASSWORD})


def post_code(http, page, code):
    return http.post(action_of(page), {"otp": code})


def login_errors(realm):
    return list(Event.objects.filter(realm=realm, type="LOGIN_ERROR").order_by("time").values_list("error", flat=True))


# --- Browser --------------------------------------------------------------------------------------

def test_browser_sign_in_asks_for_the_code_and_refuses_a_wrong_one(client, realm, web_app, bob):
    add_otp(bob)
    page = password_page(client)
    text = page.content.decode()
    assert page.status_code == 200
    assert 'id="kc-otp-login-form"' in text and 'id="otp"' in text and 'id="kc-login"' in text
    wrong = post_code(client, page, "000000" if app_totp().now() != "000000" else "111111")
    assert wrong.status_code == 200 and "Invalid authenticator code." in wrong.content.decode()
    assert login_errors(realm) == ["invalid_user_credentials"]
    assert "code" in redirect_query(post_code(client, wrong, app_totp().now()))


def test_a_used_code_is_refused_within_its_window(realm, web_app, bob):
    add_otp(bob)
    code = app_totp().now()
    first = HttpClient()
    assert "code" in redirect_query(post_code(first, password_page(first), code))
    second = HttpClient()
    again = post_code(second, password_page(second), code)
    assert again.status_code == 200 and "Invalid authenticator code." in again.content.decode()


def test_user_without_otp_signs_in_with_the_password(client, realm, web_app, bob):
    assert "code" in redirect_query(password_page(client))


# --- Direct grant ---------------------------------------------------------------------------------

def test_password_grant_needs_the_totp_parameter(client, realm, web_app, bob):
    add_otp(bob)
    invalid = {"error": "invalid_grant", "error_description": "Invalid user credentials"}
    missing = password_grant(client, "bob", PASSWORD)
    assert missing.status_code == 400 and missing.json() == invalid
    wrong = password_grant(client, "bob", PASSWORD, totp="12345")
    assert wrong.status_code == 400 and wrong.json() == invalid
    code = app_totp().now()
    assert password_grant(client, "bob", PASSWORD, totp=code).status_code == 200
    replay = password_grant(client, "bob", PASSWORD, totp=code)
    assert replay.status_code == 400 and replay.json() == invalid


def test_wrong_codes_lock_the_account_after_the_failure_limit(client, realm, web_app, bob):
    realm.brute_force_protected = True
    realm.failure_factor = 3
    realm.quick_login_check_milli_seconds = 0
    realm.save()
    add_otp(bob)
    good = app_totp()
    for _ in range(2):  # below the limit (and the right password each time resets nothing)
        assert password_grant(client, "bob", PASSWORD, totp="99999x").status_code == 400
    assert password_grant(client, "bob", PASSWORD, totp=good.now()).status_code == 200
    cache.clear()  # the used code's record: the next checks start afresh
    for _ in range(3):
        assert password_grant(client, "bob", PASSWORD, totp="99999x").status_code == 400
    locked = password_grant(client, "bob", PASSWORD, totp=good.now())
    assert locked.status_code == 400 and locked.json()["error_description"] == "Invalid user credentials"


def test_wrong_codes_in_the_browser_lock_the_code_form(client, realm, web_app, bob):
    realm.brute_force_protected = True
    realm.failure_factor = 3
    realm.quick_login_check_milli_seconds = 0
    realm.save()
    add_otp(bob)
    page = password_page(client)
    for _ in range(3):
        page = post_code(client, page, "99999x")
    refused = post_code(client, page, app_totp().now())
    assert refused.status_code == 200 and "Invalid authenticator code." in refused.content.decode()
    assert login_errors(realm)[-1] == "user_temporarily_disabled"


# --- Imported from Keycloak -----------------------------------------------------------------------

def keycloak_realm(**user):
    return {"realm": "acme", "enabled": True, "users": [{
        "username": "bob", "enabled": True, "email": "bob@example.com",
        "credentials": [{"type": "password", "value": PASSWORD},
                        {"id": "8d4c1a8e-0000-4000-8000-000000000001", "type": "otp", "userLabel": "phone",
                         "createdDate": 1700000000000, "secretData": KC_SECRET_DATA, "credentialData": KC_CREDENTIAL_DATA}],
        **user}]}


@pytest.fixture
def imported(db):
    realm = import_realm(keycloak_realm()).realm
    make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)
    return realm


def test_imported_otp_user_must_give_a_code_in_the_browser(client, imported):
    page = password_page(client)
    assert 'id="kc-otp-login-form"' in page.content.decode()
    assert "code" in redirect_query(post_code(client, page, app_totp().now()))


def test_imported_otp_user_must_give_a_code_in_the_password_grant(client, imported):
    assert password_grant(client, "bob", PASSWORD).status_code == 400
    assert password_grant(client, "bob", PASSWORD, totp=app_totp().now()).status_code == 200


def test_otp_credential_round_trips_keycloak_json_and_is_encrypted_at_rest(imported):
    stored = Credential.objects.get(user__realm=imported, type="otp")
    assert SECRET not in stored.secret_data
    cred = next(c for c in export_realm(imported)["users"][0]["credentials"] if c["type"] == "otp")
    assert cred["secretData"] == KC_SECRET_DATA
    assert json.loads(cred["credentialData"]) == json.loads(KC_CREDENTIAL_DATA)
    assert (cred["id"], cred["userLabel"], cred["createdDate"]) == ("8d4c1a8e-0000-4000-8000-000000000001", "phone",
                                                                     1700000000000)


def test_base32_encoded_secret_from_keycloak(client, db):
    data = keycloak_realm()
    key = "JBSWY3DPEHPK3PXPJBSWY3DP"
    otp = data["users"][0]["credentials"][1]
    otp["secretData"] = json.dumps({"value": key})
    otp["credentialData"] = json.dumps({**json.loads(KC_CREDENTIAL_DATA), "secretEncoding": "BASE32"})
    realm = import_realm(data).realm
    make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)
    assert password_grant(client, "bob", PASSWORD, totp=pyotp.TOTP(key).now()).status_code == 200


def test_malformed_otp_secret_data_is_refused_at_import(db):
    data = keycloak_realm()
    data["users"][0]["credentials"][1]["secretData"] = json.dumps({"nope": 1})
    with pytest.raises(RepresentationError, match=r"credentials\[1\]\.secretData"):
        import_realm(data)


# --- CONFIGURE_TOTP -------------------------------------------------------------------------------

def test_configure_totp_must_enrol_before_any_code_is_issued(client, db):
    realm = import_realm(keycloak_realm(requiredActions=["CONFIGURE_TOTP"], credentials=[
        {"type": "password", "value": PASSWORD}])).realm
    make_client(realm, "web-app", redirect_uris=["https://app.example/cb"], direct_access_grants_enabled=True)
    assert password_grant(client, "bob", PASSWORD).json()["error_description"] == "Account is not fully set up"
    page = password_page(client)
    text = page.content.decode()
    assert page.status_code == 200 and "<svg" in text and 'id="kc-totp-secret-qr-code"' in text
    uri = html.unescape(re.search(r'id="kc-totp-key-uri" href="([^"]+)"', text).group(1))
    assert uri.startswith("otpauth://totp/acme:bob?")
    app = pyotp.parse_uri(uri)
    assert (app.issuer, app.name, app.digits, app.interval) == ("acme", "bob", 6, 30)
    manual = re.search(r'id="kc-totp-secret-key">([^<]+)<', text).group(1).replace(" ", "")
    assert manual == app.secret
    wrong = client.post(action_of(page), {"totp": "000000" if app.now() != "000000" else "111111"})
    assert "Invalid authenticator code." in wrong.content.decode()
    assert not Credential.objects.filter(user__realm=realm, type="otp").exists()
    done = client.post(action_of(wrong), {"totp": app.now(), "userLabel": "my phone"})
    assert "code" in redirect_query(done)
    user = User.objects.get(realm=realm, username="bob")
    assert user.required_actions == []
    assert list(user.credentials.filter(type="otp").values_list("user_label", flat=True)) == ["my phone"]
    cache.clear()  # forget the enrolment code's use
    assert password_grant(client, "bob", PASSWORD).status_code == 400  # the new factor is now required
    assert password_grant(client, "bob", PASSWORD, totp=app.now()).status_code == 200


def test_key_uri_under_an_eight_digit_sha256_policy(realm, bob):
    realm.otp_policy = {"otpPolicyDigits": 8, "otpPolicyAlgorithm": "HmacSHA256", "otpPolicyPeriod": 60}
    app = pyotp.parse_uri(OtpPolicy.of(realm).key_uri(realm, bob, SECRET))
    assert (app.digits, app.interval, app.digest().name) == (8, 60, "sha256")
    assert base64.b32decode(app.secret + "=" * (-len(app.secret) % 8)) == SECRET.encode()


# --- Policies: algorithms, digits, HOTP, look-ahead, reuse ---------------------------------------

def verify(user, code):
    return get_credential_type(Credential.OTP).verify(User.objects.get(pk=user.pk), code)


def test_eight_digits_and_sha256(realm, bob):
    realm.otp_policy = {"otpPolicyDigits": 8, "otpPolicyAlgorithm": "HmacSHA256"}
    realm.save()
    add_otp(User.objects.get(pk=bob.pk))
    sha1_six = app_totp().now()
    assert not verify(bob, sha1_six)
    assert verify(bob, app_totp(digits=8, digest="sha256").now())


def test_sha512(realm, bob):
    realm.otp_policy = {"otpPolicyAlgorithm": "HmacSHA512"}
    realm.save()
    add_otp(User.objects.get(pk=bob.pk))
    assert verify(bob, app_totp(digest="sha512").now())


def test_totp_look_ahead_window(realm, bob):
    add_otp(bob)
    with time_machine.travel(1_800_000_015, tick=False):  # the middle of a 30 s period
        now = time.time()
        assert verify(bob, app_totp().at(now - 30))  # one period behind: within the default window of 1
        assert not verify(bob, app_totp().at(now - 60))
        realm.otp_policy = {"otpPolicyLookAheadWindow": 0}
        realm.save()
        assert not verify(bob, app_totp().at(now + 30))
        assert verify(bob, app_totp().at(now))


def test_reusable_codes_when_the_policy_allows(realm, bob):
    realm.otp_policy = {"otpPolicyCodeReusable": True}
    realm.save()
    add_otp(bob)
    code = app_totp().now()
    assert verify(bob, code) and verify(bob, code)


def test_hotp_counter_advances_within_the_look_ahead(realm, bob):
    realm.otp_policy = {"otpPolicyType": "hotp", "otpPolicyInitialCounter": 5, "otpPolicyLookAheadWindow": 1}
    realm.save()
    cred = add_otp(User.objects.get(pk=bob.pk))
    app = pyotp.HOTP(base64.b32encode(SECRET.encode()).decode())
    assert cred.credential_data["subType"] == "hotp" and cred.credential_data["counter"] == 5
    assert verify(bob, app.at(5))
    assert not verify(bob, app.at(5))  # used: the counter moved past it
    assert verify(bob, app.at(7))  # one skipped: within the look-ahead window
    cred.refresh_from_db()
    assert cred.credential_data["counter"] == 8
    assert not verify(bob, app.at(10))  # two ahead: beyond the window


# --- Recovery codes -------------------------------------------------------------------------------

def test_recovery_codes_one_use_each_in_order(realm, bob):
    codes = generate_codes()
    assert len(codes) == 12 and len(set(codes)) == 12 and all(len(c) == 12 and c.isalnum() for c in codes)
    kind = get_credential_type(RECOVERY_CODES)
    cred = kind.create(bob, codes)
    stored = json.loads(cred.secret_data)
    assert [c["number"] for c in stored["codes"]] == list(range(1, 13)) and codes[0] not in cred.secret_data
    assert cred.credential_data == {"hashIterations": 1, "algorithm": "RS512", "totalCodes": 12, "remainingCodes": 12}
    assert not kind.verify(bob, codes[1])  # codes are asked for in order
    assert kind.verify(bob, codes[0][:4] + "-" + codes[0][4:8] + "-" + codes[0][8:])
    assert not kind.verify(bob, codes[0])  # one use
    assert kind.verify(bob, codes[1].lower())
    assert kind.remaining(bob) == 10 and kind.next_code_number(bob) == 3


def _flow_with_recovery_codes(monkeypatch):
    """The built-in browser flow, copied with the recovery-code step enabled."""
    flow = Flow("browser with recovery codes", (
        step("auth-cookie", ALTERNATIVE),
        sub_flow("forms", ALTERNATIVE,
            step("auth-username-password-form", REQUIRED),
            sub_flow("Browser - Conditional 2FA", CONDITIONAL,
                step("conditional-user-configured", REQUIRED),
                step("auth-otp-form", ALTERNATIVE),
                step("auth-recovery-authn-code-form", ALTERNATIVE),
            ),
        ),
    ))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda realm, ref: flow if ref == BROWSER_FLOW.alias else None])


def test_recovery_code_step_is_disabled_in_the_builtin_flow():
    two_fa = BROWSER_FLOW.executions[4].flow.executions[1].flow
    assert [(e.authenticator, e.requirement) for e in two_fa.executions][-1] == ("auth-recovery-authn-code-form",
                                                                                 "DISABLED")


def test_sign_in_with_a_recovery_code_when_the_step_is_enabled(client, realm, web_app, bob, monkeypatch):
    _flow_with_recovery_codes(monkeypatch)
    codes = generate_codes()
    get_credential_type(RECOVERY_CODES).create(bob, codes)
    page = password_page(client)
    text = page.content.decode()
    assert 'id="kc-recovery-code-login-form"' in text and "Recovery code #1" in text
    assert 'id="kc-recovery-codes-low"' not in text
    wrong = client.post(action_of(page), {"recoveryCodeInput": codes[5]})
    assert "Invalid recovery authentication code" in wrong.content.decode()
    assert "code" in redirect_query(client.post(action_of(wrong), {"recoveryCodeInput": codes[0]}))
    assert get_credential_type(RECOVERY_CODES).remaining(bob) == 11


def test_otp_user_can_try_another_way(client, realm, web_app, bob, monkeypatch):
    _flow_with_recovery_codes(monkeypatch)
    add_otp(bob)
    codes = generate_codes()
    get_credential_type(RECOVERY_CODES).create(bob, codes)
    page = password_page(client)
    assert 'id="kc-otp-login-form"' in page.content.decode() and 'id="try-another-way"' in page.content.decode()
    other = client.post(action_of(page), {"tryAnotherWay": "on"})
    assert 'id="kc-recovery-code-login-form"' in other.content.decode()
    assert "code" in redirect_query(client.post(action_of(other), {"recoveryCodeInput": codes[0]}))


def test_low_recovery_code_warning(client, realm, web_app, bob, monkeypatch):
    _flow_with_recovery_codes(monkeypatch)
    codes = generate_codes()
    kind = get_credential_type(RECOVERY_CODES)
    kind.create(bob, codes)
    for code in codes[:9]:
        assert kind.verify(bob, code)
    page = password_page(client)
    assert 'id="kc-recovery-codes-low"' in page.content.decode() and "You have 3 recovery codes left" in page.content.decode()


def test_configure_recovery_codes_required_action(client, realm, web_app, bob):
    User.objects.filter(pk=bob.pk).update(required_actions=["CONFIGURE_RECOVERY_AUTHN_CODES"])
    page = password_page(client)
    shown = re.findall(r"<li><code>([A-Z0-9-]+)</code></li>", page.content.decode())
    assert len(shown) == 12 and all(re.fullmatch(r"[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}", c) for c in shown)
    unconfirmed = client.post(action_of(page), {})
    assert "Confirm that you saved the codes" in unconfirmed.content.decode()
    assert re.findall(r"<li><code>([A-Z0-9-]+)</code></li>", unconfirmed.content.decode()) == shown  # the same codes
    done = client.post(action_of(unconfirmed), {"kcRecoveryCodesConfirmationCheck": "on"})
    assert "code" in redirect_query(done)
    assert get_credential_type(RECOVERY_CODES).verify(User.objects.get(pk=bob.pk), shown[0])


def test_recovery_codes_round_trip_keycloak_json(realm, bob):
    get_credential_type(RECOVERY_CODES).create(bob, generate_codes())
    rep = export_realm(realm)
    cred = next(c for c in rep["users"][0]["credentials"] if c["type"] == RECOVERY_CODES)
    rep["realm"] = "copy"
    rep.pop("id")
    copy = import_realm(rep).realm
    again = next(c for c in export_realm(copy)["users"][0]["credentials"] if c["type"] == RECOVERY_CODES)
    assert (again["secretData"], json.loads(again["credentialData"])) == (cred["secretData"],
                                                                          json.loads(cred["credentialData"]))


def test_an_unreadable_otp_secret_refuses_every_code(realm, bob):
    cred = add_otp(bob)
    Credential.objects.filter(pk=cred.pk).update(secret_data=KC_SECRET_DATA)  # plain text, not ours
    assert not verify(bob, app_totp().now())


def test_required_otp_step_makes_a_user_without_one_enrol(client, realm, web_app, bob, monkeypatch):
    flow = Flow("password and otp", (step("auth-username-password-form", REQUIRED), step("auth-otp-form", REQUIRED)))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda realm, ref: flow if ref == BROWSER_FLOW.alias else None])
    page = password_page(client)
    assert 'id="kc-totp-settings-form"' in page.content.decode()
    assert User.objects.get(pk=bob.pk).required_actions == ["CONFIGURE_TOTP"]
