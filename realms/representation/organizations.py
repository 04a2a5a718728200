"""The export's ``organizations`` (Keycloak 26): each organization's full representation with its
``members`` by username and membership type; imported after the users, through the same checks
as the Admin API (``realms.users.organizations.apply``)."""
from ..models import Organization, OrganizationMember, User
from ..users import organizations
from .fields import RepresentationError, as_dict, as_list


def parse_organizations(top):
    items = as_list(top.get("organizations") or [], "organizations")
    return [{**as_dict(item, f"organizations[{i}]"), "_path": f"organizations[{i}]"} for i, item in enumerate(items)]


def export_organizations(realm):
    out = []
    for org in realm.organization_set.prefetch_related("domains").order_by("name"):
        members = OrganizationMember.objects.filter(organization=org).select_related("user").order_by("user__username")
        out.append({**organizations.rep(org, brief=False),
                    "members": [{"username": m.user.username, "membershipType": m.membership_type} for m in members]})
    return out


def import_organizations(realm, items):
    for item in items:
        path = item.pop("_path")
        members = as_list(item.pop("members", None) or [], f"{path}.members")
        if Organization.objects.filter(pk=item.get("id")).exists():
            item.pop("id")  # the export imported under another realm name: a new id
        try:
            org = organizations.apply(realm, item)
        except organizations.OrganizationError as exc:
            raise RepresentationError(path, str(exc)) from None
        for index, member in enumerate(members):
            member = as_dict(member, f"{path}.members[{index}]")
            user = User.objects.filter(realm=realm, username=member.get("username")).first()
            if user is None:
                raise RepresentationError(f"{path}.members[{index}]", f"no user {member.get('username')!r}")
            kind = member.get("membershipType") or OrganizationMember.UNMANAGED
            if kind not in (OrganizationMember.MANAGED, OrganizationMember.UNMANAGED):
                raise RepresentationError(f"{path}.members[{index}].membershipType", f"unknown type {kind!r}")
            organizations.add_member(org, user, kind)
