"""Redirect URI matching for every protocol: OIDC redirect and post-logout URIs, SAML
assertion consumer URLs (spec 1 §4, RFC 6749 §3.1.2, RFC 8252 §7.3, RFC 9700 §2.1).

A requested URI must equal a registered one character for character. Two exceptions, both
opted into by what the client registered:

* a registered URI ending in ``*`` (Keycloak's wildcard) matches any URI that starts with the
  part before the ``*`` and whose path cannot leave that prefix once a browser or a server
  resolves it: no dot segment (``..``, ``.``, also percent-encoded: ``%2e%2e``, ``.%2E``, even
  encoded twice, or followed by a path parameter: ``..;/``), no encoded separator or backslash
  (``%2f``, ``%5c``, ``\\``) and no control character in the part the wildcard stands for, and
  no userinfo (RFC 3986 §5.2.4; browsers resolve ``%2e`` segments too; Keycloak likewise
  applies a wildcard only to URIs free of parent access, encoded slashes and userinfo);
* a registered ``http`` URI on a loopback address (``127.0.0.1`` or ``[::1]``) matches the same
  URI with any port, because native apps bind an ephemeral port at run time (RFC 8252 §7.3).
  ``localhost`` gets no such exception (RFC 8252 §8.3: it may resolve elsewhere).

A URI with a fragment is never accepted (RFC 6749 §3.1.2).
"""
import re
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

LOOPBACK_HOSTS = ("127.0.0.1", "[::1]")


def _without_port(uri):
    """(scheme, host, path, query) of an http loopback URI, or None for any other URI."""
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError:
        return None
    if parts.scheme != "http" or parts.username is not None or parts.password is not None:
        return None
    host = parts.netloc.rsplit(":", 1)[0] if not parts.netloc.endswith("]") else parts.netloc
    if host not in LOOPBACK_HOSTS:
        return None
    return parts.scheme, host, parts.path, parts.query


MAX_DECODINGS = 5  # as Keycloak: a URI still encoded after this many rounds is refused
_ENCODED_SEPARATOR = re.compile(r"%(?:2f|5c)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _tail_stays_inside(tail):
    """True when the path part of what a wildcard stands for cannot climb out of the prefix:
    every decoding of it (up to MAX_DECODINGS) is free of encoded separators, backslashes and
    control characters, and no segment of the fully decoded path is a dot segment, also with a
    path parameter (``..;x``, which Java servers resolve as ``..``)."""
    layers = [tail.split("?", 1)[0]]
    for _ in range(MAX_DECODINGS):
        plain = unquote(layers[-1])
        if plain == layers[-1]:
            break
        layers.append(plain)
    else:
        return False
    if any("\\" in layer or _ENCODED_SEPARATOR.search(layer) or _CONTROL.search(layer) for layer in layers):
        return False
    return not any(segment.split(";", 1)[0] in (".", "..") for segment in layers[-1].split("/"))


def matches(registered: str, requested: str) -> bool:
    if not registered or not requested or "#" in requested:
        return False
    if registered == requested:
        return True
    if registered.endswith("*"):
        prefix = registered[:-1]
        # From the prefix's last segment on, so a tail that completes it ("/app/." + ".") is seen.
        start = prefix.rfind("/") + 1
        return (requested.startswith(prefix) and not _has_userinfo(requested)
                and _tail_stays_inside(requested[start:]))
    loopback = _without_port(registered)
    return loopback is not None and loopback == _without_port(requested)


def _has_userinfo(uri):
    """``https://good.example@evil.example/`` starts like ``https://good.example*`` yet goes
    elsewhere: a wildcard never matches a URI with userinfo (exact registrations still may).
    A URI too malformed to split counts as having some."""
    try:
        return "@" in urlsplit(uri).netloc
    except ValueError:
        return True


def is_valid_redirect_uri(registered_uris, requested: str) -> bool:
    return any(matches(uri, requested) for uri in registered_uris or ())


def with_params(uri: str, params: dict) -> str:
    """``uri`` with ``params`` appended to its query, keeping what the client registered there."""
    parts = urlsplit(uri)
    extra = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    query = f"{parts.query}&{extra}" if parts.query and extra else (parts.query or extra)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
