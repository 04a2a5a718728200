"""Mutual TLS (RFC 8705): not built yet. It binds nothing (``oidc.binding`` calls these three as
it calls DPoP's), so a client that asks for certificate-bound tokens is refused where it is
written (``check_attributes``) rather than given bearer tokens it did not ask for; a client of the
``client-x509`` authenticator is refused at the token endpoint (``client_auth``)."""

BOUND_TOKENS = "tls.client.certificate.bound.access.tokens"


def check_attributes(protocol, attributes):
    if protocol == "openid-connect" and attributes.get(BOUND_TOKENS) not in (None, "", "false"):
        return f"Unsupported value of {BOUND_TOKENS}: certificate-bound tokens (mutual TLS) are not supported"
    return None


def token_request(request, exchange, binding):
    return None


def check_refresh(refresh_claims, binding):
    return None


def check_resource_request(request, token, claims, url):
    return None
