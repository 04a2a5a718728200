"""Keycloak 26's ``organization`` step (Organization Identity-First Login) of the browser flow's
Organization sub-flow. Keycloak uses it to send a user whose e-mail domain (or membership)
belongs to an organization to that organization's identity provider; with no match it falls
through to the username and password form. Identity brokering does not exist here, so no
organization has an identity provider: the step never applies (ATTEMPTED, passed over as the
alternative it is) and the sign-in goes on to the forms. It authenticates no one, so it cannot
stand in for any factor (docs/decisions/0037)."""
from ..flows import Authenticator, Outcome


class OrganizationIdentityFirst(Authenticator):
    provider_id = "organization"
    display_name = "Organization Identity-First Login"

    def authenticate(self, ctx):
        return Outcome.attempted()
