"""What a brokered sign-in carries from the provider's answer to the end of first broker login,
and the link it leaves.

The identity the provider proved is kept in the authentication session (``BROKERED``) while first
broker login runs; its steps read it with ``brokered(ctx)``. A step that finds an existing account
the identity could belong to keeps its id in ``EXISTING_USER`` (Keycloak's EXISTING_USER_INFO) for
the steps that confirm the link. ``link`` is the one way a federated identity is created."""
from dataclasses import asdict

from ..audit import events
from ..data import crypto, realm_cache
from ..models import FederatedIdentity, IdentityProvider
from .providers import BrokeredIdentity

BROKERED = "BROKERED_CONTEXT"
EXISTING_USER = "EXISTING_USER_INFO"


def keep(auth_session, idp, identity):
    auth_session.notes[BROKERED] = {"alias": idp.alias, "identity": asdict(identity)}


def brokered(ctx):
    """(identity provider, BrokeredIdentity) of this sign-in, or (None, None) when it is not a
    brokered one."""
    kept = ctx.auth_session.notes.get(BROKERED)
    if not kept:
        return None, None
    idp = identity_provider(ctx.realm, kept["alias"])
    return (idp, BrokeredIdentity(**kept["identity"])) if idp is not None else (None, None)


def _load_providers(realm):
    # With their mappers: a brokered sign-in runs them twice (preprocess, then import or update),
    # and a mapper's change drops this copy as a provider's does.
    return {idp.alias: idp for idp in IdentityProvider.objects.filter(realm=realm).prefetch_related("mappers")}


def identity_providers(realm):
    """The realm's identity providers by alias, read once per process (dropped with the realm
    cache when a provider changes)."""
    return realm_cache.stored(realm, "identity_providers", _load_providers)


def identity_provider(realm, alias):
    return identity_providers(realm).get(alias)


def broker_username(identity):
    """The provider's username for the user (a username template may have changed the local one)."""
    return identity.context.get("broker_username", identity.username)


def stored_username(idp, identity):
    """The provider's username as the link keeps it: lower-cased unless the provider says its
    usernames are case-sensitive (Keycloak's ``caseSensitiveOriginalUsername``)."""
    name = broker_username(identity)
    return name if (idp.config or {}).get("caseSensitiveOriginalUsername") == "true" else name.lower()


def link(realm, idp, user, identity, *, client_id="", ip_address=""):
    """Link ``user`` to their account at ``idp`` (the token kept when the provider stores tokens)
    and record FEDERATED_IDENTITY_LINK."""
    created = FederatedIdentity.objects.create(
        realm=realm, user=user, identity_provider=idp, subject=identity.id, user_name=stored_username(idp, identity),
        token=crypto.encrypt(identity.token) if idp.store_token and identity.token else "")
    events.emit(realm, "FEDERATED_IDENTITY_LINK", client_id=client_id, user_id=user.pk, ip_address=ip_address,
                details={"identity_provider": idp.alias, "identity_provider_identity": stored_username(idp, identity)})
    return created
