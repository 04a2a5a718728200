"""Authorization codes: issued by the authorization endpoint, redeemed once at the token endpoint.

Only the SHA-256 digest of a code is stored, so a database leak yields no usable code. A code is
single-use (an atomic UPDATE ... WHERE used = false), bound to the client and the exact
redirect URI it was issued for, lives for the realm's client login timeout, and carries the PKCE
challenge of its authorization request (RFC 7636). Presenting a used code again ends the client
session it started, which revokes the tokens issued from it (RFC 6749 §4.1.2; Keycloak does the
same).
"""
import base64
import hashlib
import re
import secrets
from datetime import UTC, timedelta

from django.db import connection
from django.utils import timezone

from realms.data import rows
from realms.data.crypto import constant_time_equals
from realms.sso import sessions

from .errors import InvalidGrant
from .models import AuthorizationCode

S256, PLAIN = "S256", "plain"
# RFC 7636 §4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~".
_VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")


def digest(code):
    """The SHA-256 hex digest under which a one-time secret handed out is stored (codes, device
    codes, auth_req_ids, registration token ids): never the secret itself."""
    return hashlib.sha256(code.encode()).hexdigest()


def s256_challenge(verifier):
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def issue_code(*, client, user_session, redirect_uri, scope="", nonce="", code_challenge="",
               code_challenge_method="", resource=(), dpop_jkt="") -> str:
    """A new random 256-bit code for this client, session and redirect URI; returns the code."""
    code = secrets.token_urlsafe(32)
    if code_challenge and not code_challenge_method:
        code_challenge_method = PLAIN  # RFC 7636 §4.3: the default method
    rows.insert(AuthorizationCode(
        digest=digest(code),
        realm_id=client.realm_id,
        client=client,
        user_session=user_session,
        redirect_uri=redirect_uri,
        scope=scope or "",
        nonce=nonce or "",
        code_challenge=code_challenge or "",
        code_challenge_method=code_challenge_method if code_challenge else "",
        resource=" ".join(resource or ()),
        dpop_jkt=dpop_jkt or "",
        expires_at=timezone.now() + timedelta(seconds=client.realm.access_code_lifespan),
    ))
    return code


_COLUMNS = ("client_id", "user_session_id", "redirect_uri", "scope", "nonce", "code_challenge",
            "code_challenge_method", "expires_at", "created", "resource", "dpop_jkt")


def _claim(digest):
    """Mark the code used and return its row in one round trip, or None when it was not unused."""
    table = connection.ops.quote_name(AuthorizationCode._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET used = %s WHERE digest = %s AND used = %s RETURNING {', '.join(_COLUMNS)}",
            [True, digest, False],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(_COLUMNS, row))
    for name in ("expires_at", "created"):
        value = values[name]
        if isinstance(value, str):  # SQLite hands back text ...
            value = AuthorizationCode._meta.get_field(name).to_python(value)
        if timezone.is_naive(value):  # ... of a UTC time without its offset
            value = timezone.make_aware(value, UTC)
        values[name] = value
    return AuthorizationCode(digest=digest, used=True, **values)


def redeem_code(*, client, code, redirect_uri, code_verifier="") -> AuthorizationCode:
    """The code's row, once, for ``client`` and ``redirect_uri``; raises InvalidGrant otherwise."""
    if not code:
        raise InvalidGrant("Missing parameter: code", event_error="invalid_code")
    code_digest = digest(code)
    row = _claim(code_digest)
    if row is None:
        used = AuthorizationCode.objects.filter(digest=code_digest, used=True).values_list(
            "client_id", "user_session_id").first()
        if used is not None:
            # Replay of a redeemed code: whoever holds it must not keep what it bought.
            sessions.end_client_session(used[1], used[0])
        raise InvalidGrant("Code not valid", event_error="invalid_code")
    if row.client_id != client.pk:
        raise InvalidGrant("Code not valid", event_error="invalid_code")
    if row.expires_at <= timezone.now():
        raise InvalidGrant("Code not valid", event_error="expired_code")
    if not redirect_uri or redirect_uri != row.redirect_uri:
        raise InvalidGrant("Incorrect redirect_uri", event_error="invalid_code")
    check_pkce(client, row, code_verifier or "")
    return row


def check_pkce(client, row, verifier):
    required = client.pkce_method
    if not row.code_challenge:
        if verifier:
            # A verifier without a stored challenge means the challenge was stripped (downgrade).
            raise InvalidGrant("PKCE code verifier specified but challenge not present in authorization",
                               event_error="invalid_code_verifier")
        if required:
            raise InvalidGrant("PKCE is required for this client", event_error="invalid_code_verifier")
        return
    if not verifier:
        raise InvalidGrant("PKCE code verifier not specified", event_error="code_verifier_missing")
    if not _VERIFIER.match(verifier):
        raise InvalidGrant("PKCE invalid code verifier", event_error="invalid_code_verifier")
    method = row.code_challenge_method or PLAIN
    if method == PLAIN and required == S256:
        raise InvalidGrant("PKCE method plain not allowed for this client", event_error="invalid_code_verifier")
    if method == S256:
        computed = s256_challenge(verifier)
    elif method == PLAIN:
        computed = verifier
    else:
        raise InvalidGrant("PKCE unsupported code challenge method", event_error="invalid_code_verifier")
    if not constant_time_equals(computed, row.code_challenge):
        raise InvalidGrant("PKCE verification failed: Code mismatch", event_error="invalid_code_verifier")
