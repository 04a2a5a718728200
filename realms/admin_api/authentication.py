"""Who calls the API: the bearer of an access token of one of our realms, checked locally.

``realms`` knows no protocol, so the check itself is plugged in: the protocol app that issues
tokens (``oidc``) registers its verifier from its ``AppConfig.ready()`` with
``register_token_verifier``. The verifier checks signature (the realm's keys), issuer
(``realms.http.web.realm_url``), expiry, ``typ`` Bearer, revocation, the SSO session (``sid``) and the
user; it answers a ``Caller`` or raises ``BearerRefused``. Without a verifier every token is
refused."""
import functools
from dataclasses import dataclass, field

from rest_framework import authentication, exceptions

from ..administration.admin_permissions import Admin, can, management_roles
from ..errors import RealmsError
from ..models import Realm, User


class BearerRefused(RealmsError):
    """The bearer token is not a live access token of one of our realms (401)."""


@dataclass(eq=False)
class Caller:
    """The token's user, the realm that issued the token, and its claims. What they may do is
    ``realms.administration.admin_permissions.can``, with roles read from the database once per request (a role
    removed a second ago no longer counts)."""

    user: User
    realm: Realm
    claims: dict = field(default_factory=dict)

    is_authenticated = True  # DRF reads request.user.is_authenticated

    @property
    def client_id(self):
        return self.claims.get("azp", "")

    @functools.cached_property
    def admin(self) -> Admin:
        return Admin(self.user, self.client_id)

    def holds_realm_role(self, name) -> bool:
        """A role of the token's own realm (the master realm's ``create-realm``)."""
        return self.admin.holds_realm_role(name)

    def management_roles(self, realm) -> frozenset:
        return management_roles(self.admin, realm)

    def may(self, action, realm, target=None) -> bool:
        return can(self.admin, realm, action, target)


_verifier = None


def register_token_verifier(verify):
    """``verify(request, token) -> Caller``, raising BearerRefused; one per process."""
    global _verifier
    _verifier = verify


def bearer_token(request):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() != "bearer " or not header[7:].strip():
        return None
    return header[7:].strip()


class BearerAuthentication(authentication.BaseAuthentication):
    """``request.user`` is the Caller (``request.auth`` too). No token and a bad token are both
    401 ``{"error": "HTTP 401 Unauthorized"}``, never a redirect to a login page."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None:
            raise exceptions.NotAuthenticated()
        if _verifier is None:
            raise exceptions.AuthenticationFailed()
        try:
            caller = _verifier(request._request, token)
        except BearerRefused:
            raise exceptions.AuthenticationFailed() from None
        return caller, caller

    def authenticate_header(self, request):
        return "Bearer"
