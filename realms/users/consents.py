"""A user's consents (Keycloak's UserConsentRepresentation): which client scopes the user granted
which client. Where grants are kept is the protocol's business (OIDC keeps them); realms reads
and revokes them through the store a protocol registers in its ``AppConfig.ready()``. The
console, the account console and the Account REST API all come here."""
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

_stores = []


def register_consent_store(list_consents, revoke):
    """``list_consents(user) -> [Consent ...]``; ``revoke(user, client) -> bool`` (True when a
    grant was there)."""
    _stores.append((list_consents, revoke))


@dataclass
class Consent:
    client: object  # realms.models.Client
    scopes: list  # realms.models.ClientScope, the granted ones
    created: datetime
    updated: datetime

    @property
    def scope_names(self):
        return sorted(s.name for s in self.scopes)


def user_consents(user):
    return [consent for list_consents, _ in _stores for consent in list_consents(user)]


@dataclass
class Revoked:
    consent: bool  # a grant was there
    offline: bool  # the client held an offline token of the user

    def __bool__(self):
        return self.consent or self.offline


def revoke_consent(user, client):
    """Forget the grant and end the client's offline tokens of the user and, when a grant was
    there, its share of the user's online sessions (its tokens stop refreshing), as Keycloak's
    UserConsentManager.revokeConsentToClient does. The console, the account console and the
    Admin API's ``users/{id}/consents/{client}`` all revoke here."""
    from ..models import UserSession
    from ..sso import sessions

    with transaction.atomic():
        consent = False
        for _, revoke in _stores:
            consent = revoke(user, client) or consent
        offline = sessions.end_client_sessions(list(UserSession.objects.filter(user=user, offline=True)), client,
                                               reason="revoked") > 0
        if consent:
            sessions.end_client_sessions(list(UserSession.objects.filter(user=user, offline=False)), client,
                                         reason="revoked")
    return Revoked(consent, offline)
