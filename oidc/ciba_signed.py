"""CIBA's signed authentication request (CIBA Core §7.1.1): the ``request`` parameter, a JWS
the client signs with the algorithm of its ``ciba.backchannel.auth.request.signing.alg``
attribute, verified with the client's keys (``jwks.string`` or ``jwks.url``). Its claims take the
place of the form's parameters, as in Keycloak; each refusal is invalid_request with Keycloak's
sentence. ``request_uri`` is not fetched."""
import time

from . import client_auth, jose
from .errors import InvalidClient, InvalidRequest
from .request_object import claim_text

SIGNING_ALG = "ciba.backchannel.auth.request.signing.alg"
LEEWAY = 10


class Params:
    """The request's parameters: the form's, overridden by the signed request's claims."""

    def __init__(self, form, claims=None):
        self.form = form
        self.claims = claims or {}

    def get(self, name, default=None):
        if name in self.claims and self.claims[name] is not None:
            return claim_text(self.claims[name])
        return self.form.get(name, default)

    def getlist(self, name):
        return self.form.getlist(name)


def read(form, client):
    """Params of the request: the form's alone, or with a verified signed request's claims."""
    request, request_uri = form.get("request"), form.get("request_uri")
    if request is not None and request_uri is not None:
        raise InvalidRequest("Illegal to use both 'request' and 'request_uri' parameters together")
    if request_uri is not None:
        raise InvalidRequest("Specified 'request_uri' not allowed for this client.")
    if request is None:
        return Params(form)
    return Params(form, _verified_claims(request, client))


def _verified_claims(request, client):
    if isinstance(request, str) and request.count(".") == 4:
        raise InvalidRequest("Encrypted request object is not allowed")
    try:
        header, claims, signing_input, signature = jose.parse(request)
    except jose.JoseError:
        raise InvalidRequest("Failed to verify signature") from None
    alg = header.get("alg")
    if not alg:
        raise InvalidRequest("Signed algorithm not specified")
    if alg == "none":
        raise InvalidRequest("None signed algorithm is not allowed")
    if alg in jose.SYMMETRIC:
        raise InvalidRequest("Signed algorithm is not allowed")
    if alg not in jose.ASYMMETRIC:
        raise InvalidRequest(f"Not found provider for the algorithm {alg}"[:200])
    if (client.attributes or {}).get(SIGNING_ALG) != alg:
        raise InvalidRequest("Client requested algorithm not registered in advance or request signed with different "
                             "algorithm other than client requested algorithm")
    try:
        key = client_auth.client_key(client, header.get("kid"))  # the keys of its assertions
        jose.verify_signature(alg, key, signing_input, signature)
    except (InvalidClient, jose.JoseError):
        raise InvalidRequest("Failed to verify signature") from None
    # A request object past its exp (or before its nbf) is not the client's request any more.
    now = int(time.time())
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if exp is not None and (not isinstance(exp, int) or exp + LEEWAY <= now):
        raise InvalidRequest("Request Expired")
    if nbf is not None and (not isinstance(nbf, int) or nbf - LEEWAY > now):
        raise InvalidRequest("Request not yet valid")
    return claims
