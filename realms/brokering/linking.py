"""Linking a signed-in user's account to an identity provider, and the links the account console
shows (Keycloak 26's ``idp_link`` required action and the Account REST API's LinkedAccountsResource).

* ``IdpLink``: an application asks for ``kc_action=idp_link:<alias>``; the user confirms, goes to
  the provider through ``broker.begin`` in link mode, and when the provider answers the broker
  links the identity to them (an identity another user has is refused with Keycloak's message)
  and the action ends: ``success`` back to the application, ``cancelled`` when the person
  cancelled here or at the provider.
* ``linked_accounts``: Keycloak's LinkedAccountRepresentation lists (``linked``, ``search``,
  ``first``, ``max``); ``unlink``: the user removes a link, never their only way to sign in.
"""
import fnmatch
import hashlib

from django.core.cache import cache

from ..audit import events
from ..data.builtins import ACCOUNT_CLIENT
from ..errors import RealmsError
from ..http import action_tokens, messages, themes
from ..http.messages import Message
from ..http.web import client_address
from ..models import Credential, FederatedIdentity, OrganizationIdentityProvider, client_role_names, effective_roles
from ..signin.flows import Outcome, RequiredAction
from ..users import storage
from . import broker, context, organizations
from .providers import get_provider_type

PROVIDER_ID = "idp_link"
# Keycloak's note: the trip to the provider for this action is under way.
LINKING = "kc_action_linking_identity_provider"
# The provider's answer "the person refused" (Keycloak's cancelled()): the action is cancelled.
CANCELLED_AT_PROVIDER = "accessDeniedWhenIdpAuth"
LINK_ROLES = {"manage-account", "manage-account-links"}
SHOW_IN_ACCOUNT_CONSOLE = "showInAccountConsole"  # ALWAYS (the default), WHEN_LINKED or NEVER
ALWAYS, WHEN_LINKED = "ALWAYS", "WHEN_LINKED"


class IdpLink(RequiredAction):
    provider_id = PROVIDER_ID

    def _provider(self, ctx):
        idp = context.identity_provider(ctx.realm, ctx.action_parameter) if ctx.action_parameter else None
        return idp if idp is not None and idp.enabled and get_provider_type(idp.provider_id) else None

    def _refused(self, ctx, error, alias):
        events.emit(ctx.realm, "FEDERATED_IDENTITY_LINK_ERROR", client_id=ctx.client.client_id, user_id=ctx.user.pk,
                    ip_address=ctx.ip_address, error=error, details={"identity_provider": alias})
        return Outcome.failure(error)

    def start(self, ctx):
        idp = self._provider(ctx)
        if idp is None:
            return self._refused(ctx, "unknown_identity_provider", ctx.action_parameter)
        held = set(client_role_names(effective_roles(ctx.user)).get(ACCOUNT_CLIENT, []))
        if not held & LINK_ROLES:
            return self._refused(ctx, "not_allowed", idp.alias)
        ctx.auth_session.notes.pop(LINKING, None)
        return Outcome.challenge(self.challenge(ctx, idp))

    def challenge(self, ctx, idp=None):
        idp = idp or self._provider(ctx)
        return ctx.render("link-idp-action.html", {"idp_display_name": display_name(idp)})

    def process(self, ctx):
        notes = ctx.auth_session.notes
        idp = self._provider(ctx)
        if idp is None:
            return self._refused(ctx, "unknown_identity_provider", ctx.action_parameter)
        if notes.get(LINKING) != idp.alias:  # confirmed: to the provider, in link mode
            notes[LINKING] = idp.alias
            return Outcome.challenge(broker.begin(ctx.request, ctx.realm, ctx.client, ctx.auth_session, idp,
                                                  link_user=ctx.user))
        notes.pop(LINKING)
        error = notes.pop(broker.BROKER_ERROR, None)
        if error and error[0] == CANCELLED_AT_PROVIDER:
            return Outcome.failure("rejected_by_user")
        if error:
            return Outcome.challenge(ctx.render("info.html", {"is_error": True, "message_key": Message(*error)},
                                                status=400))
        if not FederatedIdentity.objects.filter(identity_provider=idp, user=ctx.user).exists():
            return self._refused(ctx, "invalid_request", idp.alias)
        return Outcome.success()


def display_name(idp):
    """Keycloak's getIdentityProviderDisplayName: the display name, else a social type's name,
    else the alias."""
    if idp.display_name:
        return idp.display_name
    kind = get_provider_type(idp.provider_id)
    return kind.name if kind is not None and kind.social and kind.name else idp.alias


def _show(idp):
    return idp.config.get(SHOW_IN_ACCOUNT_CONSOLE) or ALWAYS


def rep(idp, linked_username=None):
    """Keycloak's LinkedAccountRepresentation (its guiOrder is not part of the JSON)."""
    kind = get_provider_type(idp.provider_id)
    out = {"connected": linked_username is not None, "social": bool(kind is not None and kind.social),
           "providerAlias": idp.alias, "providerName": idp.alias, "displayName": display_name(idp)}
    if linked_username is not None:
        out["linkedUsername"] = linked_username
    return out


def _ordered(pairs):
    """Keycloak's order of LinkedAccountRepresentation: those without a GUI order first, then by
    GUI order, highest first (it compares the strings); the alias within each."""
    pairs = sorted(pairs, key=lambda pair: pair[0].alias)
    without = [p for p in pairs if not p[0].config.get("guiOrder")]
    with_order = sorted((p for p in pairs if p[0].config.get("guiOrder")), key=lambda p: p[0].config["guiOrder"],
                        reverse=True)
    return without + with_order


def _matches_linked(idp, search):
    """Keycloak's matchesLinkedProvider: ``"name"`` exact, ``*name*`` a part, ``name*`` or ``name``
    a prefix, of the alias or display name (case as typed)."""
    names = (idp.alias, display_name(idp))
    if search is None:
        return True
    if len(search) > 1 and search.startswith('"') and search.endswith('"'):
        return search[1:-1] in names
    if len(search) > 1 and search.startswith("*") and search.endswith("*"):
        return any(search[1:-1] in name for name in names)
    return any(name.startswith(search.removesuffix("*")) for name in names)


def _matches_available(idp, search):
    """The provider query's ``search`` (Keycloak's JPA one): ``"name"`` exact, else ``*`` a
    wildcard and a prefix by default, case-insensitive, on the alias or display name."""
    if not search:
        return True
    names = (idp.alias, idp.display_name or "")
    if len(search) > 1 and search.startswith('"') and search.endswith('"'):
        return search[1:-1] in names
    pattern = search.lower() if search.endswith("*") else search.lower() + "*"
    return any(fnmatch.fnmatchcase(name.lower(), pattern.replace("[", "[[]").replace("?", "[?]")) for name in names)


def _linkable(idp):
    return get_provider_type(idp.provider_id) is not None


def _page(items, first, most):
    first = first or 0
    return items[first:] if most is None else items[first:first + most]


def linked_accounts(realm, user, *, linked=None, search=None, first=None, most=None):
    """The representations the account console lists: ``linked`` True the user's links (to
    enabled providers shown in the account console), False the enabled realm-level providers
    the user may still link (shown ALWAYS), None (Keycloak's older form) both in one list."""
    # A provider whose type this server lacks is listed when linked, never offered for linking.
    providers = {idp.alias: idp for idp in context.identity_providers(realm).values() if idp.enabled}
    links = {link.identity_provider.alias: link.user_name
             for link in FederatedIdentity.objects.filter(user=user).select_related("identity_provider")}
    bound = set(OrganizationIdentityProvider.objects.filter(identity_provider__realm=realm)
                .values_list("identity_provider__alias", flat=True))
    if linked is None:
        shown = [(idp, links.get(alias)) for alias, idp in providers.items()
                 if (alias in links or (alias not in bound and _linkable(idp)))
                 and (_show(idp) == ALWAYS or (_show(idp) == WHEN_LINKED and alias in links))]
        return [rep(idp, name) for idp, name in _ordered(shown)]
    if linked:
        shown = [(providers[alias], name) for alias, name in links.items()
                 if alias in providers and _show(providers[alias]) in (ALWAYS, WHEN_LINKED)
                 and _matches_linked(providers[alias], search)]
        return [rep(idp, name) for idp, name in _page(_ordered(shown), first, most)]
    available = [idp for alias, idp in sorted(providers.items()) if alias not in links and alias not in bound
                 and _linkable(idp) and _show(idp) == ALWAYS and _matches_available(idp, search)]
    return [rep(idp) for idp in _page(available, first, most)]


class Refused(RealmsError):
    """``message`` is what the Account API answers (a key where Keycloak answers the key, the
    account theme's text where Keycloak translates it)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


def unlink(request, realm, user, alias, *, client_id):
    """Remove the user's link to ``alias`` (REMOVE_FEDERATED_IDENTITY), as Keycloak's
    removeLinkedAccount: refused for a provider that does not exist, a disabled user, a link
    that does not exist, an organization's provider the user is a managed member through, and
    the user's only way to sign in (no password, not a directory's user, no other link)."""
    idp = context.identity_provider(realm, alias) if alias else None
    if not alias:
        raise Refused("missingIdentityProviderMessage")
    if idp is None:
        raise Refused("identityProviderNotFoundMessage")
    if not user.enabled:
        raise Refused("accountDisabledMessage")
    locale = messages.locale_for(request, realm, user=user)

    def text(key):
        return messages.text(realm, locale, key, theme=themes.theme_of(realm, themes.ACCOUNT))

    link = FederatedIdentity.objects.filter(identity_provider=idp, user=user).first()
    if link is None:
        raise Refused(text("federatedIdentityLinkNotActiveMessage"))
    if realm.organizations_enabled and any(p is not None and p.alias == alias
                                           for p in organizations.home_providers(realm, user)):
        raise Refused(text("federatedIdentityBoundOrganization"))
    others = FederatedIdentity.objects.filter(user=user).exclude(pk=link.pk).exists()
    if not (others or user.federation_link_id or storage.is_configured_for(realm, user, Credential.PASSWORD)):
        raise Refused(text("federatedIdentityRemovingLastProviderMessage"))
    link.delete()
    clear_verified(user, idp, link.subject)
    events.emit(realm, "REMOVE_FEDERATED_IDENTITY", client_id=client_id, user_id=user.pk,
                ip_address=client_address(request), details={
                    "username": user.username, "identity_provider": alias,
                    "identity_provider_identity": link.user_name})



# An account link confirmed by e-mail in another browser ----------------------------------------

VERIFY_LINK = "idp-verify-account-via-email"  # Keycloak's IdpVerifyAccountLinkActionToken type
_VERIFIED_KEY = "idp:brokering-verified:{}"


def _verified_key(user_id, alias, subject):
    return _VERIFIED_KEY.format(hashlib.sha256(f"{user_id}.{alias}.{subject}".encode()).hexdigest())


def mark_verified(realm, user, alias, subject):
    """The e-mailed link was followed in another browser: the sign-in that sent it (or the next
    one of the same identity) may link, once (Keycloak's single-use "user verified" object)."""
    cache.set(_verified_key(user.pk, alias, subject), 1, action_tokens.user_lifespan(realm, VERIFY_LINK))


def take_verified(user, idp, identity):
    """Whether the link was confirmed by e-mail for this identity and account; used up."""
    return bool(cache.delete(_verified_key(user.pk, idp.alias, identity.id)))


def clear_verified(user, idp, subject):
    """Linking or unlinking forgets a confirmation not yet used (it must not relink silently)."""
    cache.delete(_verified_key(user.pk, idp.alias, subject))
