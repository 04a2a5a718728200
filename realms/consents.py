"""A user's consents (Keycloak's UserConsentRepresentation): which client scopes the user granted
which client. Where grants are kept is the protocol's business (OIDC keeps them); realms reads
and revokes them through the store a protocol registers in its ``AppConfig.ready()``."""
_stores = []


def register_consent_store(list_consents, revoke):
    """``list_consents(user) -> [Consent ...]``; ``revoke(user, client) -> bool`` (True when a
    grant was there)."""
    _stores.append((list_consents, revoke))


class Consent:
    def __init__(self, client, scope_names, created, updated):
        self.client, self.scope_names, self.created, self.updated = client, scope_names, created, updated


def user_consents(user):
    return [consent for list_consents, _ in _stores for consent in list_consents(user)]


def revoke_consent(user, client):
    """Revoke the grant and, as Keycloak does, the client's offline tokens of the user."""
    from . import sessions
    from .models import UserSession

    revoked = False
    for _, revoke in _stores:
        revoked = revoke(user, client) or revoked
    for offline in UserSession.objects.filter(user=user, offline=True, client_sessions__client=client).distinct():
        sessions.end_session(offline)
    return revoked
