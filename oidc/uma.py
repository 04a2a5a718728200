"""The UMA 2.0 grant (``urn:ietf:params:oauth:grant-type:uma-ticket``) as Keycloak 26 answers it
(AuthorizationTokenService): which permissions an identity holds on a resource server, decided
by ``realms.authz.evaluation``.

Who asks: the user of the access token in ``Authorization: Bearer`` (the client is the token's
``azp``, no client authentication: how public clients and python-keycloak's ``uma_permissions``
ask), else the authenticated client for the identity of ``subject_token`` or of an ID token in
``claim_token`` (``claim_token_format`` Keycloak's ID token URI), else for its service account.
``claim_token`` in the JWT format pushes claims (base64url JSON): they travel in each granted
permission's ``claims``.

What is asked: a permission ticket (``ticket``, from the protection API), or ``permission``
parameters (``resource#scope,scope``, a resource by id or name, ``#scope`` for every resource with
the scope) of the resource server ``audience`` (with ``permission_resource_format=uri``, a resource by one of
its URIs, or with ``permission_resource_matching_uri=true`` by the server's best matching URI
pattern), plus ``scope`` (more scopes for each), plus the
permissions of a previous RPT (``rpt``, then every one must still be granted); none asks for
every resource. ``response_permissions_limit`` caps the resources evaluated,
``response_include_resource_name=false`` leaves ``rsname`` out. What owners shared with the
identity (granted permission tickets) counts; ``submit_request=true`` turns a denial of their
user-managed resources into requests awaiting them (403 ``request_submitted``).

The answer: ``response_mode=decision`` ``{"result": true}``, ``response_mode=permissions`` the
list of permissions, else an RPT: an access token of the identity with
``authorization.permissions`` and the resource server in ``aud`` (no refresh token: a refreshed
token would carry no permissions; ask again). Nothing granted is 403 ``access_denied``
``not_authorized``. The event is PERMISSION_TOKEN (PERMISSION_TOKEN_ERROR).
"""
import base64
import json
import time
import uuid

from realms.administration.admin_permissions import PERMISSIONS_CLIENT
from realms.authz import tickets
from realms.authz.evaluation import Identity, Server, all_requests, decide
from realms.sso import sessions

from . import jose, services, tokens
from .errors import AccessDenied, InvalidGrant, InvalidRequest, InvalidScope, OAuthError, UnauthorizedClient
from .grants import emit_event, register_grant, succeed, token_context

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:uma-ticket"
EVENT = "PERMISSION_TOKEN"
ID_TOKEN_FORMAT = "http://openid.net/specs/openid-connect-core-1_0.html#IDToken"
JWT_FORMAT = "urn:ietf:params:oauth:token-type:jwt"
TICKET_TYP = "Permission-Ticket"
TICKET_LIFESPAN = 300  # seconds a permission ticket may be redeemed (the resource server hands it on at once)


class InvalidResource(OAuthError):
    error = "invalid_resource"


class InvalidTicket(OAuthError):
    error = "invalid_ticket"
    status = 403


def _java_set(values):
    return "[" + ", ".join(values) + "]"


# Who asks --------------------------------------------------------------------------------------

def access_token_subject(realm_config, issuer, token, *, id_token=False):
    """(claims, user, user session) of an access token (or an ID token) this realm issued that
    is still backed by an enabled user, a live session and an enabled client; else None."""
    try:
        claims = tokens.decode(realm_config.realm, token, issuer, remember=True)
    except tokens.TokenError:
        return None
    typs = (tokens.TYP_BEARER, tokens.TYP_ID) if id_token else (tokens.TYP_BEARER,)
    if claims.get("typ") not in typs:
        return None
    live = services.live_subject(realm_config, claims, check_revoked=True)  # the mark read with the session
    if live is None:
        return None
    user, user_session, _ = live
    return claims, user, user_session


def _bearer_client(exchange, token):
    """The client of the bearer access token (Keycloak lets it ask without authenticating)."""
    found = access_token_subject(exchange.realm_config, exchange.issuer, token)
    if found is None:
        raise InvalidGrant("Invalid bearer token", status=401, event_error="invalid_token")
    exchange.bearer_subject = found
    return exchange.realm_config.client(found[0]["azp"])


def _subject(exchange):
    """(claims, user, user session or None) of the identity asking."""
    params = exchange.params
    if exchange.bearer_subject is not None:
        return exchange.bearer_subject
    config = exchange.client_config
    claim_token, claim_format = params.get("claim_token"), params.get("claim_token_format") or ""
    if claim_token and config.client.public_client and not params.get("ticket"):
        raise InvalidGrant("Public clients are not allowed to send claims", status=403)
    token = params.get("subject_token") or (claim_token if claim_format == ID_TOKEN_FORMAT else "")
    if token:
        found = access_token_subject(exchange.realm_config, exchange.issuer, token, id_token=True)
        if found is None:
            raise InvalidGrant("Invalid identity" if claim_format == ID_TOKEN_FORMAT else "Invalid subject token",
                               event_error="invalid_token")
        return found
    account = config.service_account() if config.client.service_accounts_enabled else None
    if account is None:
        raise UnauthorizedClient("Client not enabled to retrieve service account", event_error="invalid_client")
    user, roles = account
    scopes, _ = tokens.resolve_scopes(config, "")
    ctx = token_context(exchange, user, scopes, False, roles=roles)
    return tokens.access_token_claims(ctx, int(time.time())), user, None


def _pushed_claims(params):
    """Claims a client pushes (``claim_token`` in the JWT format): {name: [values]}."""
    claim_token, claim_format = params.get("claim_token"), params.get("claim_token_format") or JWT_FORMAT
    if not claim_token:
        return {}
    if claim_format == ID_TOKEN_FORMAT:
        return {}
    if claim_format != JWT_FORMAT:
        raise InvalidRequest(f"Claim token format [{claim_format}] not supported")
    try:
        raw = json.loads(base64.urlsafe_b64decode(claim_token + "=" * (-len(claim_token) % 4)))
    except ValueError:
        raise InvalidRequest("Claim token can not be null") from None
    if not isinstance(raw, dict):
        raise InvalidRequest("Claim token can not be null")
    return {str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in raw.items()}


# What is asked ---------------------------------------------------------------------------------

def issue_ticket(realm, issuer, resource_server_id, permissions, claims=None):
    """A permission ticket (UMA 2.0 §3): the permissions ``[{"resource_id", "resource_scopes"}]``
    on the resource server (client id) a client asked for, signed by the realm, short-lived."""
    now = int(time.time())
    body = {"jti": str(uuid.uuid4()), "iat": now, "exp": now + TICKET_LIFESPAN, "iss": issuer,
            "azp": resource_server_id, "typ": TICKET_TYP, "permissions": permissions}
    if claims:
        body["claims"] = claims
    kid, key = tokens.refresh_signing_key(realm)
    return jose.sign(body, alg=tokens.REFRESH_ALG, key=key, kid=kid)


def _ticket(exchange, value):
    try:
        claims = tokens.decode(exchange.realm, value, exchange.issuer)
    except tokens.TokenError:
        raise InvalidTicket("Ticket verification failed") from None
    if claims.get("typ") != TICKET_TYP:
        raise InvalidTicket("Ticket verification failed")
    return claims


def _resource_server(exchange, client_id):
    if not client_id:
        raise InvalidRequest("You must provide the issuedFor")
    config = exchange.realm_config.client(client_id)
    if config is None:
        raise InvalidRequest("Unknown resource server id.")
    client = config.client
    # The admin-permissions client's settings are fine-grained admin permissions, not a resource
    # server applications ask (realms.administration.admin_permissions decides them).
    if not client.authorization_services_enabled or client.client_id == PERMISSIONS_CLIENT:
        raise InvalidRequest("Client does not support permissions")
    return Server(client, client.authorization_settings)


def _asked(params, ticket):
    """[(resource reference or None, [scope names])] of the request."""
    if ticket is not None:
        return [(p.get("resource_id") or None, list(p.get("resource_scopes") or [])) for p in ticket["permissions"]]
    out = []
    for value in params.getlist("permission"):
        resource, _, scopes = value.partition("#")
        out.append((resource.strip() or None, [s.strip() for s in scopes.split(",") if s.strip()]))
    return out


def _by_uri(server, asked, matching):
    """``permission`` parameters naming resources by URI (Keycloak's addPermissionsByUri), as ids."""
    out = []
    for uri, scopes in asked:
        if uri is None:
            if not scopes:
                raise InvalidRequest("You must provide the uri")
            out.append((None, scopes))
            continue
        found = server.by_uri(uri, matching)
        if not found:
            raise InvalidResource(f"Resource with uri [{uri}] does not exist.")
        out += [(resource["_id"], scopes) for resource in found]
    return out


def _requests(server, identity, asked, extra_scopes, limit, shared):
    """The resources and scopes to decide, merged per resource, in the order asked."""
    merged = {}
    for ref, scopes in asked:
        wanted = [*scopes, *extra_scopes]
        known = [s for s in wanted if s in server.scope_names]
        if wanted and not known:
            raise InvalidScope(f"One of the given scopes {_java_set(scopes)} is invalid")
        if ref is not None:
            found = server.find(ref, identity, shared)
            if not found:
                raise InvalidResource(f"Resource with id [{ref}] does not exist.")
        else:
            found = server.with_scopes(known)
        for resource in found:
            if resource["_id"] not in merged:
                if limit is not None and len(merged) >= limit:
                    break
                merged[resource["_id"]] = (resource, [])
            merged[resource["_id"]][1].extend(s for s in known if s not in merged[resource["_id"]][1])
    return list(merged.values())


def _previous_rpt(exchange, server, value):
    """The permissions of a previous RPT of this realm for this resource server."""
    found = access_token_subject(exchange.realm_config, exchange.issuer, value)
    if found is None:
        raise InvalidGrant("Invalid RPT", event_error="invalid_token")
    permissions = (found[0].get("authorization") or {}).get("permissions") or []
    return [(server.by_id[p["rsid"]], list(p.get("scopes") or [])) for p in permissions if p.get("rsid") in server.by_id]


# The grant -------------------------------------------------------------------------------------

def uma_ticket(exchange):
    params = exchange.params
    mode = params.get("response_mode")
    if mode not in (None, "", "decision", "permissions"):
        raise InvalidRequest("Invalid response_mode")
    resource_format = params.get("permission_resource_format") or "id"
    if resource_format not in ("id", "uri"):
        raise InvalidRequest("Invalid permission_resource_format")
    claims, user, user_session = _subject(exchange)
    exchange.user_id = user.pk
    if user_session is not None:
        exchange.session_id = user_session.pk
    ticket = _ticket(exchange, params["ticket"]) if params.get("ticket") else None
    pushed = {**_pushed_claims(params), **((ticket or {}).get("claims") or {})}
    server = _resource_server(exchange, ticket["azp"] if ticket is not None else params.get("audience"))
    # The user's roles from the token endpoint's per-user cache (dropped when the realm changes).
    roles_by_id = exchange.realm_config.base.roles_by_id()
    held = frozenset(roles_by_id[r.id] for r in exchange.realm_config.user_roles(user) if r.id in roles_by_id)
    identity = Identity(user, claims.get("azp", exchange.client_config.client_id),
                        frozenset(str(claims.get("scope", "")).split()), claims, held_roles=held)
    limit = params.get("response_permissions_limit")
    try:
        limit = int(limit) if limit not in (None, "") else None
    except ValueError:
        raise InvalidRequest("Invalid response_permissions_limit") from None
    # Sharing counts on user-managed resources only: no query for a server without any.
    managed = any(r.get("ownerManagedAccess") for r in server.resources)
    shared = tickets.shared_with(server.client, user) if managed else {}
    asked = _asked(params, ticket)
    if resource_format == "uri" and ticket is None:
        matching = params.get("permission_resource_matching_uri", "false").lower() == "true"
        asked = _by_uri(server, asked, matching)
    requests = _requests(server, identity, asked, params.get("scope", "").split() if asked else [], limit, shared)
    previous = _previous_rpt(exchange, server, params["rpt"]) if params.get("rpt") else []
    if not asked and not previous:
        requests = all_requests(server, identity, shared)[:limit]
    known = {r["_id"] for r, _ in requests}
    granted = decide(server, exchange.realm, identity,
                     requests + [(r, s) for r, s in previous if r["_id"] not in known], shared)
    if previous and _missing(granted, requests):
        granted = []  # with an RPT, every permission asked must be granted
    if not granted:
        if params.get("submit_request", "false").lower() == "true":
            # Keycloak's permission requests: the owners of the user-managed resources asked for
            # see them (the protection API's permission/ticket) and may grant them.
            for resource, scopes in requests:
                tickets.request(server.client, resource, user, scopes)
            raise AccessDenied("request_submitted")
        raise AccessDenied("not_authorized")
    for permission in granted:
        if pushed:
            permission["claims"] = pushed
        if params.get("response_include_resource_name", "true").lower() == "false":
            permission.pop("rsname")
    exchange.details["audience"] = server.client.client_id
    if mode == "decision":
        return _decided(exchange, {"result": True})
    if mode == "permissions":
        return _decided(exchange, granted)
    return _rpt(exchange, user, user_session, claims, server, granted, previous)


def _missing(granted, requests):
    """Whether a permission asked is not granted whole."""
    held = {p["rsid"]: set(p.get("scopes", ())) for p in granted}
    return any(r["_id"] not in held or not set(s) <= held[r["_id"]] for r, s in requests)


def _decided(exchange, body):
    emit_event(exchange, EVENT)
    return body


def _rpt(exchange, user, user_session, claims, server, granted, previous):
    config = exchange.client_config
    scopes, _ = tokens.resolve_scopes(config, claims.get("scope", ""))
    client_session = sessions.client_session_of(user_session, config.client) if user_session is not None else None
    ctx = token_context(exchange, user, scopes, False, user_session, client_session)
    audience = tokens.access_token_claims(ctx, int(time.time())).get("aud") or []
    audience = [audience] if isinstance(audience, str) else list(audience)
    if server.client.client_id not in audience:
        audience.append(server.client.client_id)
    ctx.audience = audience
    ctx.extra_claims["authorization"] = {"permissions": granted}
    body, at_claims = tokens.token_response(ctx, with_refresh=False)
    held = {(p["rsid"], s) for p in granted for s in p.get("scopes", ())} | {(p["rsid"], None) for p in granted}
    body["upgraded"] = bool(previous) and all(
        (r["_id"], None) in held and all((r["_id"], s) in held for s in scopes) for r, scopes in previous)
    return succeed(exchange, ctx, EVENT, body, at_claims)


def register():
    register_grant(GRANT_TYPE, uma_ticket, EVENT, bearer=_bearer_client)
