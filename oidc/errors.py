"""Typed OAuth 2.0 errors and the one place that turns them into protocol responses.

Service code raises, say, ``InvalidGrant("Code not valid")``; the ``oauth_endpoint`` decorator
(or ``error_response`` for code that renders by itself) produces the RFC 6749 §5.2 JSON body,
the status code and, for a failed HTTP Basic client authentication, ``WWW-Authenticate``.
Bearer-token errors at userinfo and resource servers use RFC 6750's header form instead.
Every error of the app derives from ``OidcError``; ``OAuthError`` is the one with a protocol answer.
"""
import functools

from django.http import JsonResponse


class OidcError(Exception):
    """An error of the OpenID Connect app."""


class OAuthError(OidcError):
    error = "invalid_request"
    status = 400
    record_event = True  # whether the endpoint records the failure as an _ERROR event

    def __init__(self, description="", *, status=None, headers=None, event_error=None):
        super().__init__(description)
        self.description = description
        if status is not None:
            self.status = status
        self.headers = dict(headers or {})
        # The error string recorded on the event (Keycloak's names: invalid_code, user_disabled ...).
        self.event_error = event_error or self.error

    def body(self):
        out = {"error": self.error}
        if self.description:
            out["error_description"] = self.description
        return out


class InvalidRequest(OAuthError):
    error = "invalid_request"


class InvalidClient(OAuthError):
    """401; when the client tried HTTP Basic, RFC 6749 §5.2 asks for WWW-Authenticate: Basic."""

    error = "invalid_client"
    status = 401

    def __init__(self, description="Invalid client or Invalid client credentials", *, basic=False, **kw):
        super().__init__(description, **kw)
        if basic:
            self.headers.setdefault("WWW-Authenticate", 'Basic realm="token", error="invalid_client"')


class InvalidGrant(OAuthError):
    error = "invalid_grant"


class UnauthorizedClient(OAuthError):
    error = "unauthorized_client"


class UnsupportedGrantType(OAuthError):
    error = "unsupported_grant_type"


class UnsupportedTokenType(OAuthError):
    error = "unsupported_token_type"


class InvalidScope(OAuthError):
    error = "invalid_scope"


class AccessDenied(OAuthError):
    error = "access_denied"
    status = 403


class InvalidToken(OAuthError):
    """RFC 6750 §3.1: the bearer token is expired, revoked, malformed or invalid."""

    error = "invalid_token"
    status = 401

    def __init__(self, description="Token verification failed", **kw):
        super().__init__(description, **kw)
        self.headers.setdefault("WWW-Authenticate", bearer_challenge(self.error, description))


class InsufficientScope(OAuthError):
    """RFC 6750 §3.1: the token lacks the scope (or role) the resource requires."""

    error = "insufficient_scope"
    status = 403

    def __init__(self, description="Insufficient scope", *, scope="", **kw):
        super().__init__(description, **kw)
        self.headers.setdefault("WWW-Authenticate", bearer_challenge(self.error, description, scope))


class ServerError(OAuthError):
    error = "server_error"
    status = 500


def bearer_challenge(error, description="", scope=""):
    parts = ['Bearer realm="api"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append('error_description="{}"'.format(description.replace('"', "'")))
    if scope:
        parts.append(f'scope="{scope}"')
    return ", ".join(parts)


NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def error_response(exc: OAuthError):
    response = JsonResponse(exc.body(), status=exc.status)
    for name, value in {**NO_STORE, **exc.headers}.items():
        response[name] = value
    return response


def oauth_endpoint(view):
    """Wrap a view (function or method) so that an OAuthError becomes its JSON response."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except OAuthError as exc:
            return error_response(exc)

    return wrapper


class AuthorizationPending(OAuthError):
    """RFC 8628 §3.5 and CIBA §11: the user has not answered yet. A poll that changes nothing
    records no event (Keycloak records none), so polling writes nothing."""

    error = "authorization_pending"
    record_event = False


class SlowDown(OAuthError):
    """RFC 8628 §3.5 and CIBA §11: polled sooner than the interval."""

    error = "slow_down"


class TooManyRequests(OAuthError):
    """The realm's admission limit reached (``realms.http.admission``): RFC 6585's 429 with
    ``Retry-After``; OAuth has no error code for it, so the HTTP one is used."""

    error = "too_many_requests"
    status = 429

    def __init__(self, retry_after):
        super().__init__("Too many requests, retry later", headers={"Retry-After": str(retry_after)})


class ExpiredToken(OAuthError):
    """RFC 8628 §3.5 and CIBA §11: the device code or auth_req_id has expired."""

    error = "expired_token"


class InvalidBindingMessage(OAuthError):
    """CIBA §13: the binding message is invalid or unacceptable."""

    error = "invalid_binding_message"


class InvalidClientMetadata(OAuthError):
    """RFC 7591 §3.2.2: a metadata field's value is invalid (dynamic client registration)."""

    error = "invalid_client_metadata"


class InvalidRedirectUri(OAuthError):
    """RFC 7591 §3.2.2: a redirection URI of the registration request is invalid."""

    error = "invalid_redirect_uri"


class InvalidTarget(OAuthError):
    """RFC 8707 §2 (and RFC 8693 §2.2.2): the requested resource is invalid, unknown, or one the
    client may not address."""

    error = "invalid_target"


class InvalidDpopProof(OAuthError):
    """RFC 9449 §5, §7.1: the DPoP proof is missing or invalid (400 at the token endpoint; a
    resource answers 401 with a DPoP challenge, oidc.dpop.at_resource)."""

    error = "invalid_dpop_proof"


class UseDpopNonce(OAuthError):
    """RFC 9449 §8, §9: the proof lacks the server's current nonce, named in ``DPoP-Nonce``."""

    error = "use_dpop_nonce"


def dpop_challenge(error, description="", algs=()):
    """RFC 9449 §7.1: the ``WWW-Authenticate: DPoP`` challenge of a protected resource."""
    parts = [f'DPoP algs="{" ".join(algs)}"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append('error_description="{}"'.format(description.replace('"', "'")))
    return ", ".join(parts)
