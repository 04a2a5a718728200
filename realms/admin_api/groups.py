"""``/admin/realms/{realm}/groups`` (Keycloak's GroupsResource and GroupResource): the tree with
``search``, ``exact``, ``first``, ``max`` and ``briefRepresentation``, ``count``, CRUD,
``children`` (create or move a subgroup) and ``members``. Groups in the export's JSON
(``group_rep`` without the subtree, ``subGroupCount`` instead); governed by ``view-users`` /
``manage-users`` (``query-groups`` to list), as in Keycloak; the lists, the count and each
``subGroupCount`` hold the groups the caller may list (fine-grained admin permissions,
docs/decisions/0043 and 0045)."""
import functools

from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..administration.admin_permissions import visible
from ..audit import admin_events
from ..models import Group
from ..representation import RepresentationError
from ..representation.fields import Parser
from ..representation.groups import parse_group
from ..representation.users import user_fields_rep
from . import errors
from .query import check_fields, flag, location, page
from .reps import brief_user_rep, group_api_rep, group_reps
from .views import RealmResource


def _tree_rep(group, keep, children_of, reps):
    """The group with the part of its subtree in ``keep`` (a search's hits and their ancestors)."""
    rep = reps[group.pk]
    rep["subGroups"] = [_tree_rep(c, keep, children_of, reps) for c in children_of.get(group.pk, []) if c.pk in keep]
    return rep


def _matching(request, groups):
    search = request.query_params.get("search")
    if not search:
        return groups
    return groups.filter(name__iexact=search) if flag(request, "exact", False) else groups.filter(name__icontains=search)


def _visible(request, realm, groups):
    """The groups the caller may list: every one with view-users, else those fine-grained
    permissions let them view or view the members of (``realms.administration.admin_permissions.visible``)."""
    return visible(request.user.admin, realm, "Groups", groups)


def _reps(view, groups, brief=False):
    """The groups as the caller sees them (``subGroupCount``: the subgroups they may list)."""
    return group_reps(view.request.user.admin, view.realm, groups, brief)


def _rep(view, group):
    return group_api_rep(view.request.user.admin, view.realm, group)


def _fields(data):
    if not isinstance(data, dict):
        raise errors.Invalid("Expected a GroupRepresentation")
    if not data.get("name"):
        raise errors.Invalid("Group name is missing")
    try:
        fields = parse_group(data, "", Parser())["fields"]
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None
    fields.pop("id", None)
    return fields


def _save(group, operation, view):
    check_fields(group, exclude=["parent"])
    with transaction.atomic():
        group.save()
        admin_events.record(view.realm, operation, "GROUP", f"groups/{group.pk}", auth=view.auth_details(),
                            representation=lambda: _rep(view, group))


def _check_name(realm, parent, name, group=None):
    siblings = Group.objects.filter(realm=realm, parent=parent, name=name).exclude(pk=getattr(group, "pk", None))
    if siblings.exists():
        raise errors.Conflict(f"Top level group named '{name}' already exists." if parent is None
                              else f"Sibling group named '{name}' already exists.")


def _group(realm, group_id):
    group = Group.objects.filter(realm=realm, pk=group_id).first()
    if group is None:
        raise errors.NotFound("Could not find group by id")
    return group


class Groups(RealmResource):
    required_role = {"GET": "query-groups", "POST": "manage-users"}

    def get(self, request, realm):
        brief = flag(request, "briefRepresentation", True)
        groups = Group.objects.filter(realm=self.realm)
        if not request.query_params.get("search"):
            top = _visible(request, self.realm, groups.filter(parent=None)).order_by("name")
            return Response(_reps(self, page(request, top), brief))
        every = {g.pk: g for g in groups}
        keep = set()
        # The hits are the groups listed to the caller; their ancestors come along to place them
        # in the tree (as Keycloak 26.2 builds the hierarchy of a search).
        for hit in _visible(request, self.realm, _matching(request, groups)):
            node = hit
            while node is not None and node.pk not in keep:
                keep.add(node.pk)
                node = every.get(node.parent_id)
        children_of = {}
        for g in sorted(every.values(), key=lambda g: g.name):
            children_of.setdefault(g.parent_id, []).append(g)
        roots = [g for g in children_of.get(None, []) if g.pk in keep]
        kept = [every[pk] for pk in keep]
        reps = dict(zip((g.pk for g in kept), _reps(self, kept, brief)))
        return Response([_tree_rep(g, keep, children_of, reps) for g in page(request, roots)])

    def post(self, request, realm):
        """A new top-level group (201), or with an existing group's id, that group moved to the top (204)."""
        if isinstance(request.data, dict) and request.data.get("id"):
            group = _group(self.realm, request.data["id"])
            _check_name(self.realm, None, group.name, group)
            group.parent = None
            _save(group, "UPDATE", self)
            return Response(status=status.HTTP_204_NO_CONTENT)
        fields = _fields(request.data)
        _check_name(self.realm, None, fields["name"])
        group = Group(realm=self.realm, **fields)
        _save(group, "CREATE", self)
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/groups/{group.pk}")})


class GroupCount(RealmResource):
    required_role = "query-groups"

    def get(self, request, realm):
        groups = _matching(request, Group.objects.filter(realm=self.realm))
        if flag(request, "top", False):
            groups = groups.filter(parent=None)
        return Response({"count": _visible(request, self.realm, groups).count()})


class GroupDetail(RealmResource):
    required_role = {"GET": "view-users", "PUT": "manage-users", "DELETE": "manage-users"}

    def get(self, request, realm, group_id):
        return Response(_rep(self, _group(self.realm, group_id)))

    def put(self, request, realm, group_id):
        group = _group(self.realm, group_id)
        fields = _fields({"name": group.name, **request.data} if isinstance(request.data, dict) else request.data)
        _check_name(self.realm, group.parent, fields["name"], group)
        for name, value in fields.items():
            setattr(group, name, value)
        _save(group, "UPDATE", self)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, group_id):
        group = _group(self.realm, group_id)
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "GROUP", f"groups/{group.pk}", auth=self.auth_details())
            group.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class GroupChildren(RealmResource):
    """GET the subgroups; POST a GroupRepresentation: with the id of an existing group, move it
    here (204), else create a subgroup (201)."""

    required_role = {"GET": "view-users", "POST": "manage-users"}

    def get(self, request, realm, group_id):
        parent = _group(self.realm, group_id)
        children = _visible(request, self.realm, _matching(request, parent.children.order_by("name")))
        brief = flag(request, "briefRepresentation", True)
        return Response(_reps(self, page(request, children), brief))

    def post(self, request, realm, group_id):
        parent = _group(self.realm, group_id)
        moved_id = request.data.get("id") if isinstance(request.data, dict) else None
        if moved_id:
            child = _group(self.realm, moved_id)
            ancestor = parent
            while ancestor is not None:
                if ancestor.pk == child.pk:
                    raise errors.Conflict("Cannot move group into one of its subgroups")
                ancestor = ancestor.parent
            _check_name(self.realm, parent, child.name, child)
            child.parent = parent
            _save(child, "UPDATE", self)
            return Response(status=status.HTTP_204_NO_CONTENT)
        fields = _fields(request.data)
        _check_name(self.realm, parent, fields["name"])
        child = Group(realm=self.realm, parent=parent, **fields)
        _save(child, "CREATE", self)
        return Response(_rep(self, child), status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/groups/{child.pk}")})


class GroupMembers(RealmResource):
    required_role = "view-users"
    fine_grained = {"GET": [("Groups", "view-members", "group_id")]}

    def get(self, request, realm, group_id):
        members = _group(self.realm, group_id).members.order_by("username").select_related("service_account_client")
        rep = brief_user_rep if flag(request, "briefRepresentation", False) else user_fields_rep
        return Response([rep(u) for u in page(request, members)])


class GroupByPath(RealmResource):
    required_role = "view-users"

    @functools.cached_property
    def group(self):
        group = None
        for name in [n for n in self.kwargs["group_path"].split("/") if n]:
            group = Group.objects.filter(realm=self.realm, parent=group, name=name).first()
            if group is None:
                break
        return group

    def locate(self, request):
        # The path is looked up before any check, as Keycloak's RealmAdminResource does.
        if self.group is None:
            self.not_found(request, "Group path does not exist")

    def permission_targets(self, method, role):
        # The group the path names is the object decided on, as Keycloak's GroupResource.
        return [(role, self.group)]

    def get(self, request, realm, group_path):
        group = self.group
        if group is None:
            raise errors.NotFound("Group path does not exist")
        return Response(_rep(self, group))
