"""Redirect URI matching (spec 1 §4, RFC 6749 §3.1.2, RFC 8252 §7.3, RFC 9700 §2.1).

A requested URI must equal a registered one character for character. Two exceptions, both
opted into by what the client registered:

* a registered URI ending in ``*`` (Keycloak's wildcard) matches any URI that starts with the
  part before the ``*``;
* a registered ``http`` URI on a loopback address (``127.0.0.1`` or ``[::1]``) matches the same
  URI with any port, because native apps bind an ephemeral port at run time (RFC 8252 §7.3).
  ``localhost`` gets no such exception (RFC 8252 §8.3: it may resolve elsewhere).

A URI with a fragment is never accepted (RFC 6749 §3.1.2).
"""
from urllib.parse import urlsplit, urlunsplit

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


def matches(registered: str, requested: str) -> bool:
    if not registered or not requested or "#" in requested:
        return False
    if registered == requested:
        return True
    if registered.endswith("*"):
        # Dot segments would let a browser leave the registered prefix after matching.
        tail = requested[len(registered) - 1:]
        return requested.startswith(registered[:-1]) and ".." not in tail and "\\" not in tail
    loopback = _without_port(registered)
    return loopback is not None and loopback == _without_port(requested)


def is_valid_redirect_uri(registered_uris, requested: str) -> bool:
    return any(matches(uri, requested) for uri in registered_uris or ())


def post_logout_redirect_uris(client):
    """The client's registered post-logout redirect URIs: attribute ``post.logout.redirect.uris``
    (Keycloak separates entries with ``##``); ``+`` stands for the client's redirect URIs."""
    out = []
    for entry in (client.attributes.get("post.logout.redirect.uris") or "").split("##"):
        entry = entry.strip()
        if entry == "+":
            out.extend(client.redirect_uris or ())
        elif entry:
            out.append(entry)
    return out


def with_params(uri: str, params: dict) -> str:
    """``uri`` with ``params`` appended to its query, keeping what the client registered there."""
    from urllib.parse import urlencode

    parts = urlsplit(uri)
    extra = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    query = f"{parts.query}&{extra}" if parts.query and extra else (parts.query or extra)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
