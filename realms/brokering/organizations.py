"""Organizations and their identity providers (Keycloak 26): the links, the provider's view of
them, and the two sign-in steps that use them.

* **Links.** An identity provider serves an organization through an ``OrganizationIdentityProvider``
  row; several organizations may share one provider (Keycloak 26.8). Keycloak shows a link in the
  provider's representation as ``organizationId`` and two config keys, ``kc.org.domain`` (one of
  the organization's domains, or ``ANY``) and ``kc.org.broker.redirect.mode.email-matches``;
  here they live on the link, never in the provider's stored config, so ``organization_fields``
  reads them and ``apply_organization_fields`` writes them (the identity provider's Admin API and
  console call both).
* **``organization``** (Organization Identity-First Login, the browser flow's Organization
  sub-flow): asks for the username first; a user whose organization's provider says "redirect
  when e-mail domain matches" (or a managed member without a password, back to the provider they
  came from) goes straight to that provider through ``broker.begin``; anyone else goes on to the
  password form with the username filled in, the organization's visible providers offered.
* **``idp-add-organization-member``** (first broker login's Conditional Organization sub-flow):
  a user brokered in through an organization's provider becomes its MANAGED member (removing a
  managed member deletes the user, ``realms.users.organizations.remove_member``).
"""
from ..models import (
    Credential,
    FederatedIdentity,
    Organization,
    OrganizationDomain,
    OrganizationIdentityProvider,
    OrganizationMember,
)
from ..users import organizations, storage
from ..users.organizations import ANY_DOMAIN, OrganizationError
from . import context

ORG_DOMAIN = "kc.org.domain"  # Keycloak's OrganizationModel.ORGANIZATION_DOMAIN_ATTRIBUTE
REDIRECT_EMAIL_MATCHES = "kc.org.broker.redirect.mode.email-matches"  # IdentityProviderRedirectMode.EMAIL_MATCH
CONFIG_KEYS = (ORG_DOMAIN, REDIRECT_EMAIL_MATCHES)
# The organization a sign-in is in the scope of (Keycloak's auth note ORGANIZATION_ATTRIBUTE).
ORGANIZATION_NOTE = "kc.org"


# Links --------------------------------------------------------------------------------------

def links(org):
    """The organization's provider links, by the provider's alias."""
    return (OrganizationIdentityProvider.objects.filter(organization=org)
            .select_related("identity_provider").order_by("identity_provider__alias"))


def link_of(org, idp):
    return OrganizationIdentityProvider.objects.filter(organization=org, identity_provider=idp).first()


def link(org, idp):
    """Link ``idp`` to ``org`` (Keycloak's ``addIdentityProvider``); a provider another
    organization uses too may be linked (26.8). No domain, no redirect until set."""
    if idp is None or idp.realm_id != org.realm_id:
        raise OrganizationError("Identity provider not found with the given alias")
    _, created = OrganizationIdentityProvider.objects.get_or_create(organization=org, identity_provider=idp)
    if not created:
        raise OrganizationError("Identity provider already associated to the organization", conflict=True)


def unlink(org, idp):
    """True when ``idp`` served ``org`` and no longer does; the provider itself stays."""
    deleted, _ = OrganizationIdentityProvider.objects.filter(organization=org, identity_provider=idp).delete()
    return bool(deleted)


# The provider's representation -------------------------------------------------------------

def _first_link(idp, organization=None):
    found = OrganizationIdentityProvider.objects.filter(identity_provider=idp).order_by("pk")
    if organization is not None:
        found = found.filter(organization=organization)
    return found.first()


def organization_fields(idp, organization=None):
    """What Keycloak's IdentityProviderRepresentation says of the organization ``idp`` serves:
    ``{"organizationId": ..., "config": {kc.org.domain, kc.org.broker.redirect.mode.email-matches}}``,
    ``{}`` when it serves none. Seen from an organization (its ``identity-providers`` routes) it is
    that organization's link; otherwise the provider's first link (one, unless it is shared)."""
    found = _first_link(idp, organization)
    if found is None:
        return {}
    config = {REDIRECT_EMAIL_MATCHES: "true" if found.redirect_when_email_matches else "false"}
    if found.domain:
        config[ORG_DOMAIN] = found.domain
    return {"organizationId": found.organization_id, "config": config}


def apply_organization_fields(idp, rep, created=False):
    """Apply a representation's ``organizationId`` and org config keys to ``idp`` (saved), as
    Keycloak does on a create or an update of the provider. The link changed is the one to the
    organization ``organizationId`` names, else the provider's first; an update never moves a
    link to another organization (Keycloak keeps it), a create with ``organizationId`` makes one.
    ``kc.org.domain`` must be ``ANY`` or one of that organization's domains (blank removes it).
    Raises ``OrganizationError`` (400) otherwise. Call it in the transaction that saves ``idp``."""
    config = rep.get("config") or {}
    if not isinstance(config, dict):
        return
    org_id = rep.get("organizationId")
    target = None
    if org_id:
        org = Organization.objects.filter(realm_id=idp.realm_id, pk=org_id).first()
        if org is None:
            raise OrganizationError(f"Organization [{org_id}] not found")
        target = link_of(org, idp)
        if target is None and created:
            target = OrganizationIdentityProvider(organization=org, identity_provider=idp)
    target = target or _first_link(idp)
    if target is None:
        return  # a provider no organization uses has no organization settings to keep
    if ORG_DOMAIN in config:
        domain = str(config[ORG_DOMAIN] or "").strip()
        if domain and domain != ANY_DOMAIN:
            domain = domain.lower()
            if not OrganizationDomain.objects.filter(organization_id=target.organization_id, name=domain).exists():
                raise OrganizationError(f"Domain {domain} is not one of the organization's domains")
        target.domain = domain
    elif not created:
        target.domain = ""  # removed from the map: Keycloak drops it
    target.redirect_when_email_matches = str(config.get(REDIRECT_EMAIL_MATCHES, "")).lower() == "true"
    target.save()


def with_organization(representation, idp, organization=None):
    """``representation`` (Keycloak's IdentityProviderRepresentation of ``idp``) with its
    organization fields (``organization_fields``) merged in; returned."""
    fields = organization_fields(idp, organization)
    representation.pop("organizationId", None)
    if fields:
        representation["organizationId"] = fields["organizationId"]
        representation["config"] = {**stored_config(representation.get("config")), **fields["config"]}
    return representation


def stored_config(config):
    """``config`` without the organization keys: the map the provider row keeps."""
    return {k: v for k, v in (config or {}).items() if k not in CONFIG_KEYS}


# Which organization a sign-in is about ------------------------------------------------------

def email_domain(value):
    """The domain of an e-mail address, lower-case, or "" (Keycloak's getEmailDomain)."""
    _, at, domain = (value or "").rpartition("@")
    return domain.strip().lower() if at else ""


def resolve_organization(realm, user, domain, noted=""):
    """Keycloak's Organizations.resolveOrganization: the organization the sign-in noted while
    the user still belongs to it; else the user's one enabled organization (a managed membership
    first when several, else the one with the domain); without memberships, the organization
    that owns ``domain``."""
    orgs = Organization.objects.filter(realm=realm, enabled=True).prefetch_related("domains")
    if noted:
        org = orgs.filter(pk=noted).first()
        if org is not None and (user is None or organizations.membership(org, user.pk) is not None):
            return org
    if user is not None:
        members = list(OrganizationMember.objects.filter(user=user, organization__in=orgs)
                       .select_related("organization"))
        if len(members) == 1:
            return members[0].organization
        managed = [m.organization for m in members if m.membership_type == OrganizationMember.MANAGED]
        if managed:
            return managed[0]
        if members:
            return next((m.organization for m in members
                         if domain and any(d.name == domain for d in m.organization.domains.all())), None)
    return orgs.filter(domains__name=domain).first() if domain else None


def has_first_factor(realm, user):
    """A password or a passkey: the user can choose how to sign in (Keycloak's first-factor credentials)."""
    return any(storage.is_configured_for(realm, user, kind)
               for kind in (Credential.PASSWORD, Credential.WEBAUTHN_PASSWORDLESS))


def home_providers(realm, user):
    """The providers a managed member came in through (Keycloak's resolveHomeBroker): their
    enabled organizations' providers the user is linked to."""
    if user is None:
        return []
    managed = OrganizationMember.objects.filter(user=user, organization__enabled=True,
                                                membership_type=OrganizationMember.MANAGED)
    linked = FederatedIdentity.objects.filter(
        user=user, identity_provider__organization_links__organization__in=managed.values("organization"))
    return [context.identity_provider(realm, alias)
            for alias in sorted(set(linked.values_list("identity_provider__alias", flat=True)))]


def redirect_provider(org, domain):
    """The provider of ``org`` that says "redirect when the e-mail domain matches" for
    ``domain``: one set to that domain first, then one set to ANY of the organization's domains."""
    if not domain:
        return None
    candidates = [found for found in links(org) if found.redirect_when_email_matches]
    for found in candidates:
        if found.domain.lower() == domain:
            return found.identity_provider
    if org.domains.filter(name=domain).exists():
        return next((found.identity_provider for found in candidates if found.domain == ANY_DOMAIN), None)
    return None


def login_providers(realm, auth_session, providers, only_realm=False):
    """Of the providers the login page would offer, those it offers in an organizations realm:
    the realm's own (no organization uses them) and, once the sign-in is in an organization's
    scope, that organization's (``only_realm`` drops them: the first identity-first page)."""
    if not realm.organizations_enabled:
        return list(providers)
    noted = auth_session.notes.get(ORGANIZATION_NOTE, "") if auth_session is not None else ""
    used = set(OrganizationIdentityProvider.objects.filter(organization__realm=realm)
                  .values_list("identity_provider__alias", flat=True))
    own = set() if only_realm or not noted else set(
        OrganizationIdentityProvider.objects.filter(organization_id=noted, organization__enabled=True)
        .values_list("identity_provider__alias", flat=True))
    return [idp for idp in providers if idp.alias not in used or idp.alias in own]
