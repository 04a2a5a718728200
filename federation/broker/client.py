"""Our server as the provider's client: the calls to its token and userinfo endpoints (through
``realms.http.outbound``, the one SSRF-safe way out) and client authentication as Keycloak's
``clientAuthMethod`` says: the secret in the form (``client_secret_post``, Keycloak's default) or
in the Basic header (``client_secret_basic``, both parts form-encoded as RFC 6749 2.3.1 says), or
a signed client assertion (``client_secret_jwt`` with the secret, ``private_key_jwt`` with the
realm's own signing key, whose public half the provider reads from our realm's JWKS)."""
import base64
import json
import logging
import secrets
import time
from urllib.parse import parse_qs, quote, urlencode

from jwcrypto import jwk, jws
from jwcrypto.common import JWException, json_encode

from realms.brokering.providers import BrokerError
from realms.data import keys as realm_keys
from realms.http import outbound

logger = logging.getLogger("idp.broker")

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME = 60  # seconds
BODY_LIMIT = 256 * 1024
TIMEOUT = 10.0


def unexpected(detail, error="identity_provider_error"):
    return BrokerError("identityProviderUnexpectedErrorMessage", error, detail)


def shown_url(url):
    """The URL without its query for messages and logs (a query may carry a token)."""
    return url.split("?", 1)[0]


def call(method, url, *, body=None, headers=None):
    """(status, headers, body bytes) of one call to the provider; BrokerError when it cannot be made."""
    try:
        target = outbound.prepare(url)
        answer = outbound.request(method, target, body=body, headers=headers, timeout=TIMEOUT, connect_timeout=5.0,
                                  body_limit=BODY_LIMIT)
    except outbound.OutboundError as exc:
        raise unexpected(f"{shown_url(url)} may not be called: {exc}") from None
    except outbound.HTTPError as exc:
        raise unexpected(f"{shown_url(url)} did not answer: {exc.__class__.__name__}") from None
    return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.body


def _sign(claims, alg, key, kid=None):
    header = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    token = jws.JWS(json_encode(claims))
    try:
        token.add_signature(key, alg=alg, protected=json_encode(header))
    except JWException as exc:  # an HMAC secret shorter than the hash (RFC 7518 3.2)
        raise unexpected(f"the client assertion cannot be signed with {alg}: {exc}") from None
    return token.serialize(compact=True)


def client_assertion(realm, settings, token_url):
    """The signed JWT that authenticates us (RFC 7523): issuer and subject our client id, the
    audience the token endpoint (or ``clientAssertionAudience``), short-lived, never reused."""
    now = int(time.time())
    claims = {"iss": settings.get("clientId"), "sub": settings.get("clientId"),
              "aud": settings.get("clientAssertionAudience") or token_url, "jti": secrets.token_urlsafe(24),
              "iat": now, "exp": now + ASSERTION_LIFETIME}
    if settings.client_auth_method == "client_secret_jwt":
        secret = settings.get("clientSecret")
        if not secret:
            raise unexpected("client_secret_jwt needs clientSecret")
        key = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(secret.encode()).rstrip(b"=").decode())
        return _sign(claims, settings.get("clientAssertionSigningAlg", "HS256"), key)
    alg = settings.get("clientAssertionSigningAlg", "RS256")
    found = realm_keys.realm_keys(realm).signer(alg)
    if found is None:
        raise unexpected(f"the realm has no active {alg} key to sign the client assertion with")
    kid, key = found
    return _sign(claims, alg, key, kid)


def authenticate(realm, settings, form, headers, url):
    """Add our client authentication to a request to the provider's ``url``."""
    method, client_id = settings.client_auth_method, settings.get("clientId")
    if method == "client_secret_basic":
        pair = f"{quote(client_id, safe='')}:{quote(settings.get('clientSecret'), safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif method == "client_secret_post":
        form.update(client_id=client_id, client_secret=settings.get("clientSecret"))
    else:
        form.update(client_id=client_id, client_assertion_type=ASSERTION_TYPE,
                    client_assertion=client_assertion(realm, settings, url))


def _json(body, what, kinds=(dict,)):
    try:
        data = json.loads(body)
    except ValueError:
        raise unexpected(f"the provider's {what} answer is not JSON") from None
    if not isinstance(data, kinds):
        raise unexpected(f"the provider's {what} answer is not a JSON object")
    return data


def _token_answer(body):
    """The token response: JSON, or the form encoding some OAuth 2 providers still answer with
    (GitHub without ``Accept: application/json``); read by its content as Keycloak does."""
    if not body.lstrip().startswith(b"{") and b"access_token=" in body:
        return {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
    return _json(body, "token")


def token_request(realm, settings, form):
    """POST ``form`` to the token endpoint with our client authentication: the JSON answer; the
    provider's error (its ``error``, never shown to the person) as a BrokerError."""
    url = settings.get("tokenUrl")
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    form = dict(form)
    authenticate(realm, settings, form, headers, url)
    status, _, body = call("POST", url, body=urlencode(form), headers=headers)
    if status != 200:
        error = ""
        try:
            error = json.loads(body).get("error", "")
        except (ValueError, AttributeError):
            pass
        raise unexpected(f"the token endpoint answered {status} {error}".strip())
    return _token_answer(body)


def userinfo(settings, access_token, url=None):
    """The userinfo endpoint's answer for ``access_token``: its JSON (an object; a list from the
    APIs some presets read), or the raw text of a signed JWT (content type ``application/jwt``)
    for the caller to check."""
    status, headers, body = call("GET", url or settings.get("userInfoUrl"), headers={
        "Authorization": f"Bearer {access_token}", "Accept": "application/json"})
    if status != 200:
        raise unexpected(f"the userinfo endpoint answered {status}")
    if headers.get("content-type", "").split(";")[0].strip() == "application/jwt":
        return body.decode(errors="replace").strip()
    return _json(body, "userinfo", (dict, list))
