"""Login actions: the sign-in pages post back here, whatever protocol started the sign-in
(Keycloak's ``/realms/<realm>/login-actions/...``). The protocol answers at the end through the
completion it registered with ``realms.signin.flows.register_protocol``."""
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from ..audit import events
from ..data import realm_cache
from ..data.builtins import ACCOUNT_CLIENT
from ..http import action_tokens, admission, themes
from ..http.messages import Message
from ..http.web import client_address
from ..models import User
from ..sso import auth_sessions
from ..users import organizations
from . import engine, flows
from .required_actions import update_email
from .steps.reset_credentials import EMAIL_VERIFIED_NOTE

EXPIRED = Message("expiredActionMessage")
_NOT_ALLOWED = {"registration_allowed": "registrationNotAllowedMessage",
                "reset_password_allowed": "resetCredentialNotAllowedMessage"}


def _load(request, realm):
    """(realm, client, auth session) of the tab in the query, or an error page."""
    config = realm_cache.get_realm(realm)  # 404 for an unknown or disabled realm
    realm_obj = config.realm
    auth_session = auth_sessions.load(request, realm_obj, request.GET.get("tab", ""))
    # The cached row, whose ``realm`` is the cached realm: completions read realm settings
    # through the client without another query.
    client = auth_session and config.client_by_pk(auth_session.client_pk)
    if auth_session is None or client is None or not client.enabled:
        return realm_obj, None, themes.render(request, realm_obj, "error.html", {"message": EXPIRED}, status=400)
    return realm_obj, client, auth_session


# What a form posted back is, for the realm's admission limits, and the event a refusal records.
_ADMISSION = {flows.REGISTRATION: (admission.REGISTRATION, "REGISTER_ERROR"),
              flows.RESET_CREDENTIALS: (admission.RESET, "RESET_PASSWORD_ERROR")}


@require_http_methods(["GET", "POST"])
def authenticate(request, realm):
    realm_obj, client, auth_session = _load(request, realm)
    if client is None:
        return auth_session
    if request.method == "POST":  # what a person or a script submits: credentials, a new account
        surface, event = _ADMISSION.get(auth_session.binding, (admission.LOGIN, "LOGIN_ERROR"))
        try:
            admission.admit(request, realm_obj, surface)
        except admission.RateLimited as exc:
            events.emit(realm_obj, event, client_id=client.client_id, ip_address=client_address(request),
                        error=admission.ERROR)
            page = _message(request, realm_obj, "tooManyRequestsMessage", status=429)
            page["Retry-After"] = str(exc.retry_after)
            return page
    return engine.advance(request, realm_obj, client, auth_session, is_action=request.method == "POST")


def _switch(binding, allowed=None):
    """The login page's links: the same sign-in, now running ``binding`` from its start."""

    @require_http_methods(["GET"])
    def view(request, realm):
        realm_obj, client, auth_session = _load(request, realm)
        if client is None:
            return auth_session
        if allowed is not None and not getattr(realm_obj, allowed):
            return _message(request, realm_obj, _NOT_ALLOWED[allowed], status=403)
        engine.switch_flow(auth_session, binding)
        auth_session.user_id, auth_session.auth_methods = "", []
        return engine.advance(request, realm_obj, client, auth_session)

    return view


registration = _switch(flows.REGISTRATION, "registration_allowed")
reset_credentials = _switch(flows.RESET_CREDENTIALS, "reset_password_allowed")
restart = _switch(flows.BROWSER)


def _message(request, realm, key, status=200, **context):
    return themes.render(request, realm, "info.html", {"message_key": key, "is_error": status >= 400, **context},
                         status=status)


@require_http_methods(["GET", "POST"])
def action_token(request, realm):
    """An e-mailed link (Keycloak's ``login-actions/action-token?key=``): checked, used once,
    and carried out. A GET only shows what the link does: mail scanners that open links must
    not use them up; the page's button (a POST) does."""
    config = realm_cache.get_realm(realm)
    realm_obj = config.realm
    key = request.GET.get("key", "")
    try:
        claims = action_tokens.verify(realm_obj, key, request)
    except action_tokens.ExpiredToken:
        return _message(request, realm_obj, "expiredActionTokenNoSessionMessage", status=400)
    except action_tokens.InvalidToken:
        return _message(request, realm_obj, "invalidCodeMessage", status=400)
    if claims["typ"] == action_tokens.ORG_INVITE:
        return _organization_invitation(request, config, realm_obj, claims)
    if action_tokens.handler(claims["typ"]) is not None:
        return action_tokens.handler(claims["typ"])(request, realm_obj, claims)
    user = User.objects.filter(realm=realm_obj, pk=claims["sub"]).first()
    client = config.client(claims.get("azp") or ACCOUNT_CLIENT)
    if user is None or not user.enabled or client is None or not client.enabled:
        return _message(request, realm_obj, "invalidCodeMessage", status=400)
    typ = claims["typ"]
    if typ == action_tokens.VERIFY_EMAIL and user.email.lower() != str(claims.get("eml", "")).lower():
        return _message(request, realm_obj, "invalidCodeMessage", status=400)
    if typ == action_tokens.UPDATE_EMAIL:
        # Checked on the page and on its button (the address may have been taken meanwhile);
        # a refused link stays unused.
        problem = update_email.check(realm_obj, user, claims)
        if problem:
            return _message(request, realm_obj, problem, status=400)
    if request.method == "GET":
        actions = claims.get("rqac") or [{"verify-email": "VERIFY_EMAIL", "reset-credentials": "UPDATE_PASSWORD",
                                          "update-email": "UPDATE_EMAIL"}[typ]]
        return themes.render(request, realm_obj, "login-action-token.html", {
            "actions": [f"requiredAction.{a}" for a in actions], "action_url": request.get_full_path()})
    try:
        action_tokens.consume(claims)
    except action_tokens.ExpiredToken:
        return _message(request, realm_obj, "expiredActionTokenNoSessionMessage", status=400)
    original = original_session(request, realm_obj, claims)
    ip = client_address(request)
    if typ == action_tokens.UPDATE_EMAIL:
        if claims.get("logoutSessions"):
            update_email.logout_other_sessions(request, realm_obj, user)
        update_email.change_now(realm_obj, user, str(claims["newEmail"]).lower(), client_id=client.client_id,
                                ip_address=ip, verified=True)
        if original is not None and original.user_id == user.pk:
            original.notes[update_email.CONFIRMED_NOTE] = user.email
            return engine.advance(request, realm_obj, client, original)
        return _message(request, realm_obj, Message("emailUpdated", user.email), back_url=claims.get("reduri", ""),
                        message_header="emailUpdatedTitle")
    if typ == action_tokens.VERIFY_EMAIL:
        user.email_verified = True
        user.required_actions = [a for a in user.required_actions if a != "VERIFY_EMAIL"]
        user.save(update_fields=["email_verified", "required_actions"])
        events.emit(realm_obj, "VERIFY_EMAIL", client_id=client.client_id, user_id=user.pk, ip_address=ip,
                    details={"email": user.email, "action": typ})
        if original is not None and original.user_id == user.pk:
            return engine.advance(request, realm_obj, client, original)
        return _message(request, realm_obj, "emailVerifiedMessage", back_url=claims.get("reduri", ""))
    if typ == action_tokens.RESET_CREDENTIALS:
        auth_session = original if original is not None and original.user_id == user.pk else _new_session(
            request, realm_obj, client, user, flows.RESET_CREDENTIALS, redirect_uri="")
        auth_session.notes[EMAIL_VERIFIED_NOTE] = user.pk
        return engine.advance(request, realm_obj, client, auth_session)
    auth_session = _new_session(request, realm_obj, client, user, flows.BROWSER,
                                redirect_uri=claims.get("reduri", ""))
    auth_session.flow_done = True  # the link stands for the sign-in: only the actions remain
    actions = list(claims.get("rqac") or ())
    if "VERIFY_EMAIL" in actions:
        # Following a link sent to the address proves it (as Keycloak's handler decides).
        actions.remove("VERIFY_EMAIL")
        user.email_verified = True
        user.required_actions = [a for a in user.required_actions if a != "VERIFY_EMAIL"]
        user.save(update_fields=["email_verified", "required_actions"])
    auth_session.required_actions = actions
    events.emit(realm_obj, "EXECUTE_ACTIONS", client_id=client.client_id, user_id=user.pk, ip_address=ip,
                details={"required_actions": ",".join(auth_session.required_actions)})
    return engine.advance(request, realm_obj, client, auth_session)


def _organization_invitation(request, config, realm, claims):
    """An organization's invitation: someone without an account registers (the address fixed
    to the invited one) and joins; an existing user joins with the page's button. Keycloak
    signs no one in for it: the user then signs in at the organization's redirect URL."""
    org = organizations.invited_organization(realm, claims)
    client = config.client(claims.get("azp") or ACCOUNT_CLIENT)
    if org is None or client is None or not client.enabled:
        return _message(request, realm, "invalidCodeMessage", status=400)
    if not claims.get("sub"):
        auth_session = auth_sessions.start(request, realm, client, protocol=engine.LOGIN_ACTIONS, client_data={})
        auth_session.binding = flows.REGISTRATION
        auth_session.notes[organizations.INVITE_NOTE] = organizations.invitation_note(claims)
        auth_session.notes[engine.REDIRECT_NOTE] = claims.get("reduri", "")
        return engine.advance(request, realm, client, auth_session)
    user = User.objects.filter(realm=realm, pk=claims["sub"]).first()
    if user is None or not user.enabled or user.email.lower() != str(claims.get("eml", "")).lower():
        return _message(request, realm, "invalidCodeMessage", status=400)
    page = {"org_name": org.name, "message_key": "orgInviteJoinMessage", "action_url": request.get_full_path()}
    if organizations.membership(org, user.pk):
        return themes.render(request, realm, "login-org-invite.html", {**page, "message_key": "orgInviteAlreadyMember",
                                                                       "action_url": ""})
    if request.method == "GET":
        return themes.render(request, realm, "login-org-invite.html", page)
    try:
        organizations.join(org, user, claims)
    except action_tokens.ExpiredToken:
        return _message(request, realm, "expiredActionTokenNoSessionMessage", status=400)
    events.emit(realm, "INVITE_ORG", client_id=client.client_id, user_id=user.pk, ip_address=client_address(request),
                details={"org_id": org.pk})
    return redirect(claims.get("reduri") or f"/realms/{realm.name}/account/")


def original_session(request, realm, claims):
    """The sign-in that sent the link, when this browser holds it (same AUTH_SESSION_ID)."""
    root_id, _, tab_id = str(claims.get("oasid", "")).partition(".")
    if not root_id or request.COOKIES.get(auth_sessions.COOKIE) != root_id:
        return None
    return auth_sessions.load(request, realm, tab_id)


def _new_session(request, realm, client, user, binding, *, redirect_uri):
    """A sign-in opened by the link in a browser that has none: it ends on the "account
    updated" page (with a link back to the application when the token names one)."""
    auth_session = auth_sessions.start(request, realm, client, protocol=engine.LOGIN_ACTIONS, client_data={})
    auth_session.binding = binding
    auth_session.user_id = user.pk
    auth_session.notes[engine.END_AFTER_ACTIONS] = "true"
    if redirect_uri:
        auth_session.notes[engine.REDIRECT_NOTE] = redirect_uri
    return auth_session

