"""Identity providers on the login page: the buttons (keycloak.v2's ``social-<alias>``) and the
``identity-provider-redirector`` step of the browser flow, which goes straight to the provider
the client named (``kc_idp_hint``) or the step's ``defaultProvider``.

After a provider's error the redirector stands aside (the login page shows the error; going
back to the provider at once would loop), as Keycloak's does when an error was forwarded."""
import logging
from types import SimpleNamespace

from ..signin.flows import Authenticator, Outcome
from . import broker, context, organizations
from .providers import get_provider_type

logger = logging.getLogger("idp.broker")


def buttons(realm, ctx_client, auth_session):
    """The login page's list: (id, display name, URL) per provider it offers."""
    if auth_session is None or ctx_client is None:
        return []
    query_ctx = SimpleNamespace(realm=realm, client=ctx_client, auth_session=auth_session)
    # In an organizations realm an organization's providers show only once the sign-in is its.
    shown = organizations.login_providers(realm, auth_session, broker.visible_providers(realm))
    return [{"id": f"social-{idp.alias}", "alias": idp.alias, "display_name": idp.display_name or idp.alias,
             "url": broker.login_url(query_ctx, idp)} for idp in shown]


class IdentityProviderRedirector(Authenticator):
    provider_id = "identity-provider-redirector"
    display_name = "Identity Provider Redirector"

    def authenticate(self, ctx):
        notes = ctx.auth_session.notes
        if notes.get(broker.BROKER_ERROR):
            return Outcome.attempted()
        hint = notes.get(broker.IDP_HINT_NOTE, "")
        alias = hint or ctx.config.get("defaultProvider", "")
        if not alias:
            return Outcome.attempted()
        idp = context.identity_provider(ctx.realm, alias)
        if idp is None or not idp.enabled or idp.link_only or get_provider_type(idp.provider_id) is None:
            logger.info("realm %s: %s %r is not a usable identity provider; passed over", ctx.realm.name,
                        "kc_idp_hint" if hint else "the redirector's default provider", alias)
            return Outcome.attempted()
        return Outcome.challenge(broker.begin(ctx.request, ctx.realm, ctx.client, ctx.auth_session, idp))


def register():
    """Called from RealmsConfig.ready."""
    from ..signin.flows import register_authenticator

    register_authenticator(IdentityProviderRedirector)
