"""The broker (Keycloak's ``/realms/{realm}/broker/{alias}/...``): sends a sign-in to an identity
provider, takes the provider's answer, and joins the result to the realm's flows.

* ``begin`` records a ``BrokerRequest`` in the authentication session and answers the type's
  redirect. The state sent is ``{random}.{tab id}.{client id}``: the answer finds its sign-in by
  the browser's AUTH_SESSION_ID cookie and that tab, and the whole state must equal the one kept
  (compared in constant time, used once).
* ``endpoint`` is where the provider answers. A user already linked to the provider's account
  signs in (mappers run as the sync mode says), then the provider's post broker login flow, if it
  names one. Anyone else goes through first broker login (the provider's flow or the realm's),
  whose end (``_first_broker_login_done``) links the user, runs the importing mappers and moves on
  to the post broker login flow. A sign-in in link mode (the ``idp_link`` action) links the
  identity to the signed-in user instead.
* A provider's error is shown on our login page (``BROKER_ERROR``), never passed on raw.
"""
import logging
import secrets
from dataclasses import asdict
from urllib.parse import urlencode

from django.http import Http404, HttpResponseRedirect
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from ..audit import events
from ..data import crypto, realm_cache
from ..http import messages, themes
from ..http.messages import Message
from ..http.web import client_address, realm_url
from ..models import FederatedIdentity
from ..signin import engine
from ..signin.flows import BROWSER, FIRST_BROKER_LOGIN, Outcome
from ..sso import auth_sessions
from . import context, mappers
from .providers import BrokerError, BrokerRequest, get_provider_type

logger = logging.getLogger("idp.broker")

POST_BROKER_LOGIN = "post_broker_login"  # the binding of a provider's post broker login flow
BROKER_REQUEST = "BROKER_REQUEST"  # the trip to the provider under way
LINK_USER = "BROKER_LINK_USER"  # link mode: the user the identity is linked to
REGISTERED_NEW_USER = "BROKER_REGISTERED_NEW_USER"  # Keycloak's note: first broker login created the user
OVERRIDE_LINK = "OVERRIDE_LINK"  # Keycloak's note: the person confirmed replacing the user's link to the provider
BROKER_ERROR = "BROKER_ERROR"  # [message key, provider name]: the login page's text after a provider's error
# The SSO session's notes naming the provider it came through (Keycloak's).
SESSION_IDP, SESSION_IDP_IDENTITY = "identity_provider", "identity_provider_identity"
# What the protocol that started the sign-in asked for: the provider to go to (``kc_idp_hint``),
# and what a provider may be told (OIDC sets them).
IDP_HINT_NOTE, PROMPT_NOTE, MAX_AGE_NOTE = "kc_idp_hint", "prompt", "max_age"
EXPIRED = Message("expiredActionMessage")


def endpoint_url(request, realm, alias):
    return f"{realm_url(request, realm.name)}/broker/{alias}/endpoint"


def login_url(ctx, idp):
    """The login page's link to sign in with ``idp`` (Keycloak's ``broker/{alias}/login``)."""
    query = urlencode({"client_id": ctx.client.client_id, "tab_id": ctx.auth_session.tab_id})
    return f"/realms/{ctx.realm.name}/broker/{idp.alias}/login?{query}"


def visible_providers(realm):
    """The providers the login page offers, in GUI order then alias (Keycloak's order)."""
    shown = [idp for idp in context.identity_providers(realm).values()
             if idp.enabled and not idp.hide_on_login and not idp.link_only and get_provider_type(idp.provider_id)]
    return sorted(shown, key=lambda idp: (idp.gui_order, idp.alias))


def _page(request, realm, message, status=400):
    return themes.render(request, realm, "error.html", {"message": message}, status=status)


def begin(request, realm, client, auth_session, idp, *, link_user=None):
    """Send this sign-in to ``idp``: the redirect to the provider, with the authentication
    session saved. ``link_user``: the identity the provider proves is linked to this user."""
    provider_type = get_provider_type(idp.provider_id)
    if provider_type is None or not idp.enabled:
        return _page(request, realm, Message("identityProviderNotFoundMessage"))
    notes = auth_session.notes
    broker = BrokerRequest(
        alias=idp.alias, state=f"{secrets.token_urlsafe(24)}.{auth_session.tab_id}.{client.client_id}",
        redirect_uri=endpoint_url(request, realm, idp.alias), prompt=notes.get(PROMPT_NOTE, ""),
        max_age=str(notes.get(MAX_AGE_NOTE, "")), login_hint=auth_session.login_hint,
        locale=messages.locale_for(request, realm, auth_session=auth_session))
    try:
        response = provider_type.login(request, realm, idp, broker)
    except BrokerError as exc:
        logger.warning("realm %s: identity provider %s: %s", realm.name, idp.alias, exc.detail or exc.error)
        return _page(request, realm, Message(exc.message_key))
    notes[BROKER_REQUEST] = asdict(broker)
    notes.pop(BROKER_ERROR, None)
    if link_user is not None:
        notes[LINK_USER] = link_user.pk
    auth_sessions.save(auth_session, realm)
    return auth_sessions.set_cookie(response, request, realm, auth_session)


def _sign_in(request, realm_name, tab_id):
    """(realm, client, auth session) of a sign-in in this browser, or (realm, None, error page)."""
    config = realm_cache.get_realm(realm_name)
    realm = config.realm
    auth_session = auth_sessions.load(request, realm, tab_id)
    client = auth_session and config.client_by_pk(auth_session.client_pk)
    if auth_session is None or client is None or not client.enabled:
        return realm, None, _page(request, realm, EXPIRED)
    return realm, client, auth_session


@require_http_methods(["GET"])
def login(request, realm, alias):
    """The login page's button: ``?client_id=&tab_id=``."""
    realm_obj, client, auth_session = _sign_in(request, realm, request.GET.get("tab_id", ""))
    if client is None:
        return auth_session
    idp = context.identity_provider(realm_obj, alias)
    if idp is None or idp.link_only or client.client_id != request.GET.get("client_id", client.client_id):
        return _page(request, realm_obj, Message("identityProviderNotFoundMessage"))
    return begin(request, realm_obj, client, auth_session, idp)


def _provider(realm_name, alias):
    realm = realm_cache.get_realm(realm_name).realm
    idp = context.identity_provider(realm, alias)
    provider_type = get_provider_type(idp.provider_id) if idp is not None and idp.enabled else None
    if provider_type is None:
        raise Http404("unknown identity provider")
    return realm, idp, provider_type


@csrf_exempt  # a provider's answer (a SAML POST) carries its own signed proof, not our CSRF token
@require_http_methods(["GET", "POST"])
def endpoint(request, realm, alias, rest=""):
    realm_obj, idp, provider_type = _provider(realm, alias)
    if rest == "logout_response":
        return _logout_response(request, realm_obj)
    answer = provider_type.endpoint(request, realm_obj, idp, rest)
    if answer is not None or rest:
        if answer is None:
            raise Http404("no such broker endpoint")
        return answer
    state = provider_type.state_of(request) or ""
    parts = state.split(".", 2)  # the client id may hold dots (a SAML entity id, a URL)
    realm_obj, client, auth_session = _sign_in(request, realm, parts[1] if len(parts) == 3 else "")
    if client is None:
        return auth_session
    kept = auth_session.notes.pop(BROKER_REQUEST, None)
    if not kept or kept["alias"] != idp.alias or not crypto.constant_time_equals(kept["state"], state):
        return _page(request, realm_obj, EXPIRED)
    broker = BrokerRequest(**kept)
    try:
        identity = provider_type.authenticated(request, realm_obj, idp, broker)
    except BrokerError as exc:
        return _failed(request, realm_obj, client, auth_session, idp, exc)
    return authenticated(request, realm_obj, client, auth_session, idp, identity)


def _failed(request, realm, client, auth_session, idp, exc):
    """A provider's error or an answer that proves nothing: logged and recorded, and the sign-in
    starts again at the login page, which shows what went wrong in the person's words."""
    logger.info("realm %s: identity provider %s refused the sign-in: %s", realm.name, idp.alias,
                exc.detail or exc.error)
    events.emit(realm, "IDENTITY_PROVIDER_LOGIN_ERROR", client_id=client.client_id, error=exc.error,
                ip_address=client_address(request), details={"identity_provider": idp.alias})
    linking = auth_session.notes.pop(LINK_USER, None)
    auth_session.notes[BROKER_ERROR] = [exc.message_key, idp.display_name or idp.alias]
    if not linking:
        engine.switch_flow(auth_session, BROWSER)
        auth_session.user_id, auth_session.auth_methods = "", []
    return engine.advance(request, realm, client, auth_session, is_action=bool(linking))


def _run_mappers(realm, idp, step, *args):
    for mapper in idp.mappers.all():
        mapper_type = mappers.get_mapper_type(mapper.mapper_type)
        if mapper_type is None or not mapper_type.applies_to(idp.provider_id):
            logger.warning("realm %s: identity provider %s: mapper %r of type %s is not available here",
                           realm.name, idp.alias, mapper.name, mapper.mapper_type)
            continue
        if step == "update":
            mode = mappers.sync_mode(idp, mapper)
            if mode == idp.FORCE:
                mapper_type.update_brokered_user(realm, idp, mapper, *args)
            elif mode == idp.LEGACY:
                mapper_type.update_brokered_user_legacy(realm, idp, mapper, *args)
        else:
            getattr(mapper_type, step)(realm, idp, mapper, *args)


def login_details(user_session):
    """The LOGIN event's details of a session that came through an identity provider (Keycloak's)."""
    notes = user_session.notes or {}
    return {SESSION_IDP: notes[SESSION_IDP], SESSION_IDP_IDENTITY: notes.get(SESSION_IDP_IDENTITY, "")} \
        if notes.get(SESSION_IDP) else {}


def _signed_in_through(auth_session, idp, identity):
    """What the SSO session keeps of the provider (its logout needs it)."""
    auth_session.notes[engine.USER_SESSION_NOTES] = {
        SESSION_IDP: idp.alias, SESSION_IDP_IDENTITY: context.stored_username(idp, identity), **identity.session_notes}


def _keep_token(idp, link, identity):
    token = crypto.encrypt(identity.token) if idp.store_token and identity.token else ""
    username = context.stored_username(idp, identity)
    if token or link.user_name != username:
        link.token, link.user_name = token or link.token, username
        link.save(update_fields=["token", "user_name"])


def authenticated(request, realm, client, auth_session, idp, identity):
    """The provider proved ``identity``: sign in its linked user, link it (link mode), or run
    first broker login."""
    _run_mappers(realm, idp, "preprocess", identity)
    link = FederatedIdentity.objects.select_related("user").filter(identity_provider=idp, subject=identity.id).first()
    link_user = auth_session.notes.pop(LINK_USER, None)
    if link_user:
        return _link_to_signed_in_user(request, realm, client, auth_session, idp, identity, link, link_user)
    if link is not None:
        user = link.user
        _keep_token(idp, link, identity)
        if user.enabled:
            if idp.sync_mode == idp.FORCE:
                _update_basic_profile(user, identity)
            _run_mappers(realm, idp, "update", user, identity)
        ctx = engine.AuthContext(request, realm, client, auth_session)
        ctx.set_user(user)
        _signed_in_through(auth_session, idp, identity)
        engine.switch_flow(auth_session, POST_BROKER_LOGIN, idp.post_broker_login_flow_alias)
        return engine.advance(request, realm, client, auth_session)
    if idp.link_only:
        return _failed(request, realm, client, auth_session, idp, BrokerError("identityProviderLinkOnlyMessage",
                                                                               "identity_provider_link_only"))
    context.keep(auth_session, idp, identity)
    auth_session.user_id = ""
    engine.switch_flow(auth_session, FIRST_BROKER_LOGIN, idp.first_broker_login_flow_alias or realm.first_broker_login_flow)
    return engine.advance(request, realm, client, auth_session)


def _update_basic_profile(user, identity):
    """Sync mode FORCE: the user's e-mail and names follow the provider's on every sign-in."""
    changed = [name for name, value in (("email", identity.email.lower()), ("first_name", identity.first_name),
                                        ("last_name", identity.last_name))
               if value and getattr(user, name) != value]
    for name in changed:
        setattr(user, name, getattr(identity, name).lower() if name == "email" else getattr(identity, name))
    if "email" in changed:
        user.email_verified = identity.email_verified
        changed.append("email_verified")
    if changed:
        user.save(update_fields=changed)


def _link_to_signed_in_user(request, realm, client, auth_session, idp, identity, link, user_id):
    """Link mode (the ``idp_link`` action): the identity joins the signed-in user, unless another
    user has it already; the action then goes on (its page answers)."""
    if link is not None and link.user_id != user_id:
        auth_session.notes[LINK_USER] = user_id  # still link mode: the action shows the refusal
        return _failed(request, realm, client, auth_session, idp,
                       BrokerError("identityProviderAlreadyLinkedMessage", "federated_identity_already_linked"))
    if link is None:
        ctx = engine.AuthContext(request, realm, client, auth_session)
        if ctx.user is None or ctx.user.pk != user_id:
            return _page(request, realm, EXPIRED)
        FederatedIdentity.objects.filter(identity_provider=idp, user=ctx.user).delete()  # relinked to a new account
        context.link(realm, idp, ctx.user, identity, client_id=client.client_id, ip_address=client_address(request))
    return engine.advance(request, realm, client, auth_session, is_action=True)


def _first_broker_login_done(ctx):
    """First broker login succeeded: link the user it found or created, run the importing
    mappers for a new user, then the provider's post broker login flow."""
    idp, identity = context.brokered(ctx)
    if idp is None:
        return Outcome.failure("identity_provider_error")
    user = ctx.user
    existing = FederatedIdentity.objects.filter(identity_provider=idp, subject=identity.id).first()
    if existing is not None and existing.user_id != user.pk:
        return Outcome.failure("federated_identity_already_linked")
    previous = FederatedIdentity.objects.filter(identity_provider=idp, user=user).exclude(subject=identity.id).first()
    if previous is not None:
        # The account is linked to another account at this provider: replaced only when the
        # person confirmed it (idp-confirm-override-link), else Keycloak's unexpected-error page.
        if ctx.auth_session.notes.get(OVERRIDE_LINK) != "true":
            return Outcome.failure("federated_identity_already_linked", _page(ctx.request, ctx.realm, Message(
                "identityProviderUnexpectedErrorMessage")))
        previous.delete()
        events.emit(ctx.realm, "FEDERATED_IDENTITY_OVERRIDE_LINK", client_id=ctx.client.client_id, user_id=user.pk,
                    ip_address=ctx.ip_address, details={"identity_provider": idp.alias,
                                                        "previous_identity_provider_identity": previous.user_name})
    if existing is None:
        context.link(ctx.realm, idp, user, identity, client_id=ctx.client.client_id, ip_address=ctx.ip_address)
    if ctx.auth_session.notes.get(REGISTERED_NEW_USER) == "true":
        _run_mappers(ctx.realm, idp, "import_new_user", user, identity)
        if idp.add_read_token_role_on_create:
            _grant_read_token(ctx.realm, user)
        # Keycloak's REGISTER of a user first broker login created (register method "broker").
        events.emit(ctx.realm, "REGISTER", client_id=ctx.client.client_id, user_id=user.pk, ip_address=ctx.ip_address,
                    details={"register_method": "broker", "identity_provider": idp.alias, "username": user.username,
                             "identity_provider_identity": context.stored_username(idp, identity),
                             **({"email": user.email} if user.email else {})})
    else:
        _run_mappers(ctx.realm, idp, "update", user, identity)
    _signed_in_through(ctx.auth_session, idp, identity)
    ctx.auth_session.notes.pop(context.BROKERED, None)
    engine.switch_flow(ctx.auth_session, POST_BROKER_LOGIN, idp.post_broker_login_flow_alias)
    return Outcome.success()


def _grant_read_token(realm, user):
    """``addReadTokenRoleOnCreate``: the new user may read their stored tokens (the broker
    client's ``read-token`` role)."""
    from ..models import Role

    role = Role.objects.filter(realm=realm, client__client_id="broker", name="read-token").first()
    if role is not None:
        user.roles.add(role)


def stored_token(realm, alias, user):
    """(body, content type) of the token ``alias`` gave ``user`` at their last sign-in, or a
    ``BrokerError`` naming Keycloak's refusal (the broker's ``token`` endpoint answers it)."""
    idp = context.identity_provider(realm, alias)
    provider_type = get_provider_type(idp.provider_id) if idp is not None and idp.enabled else None
    if provider_type is None:
        raise BrokerError(error="not_found", detail="Identity Provider [%s] not found." % alias)
    if not idp.store_token:
        raise BrokerError(error="invalid_request", detail="Identity Provider [%s] does not support this operation." % alias)
    link = FederatedIdentity.objects.filter(identity_provider=idp, user=user).first()
    if link is None or not link.token:
        raise BrokerError(error="invalid_request",
                          detail="User [%s] is not associated with identity provider [%s]." % (user.pk, alias))
    return provider_type.stored_token(idp, crypto.decrypt(link.token))


# Logout ---------------------------------------------------------------------------------------

_LOGOUT_KEY = "idp:broker-logout:"


def logout_redirect(request, realm, user_session, next_url):
    """When ``user_session`` came through a provider with a front-channel logout: the URL that
    ends the provider's session too and then sends the browser to ``next_url`` (our own logout's
    end; "" for the logged-out page). "" when there is nothing to end there."""
    notes = user_session.notes or {}
    idp = context.identity_provider(realm, notes.get(SESSION_IDP, ""))
    provider_type = get_provider_type(idp.provider_id) if idp is not None and idp.enabled else None
    if provider_type is None:
        return ""
    from django.core.cache import cache

    state = secrets.token_urlsafe(24)
    return_url = f"{endpoint_url(request, realm, idp.alias)}/logout_response?" + urlencode({"state": state})
    url = provider_type.logout_url(request, realm, idp, notes, return_url)
    if url:
        cache.set(_LOGOUT_KEY + state, next_url, 600)
    return url


def _logout_response(request, realm):
    """The provider's logout came back: on to where our logout was going."""
    from django.core.cache import cache

    state = request.GET.get("state") or request.POST.get("RelayState", "")
    next_url = cache.get(_LOGOUT_KEY + state) if state else None
    if next_url is None:
        return _page(request, realm, EXPIRED)
    cache.delete(_LOGOUT_KEY + state)
    return HttpResponseRedirect(next_url) if next_url else themes.render(request, realm, "logged-out.html")


def _session_ended(sender, user_session, reason="", **kwargs):
    """An SSO session that came through a provider ended: the provider is told server to server
    when its config says it can be."""
    notes = user_session.notes or {}
    if reason != "logout" or not notes.get(SESSION_IDP):
        return
    realm = user_session.realm
    idp = context.identity_provider(realm, notes[SESSION_IDP])
    provider_type = get_provider_type(idp.provider_id) if idp is not None and idp.enabled else None
    if provider_type is not None and idp.config.get("backchannelSupported") == "true":
        try:
            provider_type.backchannel_logout(realm, idp, notes)
        except BrokerError as exc:
            logger.warning("realm %s: back-channel logout at %s failed: %s", realm.name, idp.alias,
                           exc.detail or exc.error)


def register():
    """Called from RealmsConfig.ready."""
    from ..sso import sessions

    engine.register_flow_end(FIRST_BROKER_LOGIN, _first_broker_login_done)
    sessions.session_ended.connect(_session_ended, dispatch_uid="broker-backchannel-logout")
