"""WebAuthn security keys and passkeys through the login pages, with assertions made by a software
authenticator (bench/soft_authenticator.py, ECDSA from ``cryptography``): Keycloak-shaped
credentials imported and used, passkeys on the login form skipping the 2FA sub-flow, the security
key as second factor, the registration required actions under the realm's policies, and what
must be refused (another RP ID or origin, a counter that does not move forward, a replayed
answer, a different user)."""
import html
import json
import re

import pytest
from django.test import Client as HttpClient
from fido2.utils import websafe_encode

from bench.soft_authenticator import AT, UP, SoftAuthenticator
from realms.credentials import get_credential_type
from realms.credentials.webauthn import CeremonyError, WebAuthnPolicy
from realms.models import Credential, User
from realms.representation import export_realm, import_realm
from realms.signin import flows
from realms.signin.flows import ALTERNATIVE, BROWSER_FLOW, CONDITIONAL, REQUIRED, Flow, step, sub_flow
from tests.realms.test_otp import add_otp, password_page
from tests.realms.test_signin import AUTH, PARAMS, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]

ORIGIN, RP_ID = "http://testserver", "testserver"  # what the test client's requests configure


def action_of(page):
    return html.unescape(re.search(r'<form[^>]*id="webauth"[^>]*action="([^"]+)"', page.content.decode()).group(1))


def options_of(page):
    text = page.content.decode()
    return json.loads(html.unescape(re.search(r'<script id="webauthn-options" type="application/json">(.*?)</script>',
                                              text, re.S).group(1)))


def passkeys_on(realm, **policy):
    realm.passkeys_enabled = True
    realm.webauthn_policy = {**realm.webauthn_policy, **policy}
    realm.save()


def add_passkey(user, authenticator, kind=Credential.WEBAUTHN_PASSWORDLESS):
    return Credential.objects.create(user=user, type=kind, secret_data="{}",
                                     credential_data=authenticator.keycloak_credential_data())


def passkey_for(user, **kwargs):
    return SoftAuthenticator(RP_ID, user_handle=str(user.pk).encode(), **kwargs)


def sign_in_with(http, authenticator, **assertion_kwargs):
    page = http.get(AUTH, PARAMS)
    fields = authenticator.assertion(options_of(page)["challenge"], ORIGIN, **assertion_kwargs)
    return http.post(action_of(page), fields)


# --- Passkeys on the login form -----------------------------------------------------------------

def test_login_form_offers_passkeys_only_when_enabled(client, realm, web_app):
    page = client.get(AUTH, PARAMS).content.decode()
    assert 'autocomplete="username"' in page and "webauthn-options" not in page
    passkeys_on(realm)
    page = client.get(AUTH, PARAMS)
    text = page.content.decode()
    assert 'autocomplete="username webauthn"' in text and 'id="authenticateWebAuthnButton"' in text
    options = options_of(page)
    assert options["rpId"] == RP_ID and options["allowCredentials"] == [] and len(options["challenge"]) >= 43


def test_keycloak_passkey_signs_in_and_skips_the_2fa_sub_flow(client, realm, web_app, bob):
    """A user with a passkey and an OTP credential signs in with the passkey alone: the 2FA
    sub-flow is skipped after a passkey (spec 1 §2 row 5)."""
    passkeys_on(realm)
    authenticator = passkey_for(bob, counter=7)
    add_passkey(bob, authenticator)
    add_otp(bob)
    answer = sign_in_with(client, authenticator)
    assert "code" in redirect_query(answer)
    stored = Credential.objects.get(user=bob, type=Credential.WEBAUTHN_PASSWORDLESS)
    assert stored.credential_data["counter"] == 8
    session_methods = bob.sessions.get().auth_methods
    assert session_methods == [Credential.WEBAUTHN_PASSWORDLESS]


def test_password_sign_in_still_asks_for_the_second_factor(client, realm, web_app, bob):
    passkeys_on(realm)
    add_passkey(bob, passkey_for(bob))
    add_otp(bob)
    page = password_page(client)
    assert 'id="kc-otp-login-form"' in page.content.decode()


def test_imported_keycloak_credential_round_trips(realm, bob):
    authenticator = passkey_for(bob)
    data = authenticator.keycloak_credential_data()
    result = import_realm({"realm": "kc", "users": [{"username": "ann", "enabled": True, "credentials": [{
        "type": "webauthn-passwordless", "userLabel": "laptop", "secretData": "{}",
        "credentialData": json.dumps(data)}]}]})
    ann = User.objects.get(realm=result.realm, username="ann")
    assert _check(ann, authenticator)  # the imported credential verifies a signature
    exported = export_realm(result.realm)["users"][0]["credentials"][0]
    assert exported["type"] == "webauthn-passwordless" and exported["secretData"] == "{}"
    assert json.loads(exported["credentialData"]) == {**data, "counter": 1}


def test_wrong_rp_id_is_refused(client, realm, web_app, bob):
    passkeys_on(realm)
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    answer = sign_in_with(client, authenticator, rp_id="evil.example")
    assert answer.status_code == 200 and "Unknown user authenticated by the Passkey." in answer.content.decode()
    assert not bob.sessions.exists()


def test_origin_comes_from_configuration_not_from_the_request(client, realm, web_app, bob, settings):
    """A page served under another name cannot sign: the origin in the client data must be the
    configured base URL's, whatever Origin header the request carries."""
    passkeys_on(realm)
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    page = client.get(AUTH, PARAMS)
    fields = authenticator.assertion(options_of(page)["challenge"], "https://phish.example")
    answer = client.post(action_of(page), fields, HTTP_ORIGIN="https://phish.example")
    assert answer.status_code == 200 and not bob.sessions.exists()
    # With the base URL configured, the request's own host does not count either.
    settings.IDP_BASE_URL = "https://id.example"
    with pytest.raises(CeremonyError, match="origin"):
        _check(bob, authenticator, origin=ORIGIN, rp_id="id.example")
    assert _check(bob, authenticator, origin="https://id.example", rp_id="id.example")


def test_extra_origins_are_accepted(realm, bob):
    passkeys_on(realm, webAuthnPolicyPasswordlessExtraOrigins=["android:apk-key-hash:abc"])
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    assert _check(bob, authenticator, origin="android:apk-key-hash:abc")


class _Request:
    """What the policy reads of a request (its host, when no base URL is configured)."""

    scheme = "http"

    def get_host(self):
        return "testserver"


def _check(user, authenticator, *, origin=ORIGIN, rp_id=None, counter=None, challenge="c2VydmVyLWNoYWxsZW5nZS0xMjM0NTY3ODkw"):
    from realms.credentials.webauthn import Assertion

    kind = get_credential_type(Credential.WEBAUTHN_PASSWORDLESS)
    fields = authenticator.assertion(challenge, origin, rp_id=rp_id, counter=counter)
    assertion = Assertion.from_form(fields, challenge=challenge, policy=kind.policy(user.realm), request=_Request())
    return kind.check(user, assertion)


def test_counter_that_does_not_increase_is_refused(realm, bob):
    authenticator = passkey_for(bob, counter=41)
    add_passkey(bob, authenticator)
    assert _check(bob, authenticator)  # 42
    with pytest.raises(CeremonyError, match="counter 42 did not increase"):
        _check(bob, authenticator, counter=42)  # a clone replaying the same count
    with pytest.raises(CeremonyError, match="counter 10 did not increase"):
        _check(bob, authenticator, counter=10)
    assert _check(bob, authenticator, counter=50)


def test_authenticators_without_a_counter_keep_signing_in(realm, bob):
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    assert _check(bob, authenticator, counter=0)
    assert _check(bob, authenticator, counter=0)


def test_wrong_rp_id_and_wrong_key_are_refused_at_unit_level(realm, bob):
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    with pytest.raises(CeremonyError, match="RP ID"):
        _check(bob, authenticator, rp_id="evil.example")
    impostor = passkey_for(bob)
    impostor.credential_id = authenticator.credential_id  # the id is public; the key is not
    with pytest.raises(CeremonyError, match="signature"):
        _check(bob, impostor)


def test_an_answer_is_good_for_one_challenge_only(realm, web_app, bob):
    passkeys_on(realm)
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    first = HttpClient()
    page = first.get(AUTH, PARAMS)
    fields = authenticator.assertion(options_of(page)["challenge"], ORIGIN)
    assert "code" in redirect_query(first.post(action_of(page), fields))
    other = HttpClient()  # the same answer replayed on a fresh sign-in (a new challenge)
    replay = other.post(action_of(other.get(AUTH, PARAMS)), {**fields})
    assert replay.status_code == 200 and bob.sessions.count() == 1


def test_unknown_user_handle_is_refused(client, realm, web_app, bob):
    passkeys_on(realm)
    stranger = SoftAuthenticator(RP_ID, user_handle=b"no-such-user")
    answer = sign_in_with(client, stranger)
    assert answer.status_code == 200 and "Unknown user authenticated by the Passkey." in answer.content.decode()


def test_browser_error_is_shown_on_the_form(client, realm, web_app):
    passkeys_on(realm)
    page = client.get(AUTH, PARAMS)
    answer = client.post(action_of(page), {"error": "NotAllowedError"})
    assert "Failed to authenticate by the Passkey." in answer.content.decode()


def test_webauthn_answer_is_ignored_when_passkeys_are_off(client, realm, web_app, bob):
    """Without "Enable Passkeys" the login form takes only a username and password."""
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    page = client.get(AUTH, PARAMS)
    form = html.unescape(re.search(r'<form[^>]*action="([^"]+)"', page.content.decode()).group(1))
    answer = client.post(form, authenticator.assertion("AAAAAAAAAAAAAAAAAAAAAA", ORIGIN))
    assert answer.status_code == 200 and not bob.sessions.exists()


# --- Security key as the second factor ------------------------------------------------------------

def use_flow_with_security_keys(monkeypatch):
    """The built-in browser flow, copied with the WebAuthn step enabled in the 2FA sub-flow."""
    flow = Flow("browser with security keys", (
        step("auth-cookie", ALTERNATIVE),
        sub_flow("forms", ALTERNATIVE,
            step("auth-username-password-form", REQUIRED),
            sub_flow("Browser - Conditional 2FA", CONDITIONAL,
                step("conditional-user-configured", REQUIRED),
                step("conditional-credential", REQUIRED, credentials="webauthn-passwordless"),
                step("auth-otp-form", ALTERNATIVE),
                step("webauthn-authenticator", ALTERNATIVE),
            ),
        ),
    ))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda realm, ref: flow if ref == BROWSER_FLOW.alias else None])


def test_webauthn_step_is_disabled_in_the_builtin_flow():
    forms = next(e.flow for e in BROWSER_FLOW.executions if e.flow and e.flow.alias == "forms")
    two_fa = next(e.flow for e in forms.executions if e.flow and e.flow.alias == "Browser - Conditional 2FA")
    steps = {e.authenticator: e.requirement for e in two_fa.executions}
    assert steps["webauthn-authenticator"] == "DISABLED" and steps["conditional-credential"] == "REQUIRED"


def test_security_key_as_second_factor(client, realm, web_app, bob, monkeypatch):
    use_flow_with_security_keys(monkeypatch)
    key = SoftAuthenticator(RP_ID)  # a security key: no user handle
    add_passkey(bob, key, kind=Credential.WEBAUTHN)
    page = password_page(client)
    text = page.content.decode()
    # Served disabled: webauthn.js (deferred) enables it once its click handler is attached.
    assert re.search(r'id="authenticateWebAuthnButton"[^>]* disabled', text)
    options = options_of(page)
    assert [d["id"] for d in options["allowCredentials"]] == [websafe_encode(key.credential_id)]
    answer = client.post(action_of(page), key.assertion(options["challenge"], ORIGIN, with_user_handle=False))
    assert "code" in redirect_query(answer)
    assert bob.sessions.get().auth_methods == ["pwd", "webauthn"]


def test_security_key_of_another_user_is_refused(client, realm, web_app, bob, monkeypatch):
    use_flow_with_security_keys(monkeypatch)
    add_passkey(bob, SoftAuthenticator(RP_ID), kind=Credential.WEBAUTHN)
    carol = User.objects.create(realm=realm, username="carol")
    foreign = SoftAuthenticator(RP_ID, user_handle=str(carol.pk).encode())
    add_passkey(carol, foreign, kind=Credential.WEBAUTHN)
    page = password_page(client)
    answer = client.post(action_of(page), foreign.assertion(options_of(page)["challenge"], ORIGIN))
    assert answer.status_code == 200 and "First authenticated user is not" in answer.content.decode()
    assert not bob.sessions.exists()


# --- Registration (required actions) --------------------------------------------------------------

def _registration_page(http, user, action):
    User.objects.filter(pk=user.pk).update(required_actions=[action])
    page = password_page(http)
    assert re.search(r'id="registerWebAuthn"[^>]* disabled', page.content.decode()), page.content.decode()[:500]
    return page


def _register_form_action(page):
    return html.unescape(re.search(r'<form[^>]*id="register"[^>]*action="([^"]+)"', page.content.decode()).group(1))


def test_register_a_passkey_then_sign_in_with_it(client, realm, web_app, bob):
    passkeys_on(realm, webAuthnPolicyPasswordlessRequireResidentKey="Yes",
                webAuthnPolicyPasswordlessUserVerificationRequirement="required",
                webAuthnPolicyPasswordlessRpEntityName="Acme")
    page = _registration_page(client, bob, "webauthn-register-passwordless")
    options = options_of(page)
    assert options["rp"] == {"id": RP_ID, "name": "Acme"}
    assert options["authenticatorSelection"] == {"residentKey": "required", "requireResidentKey": True,
                                                 "userVerification": "required"}
    assert [p["alg"] for p in options["pubKeyCredParams"]] == [-7, -257]
    authenticator = SoftAuthenticator(RP_ID, user_handle=str(bob.pk).encode())
    fields = {**authenticator.register(options["challenge"], ORIGIN), "authenticatorLabel": "my laptop"}
    assert "code" in redirect_query(client.post(_register_form_action(page), fields))
    stored = Credential.objects.get(user=bob, type=Credential.WEBAUTHN_PASSWORDLESS)
    assert stored.user_label == "my laptop"
    assert stored.credential_data == {**authenticator.keycloak_credential_data(), "counter": 0}
    assert "code" in redirect_query(sign_in_with(HttpClient(), authenticator))


def test_registration_follows_the_policy(client, realm, web_app, bob):
    realm.webauthn_policy = {"webAuthnPolicySignatureAlgorithms": ["ES384"],
                             "webAuthnPolicyAcceptableAaguids": ["01020304-0506-0708-090a-0b0c0d0e0f10"],
                             "webAuthnPolicyUserVerificationRequirement": "required"}
    realm.save()
    page = _registration_page(client, bob, "webauthn-register")
    assert [p["alg"] for p in options_of(page)["pubKeyCredParams"]] == [-35]
    key = SoftAuthenticator(RP_ID, aaguid=bytes(range(1, 17)))
    refused = client.post(_register_form_action(page), key.register(options_of(page)["challenge"], ORIGIN))
    assert "Passkey registration result is invalid." in refused.content.decode()  # ES256 is not allowed
    realm.webauthn_policy = {**realm.webauthn_policy, "webAuthnPolicySignatureAlgorithms": ["ES256"]}
    realm.save()
    no_uv = client.post(_register_form_action(refused),
                        key.register(options_of(refused)["challenge"], ORIGIN, flags=UP | AT))
    assert "Passkey registration result is invalid." in no_uv.content.decode()
    stranger = SoftAuthenticator(RP_ID, aaguid=bytes(16))
    wrong_model = client.post(_register_form_action(no_uv), stranger.register(options_of(no_uv)["challenge"], ORIGIN))
    assert "Passkey registration result is invalid." in wrong_model.content.decode()
    assert not Credential.objects.filter(user=bob, type=Credential.WEBAUTHN).exists()
    accepted = client.post(_register_form_action(wrong_model), key.register(options_of(wrong_model)["challenge"], ORIGIN))
    assert "code" in redirect_query(accepted)
    assert Credential.objects.get(user=bob, type=Credential.WEBAUTHN).credential_data["aaguid"] == \
        "01020304-0506-0708-090a-0b0c0d0e0f10"


def test_avoid_same_authenticator_lists_the_registered_ones(client, realm, web_app, bob):
    key = SoftAuthenticator(RP_ID)
    add_passkey(bob, key, kind=Credential.WEBAUTHN)
    realm.webauthn_policy = {"webAuthnPolicyAvoidSameAuthenticatorRegister": "true"}
    realm.save()
    options = options_of(_registration_page(client, bob, "webauthn-register"))
    assert len(options["excludeCredentials"]) == 1


def test_policy_defaults_and_keycloak_string_values(realm):
    policy = WebAuthnPolicy.of(realm)
    assert (policy.rp_name, policy.algorithms, policy.user_verification, policy.timeout) == \
        ("keycloak", ("ES256", "RS256"), "not specified", 0)
    realm.webauthn_policy = {"webAuthnPolicySignatureAlgorithms": "ES256", "webAuthnPolicyCreateTimeout": "60",
                             "webAuthnPolicyAvoidSameAuthenticatorRegister": "false",
                             "webAuthnPolicyPasswordlessRpId": "example.org"}
    policy = WebAuthnPolicy.of(realm)
    assert (policy.algorithms, policy.timeout, policy.avoid_same_authenticator, policy.rp_id) == (("ES256",), 60, False, "")
    assert WebAuthnPolicy.of(realm, passwordless=True).rp_id == "example.org"


def test_passwordless_step_as_the_first_factor(client, realm, web_app, bob, monkeypatch):
    """Keycloak's ``webauthn-authenticator-passwordless`` alone in a flow: the passkey names the
    user; a user who has none is not signed in by someone else's."""
    flow = Flow("passwordless", (step("webauthn-authenticator-passwordless", REQUIRED),))
    monkeypatch.setattr(flows, "_flow_loaders", [lambda realm, ref: flow if ref == BROWSER_FLOW.alias else None])
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    page = client.get(AUTH, PARAMS)
    assert 'id="authenticateWebAuthnButton"' in page.content.decode() and options_of(page)["allowCredentials"] == []
    wrong_key = passkey_for(bob)  # bob's handle, a key bob never registered
    refused = client.post(action_of(page), wrong_key.assertion(options_of(page)["challenge"], ORIGIN))
    assert refused.status_code == 200 and not bob.sessions.exists()
    answer = client.post(action_of(refused), authenticator.assertion(options_of(refused)["challenge"], ORIGIN))
    assert "code" in redirect_query(answer)
    assert bob.sessions.get().auth_methods == [Credential.WEBAUTHN_PASSWORDLESS]


def test_wrong_assertions_count_towards_lockout(client, realm, web_app, bob):
    realm.brute_force_protected, realm.failure_factor = True, 2
    realm.save()
    passkeys_on(realm)
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    impostor = passkey_for(bob, credential_id=authenticator.credential_id)
    for _ in range(2):
        assert sign_in_with(client, impostor).status_code == 200
    assert sign_in_with(client, authenticator).status_code == 200  # locked out: the right passkey too
    assert not bob.sessions.exists()


@pytest.mark.django_db
def test_a_policy_algorithm_that_cannot_be_verified_is_reported_at_import_and_not_offered():
    from realms.credentials.webauthn import WebAuthnPolicy
    from realms.representation import import_realm

    result = import_realm({"realm": "algs", "webAuthnPolicySignatureAlgorithms": ["ES256", "RS384"],
                           "webAuthnPolicyPasswordlessSignatureAlgorithms": ["RS1"]})
    assert "webAuthnPolicySignatureAlgorithms: RS384 is not supported: keys are not asked for it" in result.warnings
    assert "webAuthnPolicyPasswordlessSignatureAlgorithms: RS1 is not supported: keys are not asked for it" in \
        result.warnings
    assert WebAuthnPolicy.of(result.realm).algorithms == ("ES256",)
