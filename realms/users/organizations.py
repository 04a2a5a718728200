"""Organizations (Keycloak 26): a realm's named sets of users with e-mail domains, turned on by the
realm's ``organizationsEnabled``. What the Admin API, the account API, the console, the realm
export and the invitation links share: the representation, its checks, membership and the
invitation e-mail. Protocol-free (the token claim lives in ``oidc``)."""
import re

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction
from django.db.models import Q

from ..data import rows
from ..errors import RealmsError
from ..http import action_tokens, email
from ..models import Organization, OrganizationDomain, OrganizationIdentityProvider, OrganizationMember

INVITE = action_tokens.ORG_INVITE
# An identity provider's domain meaning any of its organization's (Keycloak's OrganizationDomainModel.ANY_DOMAIN).
ANY_DOMAIN = "ANY"


class OrganizationError(RealmsError):
    """Refused: ``conflict`` when it clashes with another organization (409), else invalid (400)."""

    def __init__(self, message, conflict=False):
        super().__init__(message)
        self.conflict = conflict


# Representation -----------------------------------------------------------------------------

def domains_rep(org):
    return [{"name": d.name, "verified": d.verified} for d in org.domains.all()]


def rep(org, brief=True):
    """Keycloak's OrganizationRepresentation: the brief one without ``attributes``."""
    out = {"id": org.pk, "name": org.name, "alias": org.alias, "enabled": org.enabled}
    if org.description:
        out["description"] = org.description
    if org.redirect_url:
        out["redirectUrl"] = org.redirect_url
    out["domains"] = domains_rep(org)
    if not brief:
        out["attributes"] = org.attributes or {}
    return out


# Changes --------------------------------------------------------------------------------------

def _text(data, key):
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise OrganizationError(f"{key} must be a string")
    return (value or "").strip() if key != "description" else (value or "")


def _domains(data):
    raw = data.get("domains")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise OrganizationError("domains must be an array")
    found = {}
    for item in raw:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip():
            continue  # Keycloak drops domains without a name
        name = name.strip().lower()
        try:
            validate_email(f"nouser@{name}")
        except ValidationError:
            raise OrganizationError(f"The specified domain is invalid: {name}") from None
        found[name] = bool(item.get("verified", False))
    return found


def _attributes(data):
    raw = data.get("attributes")
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in raw.values()):
        raise OrganizationError("attributes must map names to arrays of strings")
    return {str(k): list(v) for k, v in raw.items()}


_URL = URLValidator(schemes=["http", "https"])


def apply(realm, data, org=None):
    """Create (``org`` None) or update an organization from a representation, as Keycloak's
    provider does: name required and unique, alias defaulting to the name and never changed,
    each domain in one organization only. Returns the saved organization."""
    if not isinstance(data, dict):
        raise OrganizationError("Organization cannot be null.")
    name = _text(data, "name")
    if not name:
        raise OrganizationError("Name can not be null")
    given_alias = _text(data, "alias")
    if re.search(r"\s", given_alias):  # only a given alias: one taken from the name may have spaces
        raise OrganizationError("Empty Space not allowed.")
    alias = given_alias or name
    redirect_url = _text(data, "redirectUrl")
    if redirect_url:
        try:
            _URL(redirect_url)
        except ValidationError:
            raise OrganizationError("Invalid redirect URL") from None
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise OrganizationError("enabled must be a boolean")
    others = Organization.objects.filter(realm=realm).exclude(pk=getattr(org, "pk", None))
    if others.filter(name=name).exists():
        raise OrganizationError("A organization with the same name already exists.", conflict=True)
    if org is not None and alias != org.alias:
        raise OrganizationError("Cannot change the alias")
    if org is None and others.filter(alias=alias).exists():
        raise OrganizationError("A organization with the same alias already exists", conflict=True)
    domains, attributes = _domains(data), _attributes(data)
    if domains:
        taken = OrganizationDomain.objects.filter(realm=realm, name__in=domains).exclude(
            organization_id=getattr(org, "pk", None)).values_list("name", flat=True).first()
        if taken:
            raise OrganizationError(f"Domain {taken} is already linked to another organization in realm {realm.name}")
    org = org or Organization(realm=realm, alias=alias)
    if data.get("id") and org.pk is None:
        org.pk = data["id"]
    org.name, org.enabled, org.description, org.redirect_url = name, enabled, _text(data, "description"), redirect_url
    if attributes is not None:
        org.attributes = attributes
    with transaction.atomic():
        org.save()
        if domains is not None:
            org.domains.exclude(name__in=domains).delete()
            # A provider set to a domain the organization no longer has loses it, as in Keycloak.
            OrganizationIdentityProvider.objects.filter(organization=org).exclude(
                domain__in=[*domains, ANY_DOMAIN, ""]).update(domain="")
            for domain_name, verified in domains.items():
                OrganizationDomain.objects.update_or_create(
                    realm=realm, organization=org, name=domain_name, defaults={"verified": verified})
    return org


def search(realm, text=None, exact=False, query=None):
    """Keycloak's search: ``text`` in the name or a domain (whole when ``exact``), or ``query``
    ({attribute: value}) all matching exactly."""
    orgs = Organization.objects.filter(realm=realm)
    if query:
        for key, value in query.items():
            orgs = rows.holding(orgs, key, value)
    elif text:
        if exact:
            orgs = orgs.filter(Q(name__iexact=text) | Q(domains__name__iexact=text))
        else:
            orgs = orgs.filter(Q(name__icontains=text) | Q(domains__name__icontains=text))
    return orgs.distinct().order_by("name")


def parse_query(value):
    """``q``: ``key1:value1 key2:value2`` (Keycloak's SearchQueryUtils)."""
    out = {}
    for part in (value or "").split():
        key, sep, val = part.partition(":")
        if sep and key:
            out[key] = val
    return out


# Membership -----------------------------------------------------------------------------------

def add_member(org, user, membership_type=OrganizationMember.UNMANAGED):
    """True when added, False when the user already is a member."""
    _, created = OrganizationMember.objects.get_or_create(
        organization=org, user=user, defaults={"membership_type": membership_type})
    return created


def membership(org, user_id):
    return OrganizationMember.objects.filter(organization=org, user_id=user_id).select_related("user").first()


def remove_member(member):
    """A managed member is deleted with the membership (the organization provisioned them)."""
    if member.membership_type == OrganizationMember.MANAGED:
        member.user.delete()
    else:
        member.delete()


def of_user(user):
    """The organizations the user is a member of, by name."""
    return Organization.objects.filter(realm_id=user.realm_id, memberships__user=user).order_by("name")


# Invitations ----------------------------------------------------------------------------------

class InvitationNotSent(RealmsError):
    """No SMTP server, no address, or no signing key: Keycloak's "Failed to send invite email"."""


def invite(org, user, request=None):
    """E-mail an invitation to ``user`` (an unsaved User holding the address of someone to
    register, or an existing user): an ``ORGIVT`` action token valid for the realm's
    ``actionTokenGeneratedByAdminLifespan``, used once."""
    realm = org.realm
    lifespan = realm.action_token_generated_by_admin_lifespan
    existing = user.pk is not None and not user._state.adding
    try:
        token = action_tokens.create(realm, user if existing else None, INVITE, lifespan=lifespan,
                                     client_id="account", request=request, eml=user.email, org_id=org.pk,
                                     reduri=org.redirect_url or f"{action_tokens.issuer(realm, request)}/account/")
    except action_tokens.InvalidToken as exc:
        raise InvitationNotSent(str(exc)) from None
    link = action_tokens.link(realm, token, request)
    locale = email.user_locale(realm, user)
    personalized = bool(user.first_name and user.last_name)
    args = (link, lifespan // 60, realm.display_name or realm.name, org.name,
            email.expiration_text(realm, locale, lifespan), user.first_name, user.last_name)
    try:
        email.send_to_user(realm, user, "org-invite", "orgInviteSubject", subject_args=(org.name,), body_args=args,
                           body_key="orgInviteBodyPersonalized" if personalized else "orgInviteBody")
    except email.NotConfigured as exc:
        raise InvitationNotSent(str(exc)) from None
    return link


# What a followed invitation does (``realms.signin.views.action_token``, ``realms.signin.steps.registration``)

INVITE_NOTE = "org_invite"  # the auth-session note of a registration opened by an invitation


def invited_organization(realm, claims):
    """The organization an ``ORGIVT`` token names, when it may still be joined."""
    if not realm.organizations_enabled:
        return None
    return Organization.objects.filter(realm=realm, pk=claims.get("org_id"), enabled=True).first()


def invitation_note(claims):
    return {"org_id": claims.get("org_id"), "email": claims.get("eml", ""), "jti": claims["jti"], "exp": claims["exp"]}


def join(org, user, claims):
    """Use the invitation (once: ``action_tokens.ExpiredToken`` when it was used already) and
    make ``user`` a member."""
    action_tokens.consume(claims)
    add_member(org, user)
