"""Mutual TLS (RFC 8705). Filled by the mutual-TLS work: ``token_request``, ``check_refresh``
and ``check_resource_request`` as ``oidc.binding`` calls them."""


def token_request(request, exchange, binding):
    return None


def check_refresh(refresh_claims, binding):
    return None


def check_resource_request(request, token, claims, url):
    return None
