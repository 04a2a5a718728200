"""The sign-in steps organizations bring (Keycloak 26), registered by ``register``:

* ``organization`` (Organization Identity-First Login, in the browser flow's Organization
  sub-flow, while the realm has organizations on and some organization exists): the username
  page first (or the client's ``login_hint`` at once). Then, as Keycloak's OrganizationAuthenticator:
  a managed member without a password or passkey goes back to the provider they came in through;
  a user whose e-mail domain has a provider of their organization set to "redirect when e-mail
  domain matches" goes straight to it (``broker.begin``, the username as the provider's login
  hint); someone unknown whose domain is an organization's stays on the username page with that
  organization's visible providers; everyone else goes on to the password form (the step answers
  ATTEMPTED with the username kept), where the organization's providers are offered. The
  identity-provider redirector runs before it, so ``kc_idp_hint`` naming a usable provider never
  reaches it. After a provider's error the step does not redirect again on its own (the page
  shows the error; a second submit is the person's choice).
* ``idp-add-organization-member`` (first broker login): the brokered user becomes a MANAGED
  member of the organization whose provider brought them in.
"""
from ..http.messages import Message
from ..models import Organization, OrganizationMember
from ..signin.flows import Authenticator, Outcome, register_authenticator
from ..signin.steps.username_password import ATTEMPTED_USERNAME
from ..users import organizations as members
from ..users import storage
from . import broker, context, login_page
from .organizations import (
    ANY_DOMAIN,
    ORGANIZATION_NOTE,
    email_domain,
    has_first_factor,
    home_providers,
    links,
    login_providers,
    redirect_provider,
    resolve_organization,
)
from .providers import get_provider_type

INVALID_USERNAME = Message("invalidUsernameMessage")
INVALID_USER = Message("invalidUserMessage")  # Keycloak's answer for INVALID_USER: nothing more said


def _buttons(ctx, aliases):
    """The login page's buttons for these providers only (same ids and links as everywhere)."""
    return [b for b in login_page.buttons(ctx.realm, ctx.client, ctx.auth_session) if b["alias"] in aliases]


class OrganizationIdentityFirst(Authenticator):
    provider_id = "organization"
    display_name = "Organization Identity-First Login"
    help_text = "If organizations are enabled, automatically redirects users to the corresponding identity provider."
    configured_without_user = True

    def configured_for(self, ctx, user):
        return ctx.realm.organizations_enabled

    def page(self, ctx, *, username="", error="", organization=None, status=200):
        """The identity-first page: the realm's own providers, or once the username named an
        organization, that organization's visible ones."""
        notes = ctx.auth_session.notes
        error_key = notes.pop(broker.BROKER_ERROR, None)
        shown = login_page.buttons(ctx.realm, ctx.client, ctx.auth_session)
        providers = [context.identity_provider(ctx.realm, b["alias"]) for b in shown]
        if organization is None:
            aliases = {idp.alias for idp in login_providers(ctx.realm, ctx.auth_session, providers, only_realm=True)}
        else:
            aliases = {found.identity_provider.alias for found in links(organization)}
        realm = ctx.realm
        return ctx.render("login-username.html", {
            "username": username, "error": error,
            "username_label": "usernameOrEmail" if realm.login_with_email_allowed else "username",
            "registration_url": ctx.login_actions_url("registration") if realm.registration_allowed else "",
            "social": _buttons(ctx, aliases), "broker_error": Message(*error_key) if error_key else None,
        }, status=status)

    def authenticate(self, ctx):
        realm, notes = ctx.realm, ctx.auth_session.notes
        if not realm.organizations_enabled or not Organization.objects.filter(realm=realm).exists():
            return Outcome.attempted()
        if ctx.user is not None:  # already identified (re-authentication): nothing to route
            return self._attempted(ctx, ctx.user.username)
        hint = ctx.auth_session.login_hint
        if notes.get(broker.BROKER_ERROR) or not hint:
            return Outcome.challenge(self.page(ctx, username=hint))
        return self._route(ctx, hint)

    def action(self, ctx):
        username = ctx.params.get("username", "").strip()
        if not username:
            return Outcome.challenge(self.page(ctx, error=INVALID_USERNAME))
        return self._route(ctx, username)

    def _attempted(self, ctx, username):
        """On to the next alternative (the password form), the username kept for it."""
        if username:
            ctx.auth_session.notes[ATTEMPTED_USERNAME] = username
        return Outcome.attempted()

    def _route(self, ctx, username):
        realm, notes = ctx.realm, ctx.auth_session.notes
        user = storage.find_user(realm, username)
        domain = email_domain(username)
        org = resolve_organization(realm, user, domain, notes.get(ORGANIZATION_NOTE, ""))
        if org is None:
            notes.pop(ORGANIZATION_NOTE, None)
            return self._attempted(ctx, username)
        notes[ORGANIZATION_NOTE] = org.pk
        target = self._provider(realm, org, user, domain)
        if target is not None:
            ctx.auth_session.login_hint = user.email if user is not None and user.email else username
            return Outcome.challenge(broker.begin(ctx.request, realm, ctx.client, ctx.auth_session, target))
        if user is None:
            # Someone unknown in an organization's scope: identity-first again, with the
            # organization's providers to register through (Keycloak's unknownUserChallenge).
            return Outcome.challenge(self.page(ctx, username=username, organization=org))
        if not user.enabled:
            ctx.login_error("user_disabled", user=user, username=username)
            return Outcome.failure("user_disabled", self.page(ctx, username=username, error=INVALID_USER))
        return self._attempted(ctx, username)

    def _provider(self, realm, org, user, domain):
        """Where the user is sent without a choice: never a user who has a password or passkey
        (they pick how to sign in); a managed member's one home provider; else the provider
        set to redirect for the e-mail's domain."""
        if user is not None and has_first_factor(realm, user):
            return None
        home = [idp for idp in home_providers(realm, user) if _usable(idp)]
        if len(home) == 1:
            return home[0]
        target = redirect_provider(org, domain or email_domain(getattr(user, "email", "")))
        return target if _usable(target) else None


def _usable(idp):
    return idp is not None and idp.enabled and not idp.link_only and get_provider_type(idp.provider_id) is not None


class IdpAddOrganizationMember(Authenticator):
    """Keycloak's IdpAddOrganizationMemberAuthenticator: the user first broker login found or
    created joins, as a MANAGED member, the organization the provider serves. Which one: the
    organization this sign-in was in the scope of (the identity-first step noted it; a provider
    not among its own is refused, as Keycloak's ACCESS_DENIED), else the provider's one enabled
    organization, else (a shared provider) the one whose domain the brokered e-mail has."""

    provider_id = "idp-add-organization-member"
    display_name = "Organization Member Onboard"
    help_text = "Adds a federated user as a member of an organization"
    requires_user = True

    def configured_for(self, ctx, user):
        idp, identity = context.brokered(ctx)
        return idp is not None and ctx.realm.organizations_enabled and _organization_of(ctx, idp, identity) is not None

    def authenticate(self, ctx):
        idp, identity = context.brokered(ctx)
        if idp is None or not ctx.realm.organizations_enabled:
            return Outcome.attempted()
        org = _organization_of(ctx, idp, identity)
        if org is None:
            return Outcome.attempted()
        if not links(org).filter(identity_provider=idp).exists():
            return Outcome.failure("access_denied")
        members.add_member(org, ctx.user, OrganizationMember.MANAGED)
        return Outcome.success()


def _organization_of(ctx, idp, identity):
    noted = ctx.auth_session.notes.get(ORGANIZATION_NOTE, "")
    enabled = Organization.objects.filter(realm=ctx.realm, enabled=True)
    if noted:
        org = enabled.filter(pk=noted).first()
        if org is not None:
            return org
    serving = list(enabled.filter(identity_provider_links__identity_provider=idp).distinct())
    if len(serving) <= 1:
        return serving[0] if serving else None
    domain = email_domain(identity.email)
    for org in serving:
        found = links(org).get(identity_provider=idp)
        if found.domain.lower() == domain or (found.domain == ANY_DOMAIN and org.domains.filter(name=domain).exists()):
            return org
    return next((org for org in serving if org.domains.filter(name=domain).exists()), None)


def register():
    """Called from RealmsConfig.ready."""
    register_authenticator(OrganizationIdentityFirst)
    register_authenticator(IdpAddOrganizationMember)
