"""The export's ``organizations`` (Keycloak 26): each organization's full representation with its
``members`` by username and membership type and its ``identityProviders`` (the realm's providers
it uses, with the link's ``kc.org.*`` config keys); imported after the users and the identity
providers, through the same checks as the Admin API (``realms.users.organizations.apply``,
``realms.brokering.organizations``)."""
from ..brokering import admin as idp_admin
from ..brokering import organizations as org_idps
from ..models import IdentityProvider, Organization, OrganizationMember, User
from ..users import organizations
from .fields import RepresentationError, as_dict, as_list


def parse_organizations(top):
    items = as_list(top.get("organizations") or [], "organizations")
    return [{**as_dict(item, f"organizations[{i}]"), "_path": f"organizations[{i}]"} for i, item in enumerate(items)]


def export_organizations(realm):
    out = []
    for org in realm.organization_set.prefetch_related("domains").order_by("name"):
        members = OrganizationMember.objects.filter(organization=org).select_related("user").order_by("user__username")
        providers = []
        for found in org_idps.links(org):
            # The secret is the realm's identityProviders' to carry: masked here (a partial export too).
            rep = org_idps.with_organization(idp_admin.rep(found.identity_provider), found.identity_provider, org)
            rep.pop("organizationId", None)  # the organization holding the list
            rep.pop("types", None)
            providers.append(rep)
        out.append({**organizations.rep(org, brief=False),
                    "members": [{"username": m.user.username, "membershipType": m.membership_type} for m in members],
                    **({"identityProviders": providers} if providers else {})})
    return out


def _link_providers(realm, org, reps, path):
    """The organization's ``identityProviders``: each a provider of the realm's
    ``identityProviders`` by alias, linked with its ``kc.org.*`` config keys (Keycloak's import)."""
    for index, rep in enumerate(reps):
        at = f"{path}.identityProviders[{index}]"
        rep = as_dict(rep, at)
        idp = IdentityProvider.objects.filter(realm=realm, alias=rep.get("alias")).first()
        if idp is None:
            raise RepresentationError(f"{at}.alias", f"no identity provider {rep.get('alias')!r} in identityProviders")
        try:
            org_idps.link(org, idp)
            org_idps.apply_organization_fields(idp, {"organizationId": org.pk, "config": rep.get("config") or {}})
        except organizations.OrganizationError as exc:
            raise RepresentationError(at, str(exc)) from None


def import_organizations(realm, items):
    for item in items:
        path = item.pop("_path")
        members = as_list(item.pop("members", None) or [], f"{path}.members")
        providers = as_list(item.pop("identityProviders", None) or [], f"{path}.identityProviders")
        if Organization.objects.filter(pk=item.get("id")).exists():
            item.pop("id")  # the export imported under another realm name: a new id
        try:
            org = organizations.apply(realm, item)
        except organizations.OrganizationError as exc:
            raise RepresentationError(path, str(exc)) from None
        _link_providers(realm, org, providers, path)
        for index, member in enumerate(members):
            member = as_dict(member, f"{path}.members[{index}]")
            user = User.objects.filter(realm=realm, username=member.get("username")).first()
            if user is None:
                raise RepresentationError(f"{path}.members[{index}]", f"no user {member.get('username')!r}")
            kind = member.get("membershipType") or OrganizationMember.UNMANAGED
            if kind not in (OrganizationMember.MANAGED, OrganizationMember.UNMANAGED):
                raise RepresentationError(f"{path}.members[{index}].membershipType", f"unknown type {kind!r}")
            organizations.add_member(org, user, kind)
