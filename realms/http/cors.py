"""CORS for the endpoints browsers call directly (OIDC's token, userinfo, introspection,
revocation, certs; the Account REST API): a response carries ``Access-Control-Allow-Origin`` only
for an origin the client registered among its web origins (``+`` = the origins of its redirect
URIs, ``*`` = any), or, for a bearer-token API, that the token allows (``allowed-origins``)."""
ALLOW_HEADERS = "Authorization, Content-Type, DPoP"
MAX_AGE = "3600"


def _origin(request):
    return request.META.get("HTTP_ORIGIN", "")


def preflight(request, response, methods):
    """Answer an OPTIONS preflight. The client is not known before the real request, so the
    preflight is allowed and the real response decides (Keycloak does the same)."""
    origin = _origin(request)
    if origin:
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Credentials"] = "true"
        response["Access-Control-Allow-Methods"] = ", ".join(methods)
        response["Access-Control-Allow-Headers"] = ALLOW_HEADERS
        response["Access-Control-Max-Age"] = MAX_AGE
        response["Vary"] = "Origin"
    return response


def add(request, response, origins, *, any_origin=False):
    origin = _origin(request)
    if not origin:
        return response
    if any_origin or (origins and ("*" in origins or origin in origins)):
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Allow-Credentials"] = "true"
        # DPoP-Nonce (RFC 9449 §8): a browser client must read the server's nonce to retry with it.
        response["Access-Control-Expose-Headers"] = "WWW-Authenticate, DPoP-Nonce"
    response["Vary"] = "Origin"
    return response
