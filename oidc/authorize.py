"""The authorization endpoint's protocol work (spec 1 §4, RFC 6749 §4.1, RFC 7636, OIDC Core §3.1).

Order matters: ``client_id`` and ``redirect_uri`` are checked first. Until the redirect URI is
known to be registered for the client, an error is shown on a page and never redirected
(RFC 6749 §4.1.2.1: otherwise the endpoint would be an open redirector). Every later error goes
back to the client as ``error``/``error_description``/``state`` on the redirect URI.

PKCE policy (docs/decisions/0007-pkce-policy.md): a public client must send a challenge (RFC
9700 §2.1.1), as must a client whose attribute ``pkce.code.challenge.method`` is set. The method
must be S256, except for a client whose attribute is ``plain`` (a client that cannot compute
SHA-256, spec 1 §4).

Response types and modes (OIDC Core §3.2, §3.3; OAuth 2.0 Multiple Response Types; JARM), as
Keycloak offers them: ``code``, and for a client with ``implicitFlowEnabled`` (off by default) the
implicit and hybrid types, which need a ``nonce`` in an OpenID request and are answered in the
fragment by default, never in the query. The ``*.jwt`` modes wrap the response's parameters in a
JWT signed with the realm's key (JARM); ``jwt`` is ``query.jwt`` or ``fragment.jwt`` by type.

Request objects and pushed requests (RFC 9101, RFC 9126; docs/decisions/0078): the parameters of
a ``request`` object, of one fetched from ``request_uri``, or of a pushed request replace the
query's before anything is checked; a failure there is shown on a page, since the redirect URI it
carries is not trusted yet. A client with ``require.pushed.authorization.requests`` is refused
any request that was not pushed.
"""
import base64
import hashlib
import json
import re
import secrets
import time
from dataclasses import asdict, dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.http import HttpResponseRedirect
from django.utils import timezone

from realms.audit import events
from realms.brokering import broker
from realms.http import messages, themes
from realms.http.messages import Message
from realms.http.redirects import is_valid_redirect_uri, with_params
from realms.http.web import base_url, client_address, realm_url
from realms.signin import engine, flows, loa
from realms.signin.flows import SSO_AUTH
from realms.sso import auth_sessions, sessions, sso_cookie

from . import client_metadata, client_policies, codes, consent, jose, request_object, resource_indicators, tokens
from .backchannel import ISSUER_NOTE
from .errors import AccessDenied, InvalidRequest, OAuthError, OidcError, UnauthorizedClient
from .mappers import CLAIMS_NOTE
from .realm_cache import get_realm

PROTOCOL = "openid-connect"
RESPONSE_MODES = ("query", "fragment", "form_post", "query.jwt", "fragment.jwt", "form_post.jwt", "jwt")
CODE, TOKEN, ID_TOKEN = "code", "token", "id_token"
# Every response type Keycloak answers, by its set of parts; written in this canonical order.
RESPONSE_TYPES = {frozenset(t.split()): t for t in (
    "code", "token", "id_token", "id_token token", "code id_token", "code token", "code id_token token")}
# RFC 7636 §4.2: BASE64URL-ENCODE(SHA256(verifier)) is exactly 43 characters; a plain
# challenge is a verifier: 43 to 128 unreserved characters.
_S256_CHALLENGE = re.compile(r"^[A-Za-z0-9\-_]{43}$")
_PLAIN_CHALLENGE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")


class UnsupportedResponseType(OAuthError):
    error = "unsupported_response_type"


class LoginRequired(OAuthError):
    error = "login_required"


class InteractionRequired(OAuthError):
    error = "interaction_required"


class UnmetAuthenticationRequirements(OAuthError):
    """OpenID Connect Unmet Authentication Requirements 1.0: an essential acr was not reached."""

    error = "unmet_authentication_requirements"


class AuthorizationFailure(OidcError):
    """An authorization request refused, in one of the two ways the protocol knows (RFC 6749
    §4.1.2.1); ``error_answer`` answers both."""


class UntrustedRequest(AuthorizationFailure):
    """Found before the redirect URI is trusted: shown to the user on a page (a ``Message`` of
    the login theme), never redirected."""

    def __init__(self, message, event_error="invalid_request"):
        super().__init__(message)
        self.message = message
        self.event_error = event_error


class AuthorizationError(AuthorizationFailure):
    """An OAuth error (``oauth_error``) sent back to the client on its trusted redirect URI."""

    def __init__(self, oauth_error, *, client, redirect_uri, state, response_mode="query"):
        super().__init__(oauth_error.description)
        self.oauth_error = oauth_error
        self.client = client
        self.redirect_uri = redirect_uri
        self.state = state
        self.response_mode = response_mode


@dataclass
class AuthorizationRequest:
    redirect_uri: str
    response_type: str
    response_mode: str
    scope: str
    state: str
    nonce: str
    code_challenge: str
    code_challenge_method: str
    prompt: list
    max_age: int | None
    login_hint: str
    idp_hint: str
    acr_values: list
    acr_essential: bool
    resource: tuple = ()  # RFC 8707, kept with the code
    claims: str = ""  # OIDC Core §5.5, the JSON as sent; kept in the client session for the mappers
    dpop_jkt: str = ""  # RFC 9449 §10: the DPoP key the code is bound to


def _single(params, name):
    values = params.getlist(name)
    if len(values) > 1:
        raise InvalidRequest(f"Duplicated parameter: {name}")
    return values[0] if values else ""


def registered_uris(client, request):
    """The client's redirect URIs, relative ones resolved against its root URL (``${authBaseUrl}``
    is this server), as Keycloak's RedirectUtils does for the built-in account clients."""
    root = (client.root_url or "").replace("${authBaseUrl}", base_url(request))
    return [root + uri if uri.startswith("/") and root else uri for uri in client.redirect_uris or ()]


def _trusted_client(realm_config, params, request=None):
    """(client config, redirect URI, the request's parameters, the request object's claims or
    None, whether it was pushed) once the client and redirect URI are known good, else
    UntrustedRequest."""
    for name in ("client_id", "redirect_uri"):
        if len(params.getlist(name)) > 1:
            raise UntrustedRequest(Message("duplicatedParameterMessage", name))
    client_id = params.get("client_id", "")
    if not client_id:
        raise UntrustedRequest(Message("missingParameterMessage", "client_id"))
    if client_metadata.is_candidate(client_id):  # a client id metadata document's URL, when enabled
        try:
            if client_metadata.ensure(realm_config.realm, client_id, params.get("redirect_uri", ""),
                                      client_address(request) if request is not None else ""):
                realm_config = get_realm(realm_config.realm.name)  # the row just written
        except client_metadata.MetadataRefused:
            raise UntrustedRequest(Message("invalidParameterMessage", "client_id"), "invalid_client") from None
    client_config = realm_config.client(client_id)
    if client_config is None:
        raise UntrustedRequest(Message("clientNotFoundMessage"), "client_not_found")
    client = client_config.client
    if not client.enabled:
        raise UntrustedRequest(Message("clientDisabledMessage"), "client_disabled")
    if client.protocol != PROTOCOL:
        raise UntrustedRequest(Message("wrongClientProtocolMessage"), "invalid_client")
    if client.bearer_only:
        raise UntrustedRequest(Message("bearerOnlyMessage"), "not_allowed")
    params, claims, pushed = _request_parameters(request, realm_config.realm, client, params)
    redirect_uri = params.get("redirect_uri", "")
    if not redirect_uri:
        raise UntrustedRequest(Message("missingParameterMessage", "redirect_uri"))
    if not is_valid_redirect_uri(registered_uris(client, request), redirect_uri):
        raise UntrustedRequest(Message("invalidParameterMessage", "redirect_uri"), "invalid_redirect_uri")
    return client_config, redirect_uri, params, claims, pushed


def _request_parameters(request, realm, client, params):
    """(parameters, request object claims or None, pushed): those of the pushed request, or of the
    request object merged over the query's (Keycloak's rule), else the query's own."""
    name = "request" if params.get("request") else "request_uri"
    try:
        token, request_uri = _single(params, "request"), _single(params, "request_uri")
        request_object.check_required(client, request=token, request_uri=request_uri)
        if request_uri.startswith(request_object.PUSHED_PREFIX):
            pushed, claims = request_object.take_pushed(realm, client, request_uri)
            return pushed, claims, True
        if request_uri:
            token = request_object.fetch_by_reference(client, request_uri)
        if not token:
            return params, None, False
        claims = request_object.verify(realm, client, realm_url(request, realm.name), token)
    except OAuthError as exc:
        raise UntrustedRequest(Message("invalidParameterMessage", name), exc.event_error) from exc
    return request_object.merged(params, claims), claims, False


def _pkce(client, params):
    challenge = _single(params, "code_challenge")
    method = _single(params, "code_challenge_method")
    required = client.pkce_method
    if not challenge:
        if method:
            raise InvalidRequest("Missing parameter: code_challenge")
        if required or client.public_client:
            raise InvalidRequest("Missing parameter: code_challenge_method" if not required
                                 else "Missing parameter: code_challenge")
        return "", ""
    method = method or codes.PLAIN  # RFC 7636 §4.3
    if method not in (codes.S256, codes.PLAIN):
        raise InvalidRequest("Invalid parameter: code_challenge_method")
    if method == codes.PLAIN and required != codes.PLAIN:
        raise InvalidRequest("Invalid parameter: code_challenge_method")
    pattern = _S256_CHALLENGE if method == codes.S256 else _PLAIN_CHALLENGE
    if not pattern.match(challenge):
        raise InvalidRequest("Invalid parameter: code_challenge")
    return challenge, method


def parse_request(client_config, params, redirect_uri) -> AuthorizationRequest:
    """Validate everything after the redirect URI; raises OAuthError (to be redirected)."""
    client = client_config.client
    for name in params:
        if len(params.getlist(name)) > 1 and name != resource_indicators.RESOURCE:  # RFC 8707: repeatable
            raise InvalidRequest(f"Duplicated parameter: {name}")
    response_type = _response_type(params)
    if response_type == CODE and not client.standard_flow_enabled:
        raise UnauthorizedClient("Client is not allowed to initiate browser login with given response_type. "
                                 "Standard flow is disabled for the client.")
    if response_type != CODE and not client.implicit_flow_enabled:
        raise UnauthorizedClient("Client is not allowed to initiate browser login with given response_type. "
                                 "Implicit flow is disabled for the client.")
    response_mode, mode_error = _response_mode(params)
    if mode_error is not None:
        raise mode_error
    scope = params.get("scope", "")
    scopes, openid = tokens.resolve_scopes(client_config, scope)  # raises InvalidScope for a scope the client lacks
    resources = resource_indicators.requested(params)
    resource_indicators.may_request(client_config, scopes, resources)
    # OIDC Core §3.2.2.1: an ID token from the front channel is bound to the request by its nonce;
    # a pure OAuth request for a bare access token needs none (Keycloak's rule).
    if response_type != CODE and not params.get("nonce") and (openid or response_type != TOKEN):
        raise InvalidRequest("Missing parameter: nonce")
    # PKCE binds a code to its redirect; without a code there is nothing to bind.
    challenge, method = _pkce(client, params) if CODE in response_type.split() else ("", "")
    prompt = [p for p in params.get("prompt", "").split() if p]
    if "none" in prompt and len(prompt) > 1:
        raise InvalidRequest("Invalid parameter: prompt")
    max_age = params.get("max_age", "")
    if max_age and not max_age.isdigit():
        raise InvalidRequest("Invalid parameter: max_age")
    acr_values, essential = _requested_acr(client, params)
    dpop_jkt = params.get("dpop_jkt", "")
    if dpop_jkt and not _S256_CHALLENGE.match(dpop_jkt):  # a JWK SHA-256 thumbprint (RFC 7638), base64url
        raise InvalidRequest("Invalid parameter: dpop_jkt")
    return AuthorizationRequest(
        redirect_uri=redirect_uri, response_type=response_type, response_mode=response_mode, scope=scope,
        state=params.get("state", ""), nonce=params.get("nonce", ""), code_challenge=challenge,
        code_challenge_method=method, prompt=prompt, max_age=int(max_age) if max_age else None,
        login_hint=params.get("login_hint", ""), idp_hint=params.get("kc_idp_hint", ""),
        acr_values=acr_values, acr_essential=essential, resource=tuple(resources),
        claims=params.get("claims", ""), dpop_jkt=dpop_jkt,
    )


def _requested_acr(client, params):
    """(acr values, essential) as Keycloak reads them (AcrUtils): the ``claims`` parameter's
    essential ``id_token.acr`` values; else ``acr_values`` and the claim's values, else the
    client's ``default.acr.values``."""
    claim = {}
    if params.get("claims"):
        try:
            claims = json.loads(params["claims"])
            claim = (claims.get("id_token") or {}).get("acr") or {}
        except (ValueError, AttributeError):
            raise InvalidRequest("Invalid parameter: claims") from None
        if not isinstance(claim, dict):
            raise InvalidRequest("Invalid parameter: claims")
    values = claim.get("values") or ([claim["value"]] if claim.get("value") else [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidRequest("Invalid parameter: claims")
    if values and claim.get("essential") is True:
        return values, True
    return params.get("acr_values", "").split() + values or loa.default_acr_values(client), False


def _response_type(params):
    value = params.get("response_type", "")
    if not value:
        raise InvalidRequest("Missing parameter: response_type")
    response_type = RESPONSE_TYPES.get(frozenset(value.split()))
    if response_type is None or len(value.split()) != len(response_type.split()):
        raise UnsupportedResponseType("Unsupported response_type")
    return response_type


def _response_mode(params):
    """(the mode to answer in, an InvalidRequest or None): the requested mode when it is allowed,
    else the default one (the fragment once a token comes from the front channel), in which the
    error then goes back."""
    requested = params.get("response_mode", "")
    front_channel = bool(set(params.get("response_type", "").split()) & {TOKEN, ID_TOKEN})
    default = "fragment" if front_channel else "query"
    if not requested:
        return default, None
    if requested == "jwt":
        return default + ".jwt", None
    if requested not in RESPONSE_MODES:
        return default, InvalidRequest("Invalid parameter: response_mode")
    if front_channel and requested.startswith("query"):
        # Tokens in a query string end up in logs and Referer headers (OAuth 2.0 Multiple
        # Response Types §3.0).
        return default, InvalidRequest(f"Response_mode '{requested}' not allowed for implicit or hybrid flow")
    return requested, None


def start_authorization(request, realm_name, params, binding=flows.BROWSER):
    """Answer an authorization request: the login page, a redirect with a code (SSO), or an
    error. Raises an AuthorizationFailure, which the view answers with ``error_answer``."""
    realm_config = get_realm(realm_name)
    realm = realm_config.realm
    front_channel = params
    try:
        client_config, redirect_uri, params, request_claims, pushed = _trusted_client(realm_config, params, request)
    except UntrustedRequest as exc:
        events.emit(realm, "LOGIN_ERROR", client_id=params.get("client_id", "")[:255],
                    ip_address=client_address(request), error=exc.event_error,
                    details={"redirect_uri": params.get("redirect_uri", "")[:2048]})
        raise
    client = client_config.client
    response_mode, _ = _response_mode(params)  # where errors go back
    state = params.get("state", "")
    try:
        if not pushed and (client.attributes or {}).get(request_object.PAR_REQUIRED) == "true":
            raise InvalidRequest("Pushed Authorization Request is only allowed.")
        authz = parse_request(client_config, params, redirect_uri)
        client_policies.enforce(client_policies.AUTHORIZATION_REQUEST, realm_config, client_config,
                                request=request, params=params, authz=authz, pushed=pushed,
                                request_object=request_claims, front_channel=front_channel)
    except OAuthError as exc:
        events.emit(realm, "LOGIN_ERROR", client_id=client.client_id, ip_address=client_address(request),
                    error=exc.event_error, details={"redirect_uri": redirect_uri, "reason": exc.description})
        raise AuthorizationError(exc, client=client, redirect_uri=redirect_uri, state=state,
                                 response_mode=response_mode) from exc

    loa_map = loa.acr_loa_map(realm, client)
    # Not essential: the client's minimum.acr.value holds (Keycloak's AcrUtils.enforceMinimumAcr).
    acr_values = authz.acr_values if authz.acr_essential else loa.enforce_minimum(authz.acr_values, client, loa_map)
    try:
        level = loa.requested_level(acr_values, loa_map, essential=authz.acr_essential)
    except loa.UnknownAcr:
        # An essential acr this realm names no level for can never be met: Keycloak refuses it too.
        raise AuthorizationError(InvalidRequest("Invalid parameter: claims"), client=client,
                                 redirect_uri=redirect_uri, state=state, response_mode=response_mode) from None
    # An application-initiated action (Keycloak's kc_action), run once the user is signed in.
    kc_action = (params.get(engine.KC_ACTION) or "")[:255]
    force_login = "login" in authz.prompt
    if authz.max_age is not None or kc_action:
        # Read here only when its sign-in time decides: the flow's cookie step reads it anyway.
        existing = sso_cookie.session_from_request(request, realm)
        if authz.max_age is not None and existing is not None:
            force_login = force_login or (timezone.now() - existing.auth_time).total_seconds() > authz.max_age
        force_login = force_login or engine.kc_action_needs_reauthentication(realm, kc_action, existing)
    auth_session = auth_sessions.start(
        request, realm, client, protocol=PROTOCOL, client_data=asdict(authz),
        force_login=force_login, login_hint=authz.login_hint,
    )
    if kc_action:
        auth_session.notes[engine.KC_ACTION] = kc_action
    auth_session.binding = binding
    if params.get("ui_locales"):
        auth_session.notes[messages.UI_LOCALES_NOTE] = params["ui_locales"][:255]
    # What an identity provider may be asked for: the hint chooses it, the rest is forwarded.
    if authz.idp_hint:
        auth_session.notes[broker.IDP_HINT_NOTE] = authz.idp_hint[:255]
    if authz.prompt:
        auth_session.notes[broker.PROMPT_NOTE] = " ".join(authz.prompt)
    if authz.max_age is not None:
        auth_session.notes[broker.MAX_AGE_NOTE] = str(authz.max_age)
    loa.request(auth_session, acr_values, level, essential=authz.acr_essential)
    return engine.advance(request, realm, client, auth_session, interactive="none" not in authz.prompt)


# Responses ---------------------------------------------------------------------------------------

def authorization_response(request, realm, client, *, redirect_uri, response_mode, params):
    issuer = realm_url(request, realm.name)
    params = {k: v for k, v in params.items() if v not in (None, "")}
    if response_mode.endswith(".jwt"):
        params = {"response": _jarm(realm, client, issuer, params)}
        response_mode = response_mode[:-len(".jwt")]
    else:
        params["iss"] = issuer  # RFC 9207 (JARM carries it inside the JWT)
    if response_mode == "form_post":
        return themes.render(request, realm, "form-post.html",
                             {"action": redirect_uri, "fields": list(params.items())})
    if response_mode == "fragment":
        parts = urlsplit(redirect_uri)
        return HttpResponseRedirect(urlunsplit((*parts[:4], urlencode(params))))
    return HttpResponseRedirect(with_params(redirect_uri, params))


def _jarm(realm, client, issuer, params):
    """JARM §2.1: the response parameters in a JWT for the client, signed with the realm's key for
    the client's ``authorization.signed.response.alg`` (else the realm's default algorithm)."""
    alg = client.attributes.get("authorization.signed.response.alg") or realm.default_signature_algorithm
    claims = {"iss": issuer, "aud": client.client_id, "exp": int(time.time()) + realm.access_code_lifespan,
              **params}
    kid, key = tokens.signer(realm, alg)
    return jose.sign(claims, alg=alg, key=key, kid=kid)


def error_answer(request, realm, exc: AuthorizationFailure):
    """The one answer to a refused authorization request: a page while the redirect URI is not
    trusted, else the OAuth error on the client's redirect URI in the request's response mode."""
    if isinstance(exc, UntrustedRequest):
        return error_page(request, realm, exc.message)
    return authorization_response(request, realm, exc.client, redirect_uri=exc.redirect_uri,
                                  response_mode=exc.response_mode,
                                  params={**exc.oauth_error.body(), "state": exc.state})


def error_page(request, realm, message, status=400):
    return themes.render(request, realm, "error.html", {"message": message}, status=status)


class ConsentRequired(OAuthError):
    error = "consent_required"


def _consent(ctx, user_session, data):
    """(response or None, LOGIN event's consent detail) for a client that requires consent:
    None once the scopes are granted; else the consent page or an error for the client."""
    scopes = consent.shown_scopes(get_realm(ctx.realm.name).client(ctx.client.client_id), data["scope"])
    if consent.was_asked(ctx.auth_session) and ctx.request.method == "POST":
        if ctx.request.POST.get("consent") == "accept":
            consent.grant(ctx.realm, ctx.user, ctx.client, scopes, ctx.ip_address)
            return None, "consent_granted"
        return _fail(ctx, "rejected_by_user"), ""
    missing = scopes if "consent" in data["prompt"] else consent.not_granted(ctx.user, ctx.client, scopes)
    if not missing:
        return None, "persistent_consent"
    if "none" in data["prompt"]:
        return _fail(ctx, "consent_required"), ""
    return consent.ask(ctx, user_session, scopes), ""


def _complete(ctx, user_session):
    """The user is signed in: consent if the client requires it, then a client session, a code,
    the LOGIN event, the redirect."""
    data = ctx.auth_session.client_data
    client = ctx.client
    consent_detail = "no_consent_required"
    if client.consent_required:
        response, consent_detail = _consent(ctx, user_session, data)
        if response is not None:
            return response
    acr, unmet = _acr(ctx)
    if unmet:
        return _fail(ctx, UnmetAuthenticationRequirements.error)
    client_session = sessions.get_or_create_client_session(
        user_session, client, redirect_uri=data["redirect_uri"], scope=data["scope"], notes={
            # Back-channel logout runs without a request; it signs with the issuer the client knows.
            ISSUER_NOTE: realm_url(ctx.request, ctx.realm.name),
            SSO_AUTH: "true" if ctx.auth_session.notes.get(SSO_AUTH) == "true" else None,
            "acr": acr,
            CLAIMS_NOTE: data.get("claims") or None,
        })
    sessions.touch(user_session, client_session)
    # Auth sessions started before response types were kept are code requests.
    parts = data.get("response_type", CODE).split()
    code = ""
    if CODE in parts:
        code = codes.issue_code(
            client=client, user_session=user_session, redirect_uri=data["redirect_uri"], scope=data["scope"],
            nonce=data["nonce"], code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"], resource=data.get("resource") or (),
            dpop_jkt=data.get("dpop_jkt", ""),
        )
    params = {"code": code, "state": data["state"], "session_state": user_session.pk,
              **engine.kc_action_params(ctx.auth_session)}
    if TOKEN in parts or ID_TOKEN in parts:
        params.update(_front_channel_tokens(ctx, user_session, client_session, data, code, parts))
    events.emit(ctx.realm, "LOGIN", client_id=client.client_id, user_id=ctx.user.pk, session_id=user_session.pk,
                ip_address=ctx.ip_address, details={
                    "auth_method": PROTOCOL, "auth_type": CODE if parts == [CODE] else "implicit",
                    "response_type": " ".join(parts),
                    "response_mode": data["response_mode"], "redirect_uri": data["redirect_uri"],
                    "username": ctx.user.username, "consent": consent_detail,
                    "code_id": user_session.pk, **broker.login_details(user_session),
                })
    return authorization_response(ctx.request, ctx.realm, client, redirect_uri=data["redirect_uri"],
                                  response_mode=data["response_mode"], params=params)


def _acr(ctx):
    """(the tokens' acr, whether an essential acr is unmet): the level this sign-in reached
    (without levels in the flow: "0" answered from the SSO cookie, "1" signed in), by the
    requested name mapped to it where there is one (Keycloak's AcrUtils.mapLoaToAcr)."""
    notes = ctx.auth_session.notes
    level = loa.current_level(ctx.auth_session)
    if level < loa.MINIMUM_LOA:
        level = 0 if notes.get(SSO_AUTH) == "true" else 1
    acr = loa.acr_for(level, loa.acr_loa_map(ctx.realm, ctx.client), notes.get(loa.ACR_VALUES, []))
    return acr, bool(notes.get(loa.ESSENTIAL)) and level < loa.requested(ctx.auth_session)


def _front_channel_tokens(ctx, user_session, client_session, data, code, parts):
    """The access and/or ID token an implicit or hybrid response carries."""
    realm_config = get_realm(ctx.realm.name)
    client_config = realm_config.client(ctx.client.client_id)
    scopes, openid = tokens.resolve_scopes(client_config, data["scope"])
    token_ctx = tokens.TokenContext(
        realm=ctx.realm, client_config=client_config, user=ctx.user, issuer=realm_url(ctx.request, ctx.realm.name),
        scopes=scopes, openid=openid, user_session=user_session, client_session=client_session,
        nonce=data["nonce"], acr=tokens.session_acr(client_session),
        roles=tokens.restricted_roles(client_config, realm_config.user_roles(ctx.user), scopes))
    return tokens.front_channel_response(token_ctx, code=code, access_token=TOKEN in parts,
                                         id_token=ID_TOKEN in parts)


_FLOW_ERRORS = {"login_required": LoginRequired, "interaction_required": InteractionRequired,
                "consent_required": ConsentRequired,
                UnmetAuthenticationRequirements.error: UnmetAuthenticationRequirements}
_FLOW_MESSAGES = {"rejected_by_user": "The user denied the consent"}


def _fail(ctx, error):
    data = ctx.auth_session.client_data
    exc_class = _FLOW_ERRORS.get(error)
    if exc_class is not None:
        oauth_error = exc_class("")
    else:
        oauth_error = AccessDenied(_FLOW_MESSAGES.get(error, "Sign-in could not be completed"))
    events.emit(ctx.realm, "LOGIN_ERROR", client_id=ctx.client.client_id, ip_address=ctx.ip_address,
                user_id=ctx.auth_session.user_id, error=error, details={"redirect_uri": data["redirect_uri"]})
    return error_answer(ctx.request, ctx.realm, AuthorizationError(
        oauth_error, client=ctx.client, redirect_uri=data["redirect_uri"], state=data["state"],
        response_mode=data["response_mode"]))


def register():
    """OIDC's sign-in completion; called from ``OidcConfig.ready``."""
    engine.register_protocol(PROTOCOL, _complete, _fail)


def account_sign_in_url(request, realm, redirect_uri, **params):
    """The authorization request that signs a browser in to the realm's ``account`` client
    (its console), coming back to ``redirect_uri`` (``realms.account.register_sign_in``)."""
    # The console reads the SSO session the sign-in leaves, never exchanges the code: a
    # throw-away PKCE challenge satisfies public clients that require one.
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {"client_id": "account", "redirect_uri": redirect_uri, "response_type": "code", "scope": "openid",
             "state": secrets.token_urlsafe(16), "code_challenge": challenge, "code_challenge_method": "S256",
             **params}
    return f"/realms/{realm.name}/protocol/openid-connect/auth?{urlencode(query)}"
