"""The person's side of the device grant (RFC 8628 §3.3), as Keycloak's DeviceEndpoint: the
user-code page ``/realms/{realm}/device``, the realm's browser sign-in for the client that asked,
the consent page, and the result page ``/realms/{realm}/device/status``.

The sign-in runs on ``realms.signin.engine`` under a login protocol of its own (``PROTOCOL``):
once the user is signed in, its completion asks for consent (Keycloak asks on every device
sign-in for the client scopes not granted yet, whether or not the client requires consent: the
person must see which client a code they typed belongs to, RFC 8628 §5.4), then approves the code
with the user session and a client session, and answers with the result page. "No" denies the
code, and the device's next poll hears access_denied.

``?user_code=`` (the ``verification_uri_complete``) only fills the form in: the sign-in starts on
the person's POST, so a link alone never approves a device in a browser with an SSO session.
"""
from urllib.parse import urlencode

from django.http import HttpResponseRedirect
from django.utils import timezone

from realms.audit.events import emit
from realms.data import realm_cache as realm_data
from realms.http import themes
from realms.http.messages import Message
from realms.http.web import client_address, realm_url
from realms.signin import engine, flows, loa
from realms.signin.flows import SSO_AUTH
from realms.sso import auth_sessions, sessions

from . import consent, device
from .backchannel import ISSUER_NOTE
from .models import DeviceAuthorization
from .realm_cache import get_realm

PROTOCOL = "oauth2-device"  # the engine's name for these sign-ins; not a protocol clients choose
USER_CODE_PARAM = "device_user_code"  # Keycloak's form field
PAGE = "login-oauth2-device-verify-user-code.html"
STATUS_PAGE = "login-oauth2-device-status.html"
INVALID, EXPIRED = "oauth2DeviceInvalidUserCodeMessage", "oauth2DeviceExpiredUserCodeMessage"
ACCESS_DENIED, EXPIRED_TOKEN, SERVER_ERROR = "access_denied", "expired_token", "server_error"


def page_url(realm_name):
    return f"/realms/{realm_name}/device"


def status_url(realm_name, error=""):
    return page_url(realm_name) + "/status" + (f"?{urlencode({'error': error})}" if error else "")


def user_code_page(request, realm, *, user_code="", error=None, status=200):
    return themes.render(request, realm, PAGE, {
        "action_url": page_url(realm.name), "user_code": user_code[:32],
        "error": Message(error) if error else None,
    }, status=status)


def status_page(request, realm, error=""):
    """Keycloak's verification result: success, or the failure's message under "Device Login Failed"."""
    if not error:
        return themes.render(request, realm, STATUS_PAGE, {
            "header": Message("oauth2DeviceVerificationCompleteHeader"),
            "message": Message("oauth2DeviceVerificationCompleteMessage")})
    key = {ACCESS_DENIED: "oauth2DeviceConsentDeniedMessage", EXPIRED_TOKEN: EXPIRED}.get(
        error, "oauth2DeviceVerificationFailedMessage")
    return themes.render(request, realm, STATUS_PAGE, {
        "header": Message("oauth2DeviceVerificationFailedHeader"), "message": Message(key), "is_error": True,
        "retry_url": page_url(realm.name)}, status=400)


def _refuse(request, realm, user_code, message, reason, client_id=""):
    emit(realm, "OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR", client_id=client_id, ip_address=client_address(request),
         error="invalid_oauth2_user_code", details={"reason": reason})
    return user_code_page(request, realm, user_code=user_code, error=message, status=400)


def verify_user_code(request, realm_name, user_code):
    """The POST of the user-code page: the code's sign-in, or the page again with Keycloak's message."""
    realm_config = realm_data.get_realm(realm_name)
    realm = realm_config.realm
    normalized = device.normalize(user_code or "")
    if not normalized:
        return _refuse(request, realm, user_code, INVALID, "missing user code")
    row = DeviceAuthorization.objects.filter(realm=realm, user_code_digest=device.digest(normalized)).first()
    if row is None:
        return _refuse(request, realm, user_code, INVALID, "device code not found (it may already have been used)")
    client = realm_config.client_by_pk(row.client_id)
    client_id = client.client_id if client is not None else ""
    if row.state == DeviceAuthorization.DENIED:
        return _refuse(request, realm, user_code, INVALID, "device code denied", client_id)
    if row.state != DeviceAuthorization.PENDING:
        return _refuse(request, realm, user_code, INVALID, "device code already used and not yet deleted", client_id)
    if row.expires_at <= timezone.now():
        return _refuse(request, realm, user_code, EXPIRED, "device code expired", client_id)
    if client is None or not client.enabled or not device.grant_enabled(client):
        return _refuse(request, realm, user_code, "oauth2DeviceAuthorizationGrantDisabledMessage",
                       "client not allowed", client_id)
    emit(realm, "OAUTH2_DEVICE_VERIFY_USER_CODE", client_id=client_id, ip_address=client_address(request),
         details={"scope": row.scope})
    auth_session = auth_sessions.start(request, realm, client, protocol=PROTOCOL, client_data={
        "device": row.digest, "scope": row.scope, "issuer": realm_url(request, realm.name)})
    auth_session.binding = flows.BROWSER
    return engine.advance(request, realm, client, auth_session)


# The completion of the sign-in (the engine's login protocol) --------------------------------------

def _complete(ctx, user_session):
    data = ctx.auth_session.client_data
    code_digest = data["device"]
    row = DeviceAuthorization.objects.filter(pk=code_digest).only("state", "expires_at").first()
    if row is None or row.state != DeviceAuthorization.PENDING or row.expires_at <= timezone.now():
        return HttpResponseRedirect(status_url(ctx.realm.name, EXPIRED_TOKEN))
    client_config = get_realm(ctx.realm.name).client(ctx.client.client_id)
    scopes = consent.shown_scopes(client_config, data["scope"])
    consent_detail = "no_consent_required"
    if consent.was_asked(ctx.auth_session) and ctx.request.method == "POST":
        if ctx.request.POST.get("consent") != "accept":
            return _deny(ctx, code_digest)
        consent.grant(ctx.realm, ctx.user, ctx.client, scopes, ctx.ip_address)
        consent_detail = "consent_granted"
    elif scopes:
        if consent.not_granted(ctx.user, ctx.client, scopes):
            return consent.ask(ctx, user_session, scopes)
        consent_detail = "persistent_consent"
    client_session = sessions.get_or_create_client_session(user_session, ctx.client, scope=data["scope"], notes={
        # Back-channel logout runs without a request; it signs with the issuer the client knows.
        ISSUER_NOTE: data["issuer"],
        SSO_AUTH: "true" if ctx.auth_session.notes.get(SSO_AUTH) == "true" else None,
        "acr": _acr(ctx),
    })
    sessions.touch(user_session, client_session)
    if not device.approve(code_digest, user_session):
        return HttpResponseRedirect(status_url(ctx.realm.name, EXPIRED_TOKEN))
    emit(ctx.realm, "LOGIN", client_id=ctx.client.client_id, user_id=ctx.user.pk, session_id=user_session.pk,
         ip_address=ctx.ip_address, details={"auth_method": "openid-connect", "auth_type": "device",
                                              "username": ctx.user.username, "consent": consent_detail,
                                              "code_id": code_digest[:16]})
    return HttpResponseRedirect(status_url(ctx.realm.name))


def _acr(ctx):
    """The level this sign-in reached (without levels in the flow: "0" from the SSO cookie,
    "1" signed in), by the name the realm maps to it."""
    level = loa.current_level(ctx.auth_session)
    if level < loa.MINIMUM_LOA:
        level = 0 if ctx.auth_session.notes.get(SSO_AUTH) == "true" else 1
    return loa.acr_for(level, loa.acr_loa_map(ctx.realm, ctx.client), ctx.auth_session.notes.get(loa.ACR_VALUES, []))


def _deny(ctx, code_digest):
    denied = device.deny(code_digest)
    emit(ctx.realm, "LOGIN_ERROR", client_id=ctx.client.client_id, user_id=ctx.auth_session.user_id,
         ip_address=ctx.ip_address, error="consent_denied", details={"code_id": code_digest[:16]})
    return HttpResponseRedirect(status_url(ctx.realm.name, ACCESS_DENIED if denied else EXPIRED_TOKEN))


def _fail(ctx, error):
    emit(ctx.realm, "LOGIN_ERROR", client_id=ctx.client.client_id, user_id=ctx.auth_session.user_id,
         ip_address=ctx.ip_address, error=error or SERVER_ERROR)
    return HttpResponseRedirect(status_url(ctx.realm.name, SERVER_ERROR))


def register():
    """The device grant at the token endpoint and the device sign-in's completion; called once
    from ``OidcConfig.ready``."""
    device.register_grant_type()
    engine.register_protocol(PROTOCOL, _complete, _fail, listed=False)

