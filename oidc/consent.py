"""Consent (OIDC Core §3.1.2.4; Keycloak's "Consent required" client switch).

A client with ``consent_required`` gets a code only after the user has granted it the client
scopes of the request that are shown on the consent screen (attribute
``display.on.consent.screen``, text ``consent.screen.text``). Grants are remembered per user and
client (``ConsentGrant``), so the page comes back only for scopes not granted yet, or when the
client sends ``prompt=consent``. As in Keycloak it comes after authentication and required
actions: the OIDC completion asks before it issues the code (see
docs/decisions/0010-consent-in-the-completion.md).
"""
import dataclasses
import secrets

from realms.audit import events
from realms.http.messages import Message
from realms.models import ClientScope
from realms.signin import engine
from realms.sso import auth_sessions
from realms.users.consents import Consent

from . import tokens
from .models import ConsentGrant

# Authentication-session note: the consent page was shown in this tab; the next POST answers it.
ASKED = "oidc.consent"

def consent_text(scope):
    """The scope's consent text: a ``${key}`` (as Keycloak's built-in scopes have) is a message
    of the page's bundle, anything else is shown as written."""
    text = scope.attributes.get("consent.screen.text") or scope.name
    if text.startswith("${") and text.endswith("}"):
        return Message(text[2:-1])
    return text


def shown_scopes(client_config, scope_param):
    """The client scopes of this request the user is asked about."""
    scopes, _ = tokens.resolve_scopes(client_config, scope_param)
    return [s for s in scopes if s.attributes.get("display.on.consent.screen", "true") != "false"]


def not_granted(user, client, scopes):
    grant = ConsentGrant.objects.filter(user=user, client=client).first()
    granted = set(grant.scope_ids) if grant is not None else set()
    return [s for s in scopes if s.pk not in granted]


def grant(realm, user, client, scopes, ip_address=""):
    """Remember the grant (added to what was granted before) and record GRANT_CONSENT."""
    row, _ = ConsentGrant.objects.get_or_create(realm=realm, user=user, client=client)
    row.scope_ids = sorted(set(row.scope_ids) | {s.pk for s in scopes})
    row.save(update_fields=["scope_ids", "updated"])
    events.emit(realm, "GRANT_CONSENT", client_id=client.client_id, user_id=user.pk, ip_address=ip_address,
                details={"granted_client_scopes": " ".join(sorted(s.name for s in scopes))})


def user_consents(user):
    """The user's grants as ``realms.users.consents.Consent`` (registered as the realm's consent store)."""
    grants = list(ConsentGrant.objects.filter(user=user).select_related("client"))
    scopes = {s.pk: s for s in ClientScope.objects.filter(pk__in={i for g in grants for i in g.scope_ids})}
    return [Consent(g.client, [scopes[i] for i in g.scope_ids if i in scopes], g.created, g.updated) for g in grants]


def revoke(user, client):
    deleted, _ = ConsentGrant.objects.filter(user=user, client=client).delete()
    return bool(deleted)


def was_asked(auth_session):
    return auth_session.notes.get(ASKED) == "true"


def ask(ctx, user_session, scopes):
    """The consent page. The engine ends the authentication session once the protocol has
    answered, so the page belongs to a new tab of it that remembers the signed-in user and
    that the question was asked; its form posts back to the engine like any sign-in page."""
    tab = dataclasses.replace(ctx.auth_session, tab_id=secrets.token_urlsafe(9), auth_methods=[], current="",
                              sso_session_id=user_session.pk, notes={**ctx.auth_session.notes, ASKED: "true"})
    auth_sessions.save(tab, ctx.realm)
    page = engine.AuthContext(ctx.request, ctx.realm, ctx.client, tab).render("consent.html", {
        "client_name": ctx.client.name or ctx.client.client_id,
        "scopes": [consent_text(s) for s in scopes],
    })
    return auth_sessions.set_cookie(page, ctx.request, ctx.realm, tab)

