"""The pushed authorization request endpoint: ``/realms/<realm>/protocol/openid-connect/ext/par/request``
(POST, form-encoded, client-authenticated; CORS as the token endpoint)."""
from .. import par
from .token import _respond, endpoint


@endpoint
def pushed_authorization_request(http_request, realm_config, issuer):
    response = _respond(http_request, lambda holder: par.push(http_request, realm_config, issuer,
                                                               http_request.POST, holder))
    if response.status_code == 200:
        response.status_code = 201  # RFC 9126 §2.2
    return response
