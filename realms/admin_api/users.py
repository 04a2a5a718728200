"""``/admin/realms/{realm}/users`` (Keycloak's UsersResource and UserResource): search, count,
CRUD, reset-password, groups, role mappings, logout and sessions. Users in the export's JSON
(``user_fields_rep``), parsed by the export's field table (``parse_user``)."""
import operator
from contextlib import contextmanager
from functools import reduce

from django.db import IntegrityError, transaction
from django.db.models import Q
from rest_framework import status
from rest_framework.response import Response

from ..administration.admin_permissions import visible
from ..audit import admin_events
from ..credentials import password_policy
from ..data import rows
from ..data.user_queries import contains, listed_count
from ..models import Credential, Group, User, UserSession
from ..representation import RepresentationError
from ..representation.fields import Parser
from ..representation.users import parse_user, user_fields_rep
from ..sso import impersonation, sessions
from ..users import storage
from ..users.accounts import create_user
from . import errors, user_profile
from .query import bounds, check_fields, flag, location, page
from .reps import brief_user_rep, group_api_rep, group_reps
from .views import RealmResource

UPDATE_PASSWORD = "UPDATE_PASSWORD"
def _term(field, term):
    """Keycloak's ``search`` term: ``"foo"`` exact, ``*foo*`` infix, ``*foo`` suffix, else prefix."""
    if len(term) > 1 and term.startswith('"') and term.endswith('"'):
        return Q(**{f"{field}__iexact": term[1:-1]})
    if term.startswith("*") and term.endswith("*") and len(term) > 1:
        return contains(field, term[1:-1])
    if term.startswith("*"):
        return Q(**{f"{field}__iendswith": term[1:]})
    return Q(**{f"{field}__istartswith": term.rstrip("*")})


_SEARCHED = ("username", "email", "first_name", "last_name")
_ATTRIBUTE_PARAMS = (("username", "username"), ("email", "email"), ("firstName", "first_name"),
                     ("lastName", "last_name"))
_ATTRIBUTE_QUERY = ("username", "email", "firstName", "lastName", "enabled", "emailVerified", "exact", "q",
                    "idpAlias", "idpUserId")


def _listing(params):
    """Whether the query asks for the realm's whole listing: no search, no attribute query."""
    return not params.get("search") and not any(params.get(p) is not None for p in _ATTRIBUTE_QUERY)


def search_users(request, realm):
    """The users matching the query parameters of GET users and GET users/count."""
    params = request.query_params
    users = User.objects.filter(realm=realm)
    search = params.get("search")
    if search or _listing(params):
        # Keycloak lists and searches without service-account users, but finds them by
        # username, email ... (``kcadm.sh add-roles --uusername service-account-app`` relies on it).
        users = users.filter(service_account_client__isnull=True)
    if search:
        search = search.strip()
        if search.startswith("id:"):
            return users.filter(pk=search[3:].strip())
        for term in search.split():
            users = users.filter(reduce(operator.or_, (_term(f, term) for f in _SEARCHED)))
    exact = flag(request, "exact", False)
    for param, field in _ATTRIBUTE_PARAMS:
        value = params.get(param)
        if value is not None:
            users = users.filter(Q(**{f"{field}__iexact": value}) if exact else contains(field, value))
    for param, field in (("enabled", "enabled"), ("emailVerified", "email_verified")):
        value = flag(request, param)
        if value is not None:
            users = users.filter(**{field: value})
    for pair in (params.get("q") or "").split():
        key, sep, value = pair.partition(":")
        if not sep or not key:
            raise errors.Invalid("Invalid query, must be of the form key:value")
        users = rows.holding(users, key, value)
    return users.order_by("username")


def _found(request, realm):
    """The users the query asks for that the caller may view, and whether they are the realm's
    whole listing (no filter; an admin who views every user), which the realm's tally counts."""
    query = search_users(request, realm)
    found = visible(request.user.admin, realm, "Users", query)
    return found, found is query and _listing(request.query_params)


def _count(realm, found, whole):
    return listed_count(realm) if whole else found.count()


# From this ``first`` on, a page is read from whichever end of the list is nearer. The count
# that tells which end is the realm's tally for the whole listing; a filtered one is counted, which
# can cost as much as skipping half a million index entries, and nothing is counted for the
# shallow pages that are most of the traffic.
_DEEP = 100_000


def _page_of_usernames(request, realm, found, whole):
    """The usernames of the page ``first``/``max`` of ``found`` (ordered by username), as a query.

    A deferred join: PostgreSQL skips ``first`` entries of an index of usernames instead of
    ``first`` table rows, and the caller reads only the page's rows. A deep page is counted from
    the end (descending) when that end is nearer, so the last page costs a count, not a scan."""
    first, most = bounds(request)
    usernames = found.values("username")
    if first >= _DEEP:
        total = _count(realm, found, whole)
        if total - first < first:
            end = max(total - first, 0)
            return usernames.order_by("-username")[max(end - most, 0):end]
    return usernames[first:first + most]


class Users(RealmResource):
    """GET needs ``query-users`` and lists the users the caller may view: every one with
    ``view-users``, else those fine-grained permissions let them view (none without them, as
    Keycloak). POST needs ``manage-users``."""

    required_role = {"GET": "query-users", "POST": "manage-users"}

    def get(self, request, realm):
        found, whole = _found(request, self.realm)
        users = User.objects.filter(realm=self.realm, username__in=_page_of_usernames(request, self.realm, found, whole))
        users = users.select_related("service_account_client")
        rep = brief_user_rep if flag(request, "briefRepresentation", False) else user_fields_rep
        keep = user_profile.shown(self.realm)
        return Response([keep(rep(u)) for u in users])

    def post(self, request, realm):
        data = dict(request.data) if isinstance(request.data, dict) else {}
        if self.realm.registration_email_as_username and data.get("email"):
            data["username"] = data["email"]  # the realm's switch wins over a username given
        if not data.get("username"):
            raise errors.Invalid("error-user-attribute-required")
        values = _parse(data)
        fields = values["fields"]
        fields.pop("id", None)
        fields.pop("federation_link_id", None)
        _check_unique(self.realm, fields)
        refused = user_profile.check_user(self.realm, data, fields)
        if refused is not None:
            return refused
        groups = [_group_by_path(self.realm, path) for path in values["groups"]]
        username = fields.pop("username")
        _check(User(realm=self.realm, username=username, **fields))
        credentials = values["credentials"]
        plain = [c["plain"][0] for c in credentials if "plain" in c]
        try:
            with rows.batch(), _password_refusals():  # the user's rows in one round trip, after the password's hash
                user = create_user(self.realm, username, password=plain[-1] if plain else None, **fields)
                _set_credentials(user, [c for c in credentials if "plain" not in c])
                user.groups.add(*groups)
                admin_events.record(self.realm, "CREATE", "USER", f"users/{user.pk}", auth=self.auth_details(),
                                    representation=lambda: user_fields_rep(user))
        except IntegrityError:  # the same username created at the same moment
            raise errors.Conflict("User exists with same username") from None
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/users/{user.pk}")})


class UserCount(RealmResource):
    required_role = "query-users"

    def get(self, request, realm):
        return Response(_count(self.realm, *_found(request, self.realm)))


def _parse(data):
    if not isinstance(data, dict):
        raise errors.Invalid("Expected a UserRepresentation")
    body = {k: v for k, v in data.items() if k not in ("realmRoles", "clientRoles", "serviceAccountClientId")}
    try:  # a PUT may leave the username out; POST has checked it is there
        return parse_user({"username": "-", **body} if "username" not in body else body, "", Parser())
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None


def _check(user):
    check_fields(user, exclude=["federation_link", "service_account_client", "password"])


def _check_unique(realm, fields, user=None):
    """Keycloak's 409s (the username's first), from one query for both (raw: every create asks,
    and the ORM's compiler cost more than the query; the e-mail compared as ``iexact`` does, on
    the expression its index is built on)."""
    username, email = fields.get("username"), fields.get("email")
    taken, params = [], [realm.pk]
    if username is not None:
        taken.append("username = %s")
        params.append(username)
    if email and not realm.duplicate_emails_allowed:
        taken.append("UPPER(CAST(email AS text)) = UPPER(%s)")
        params.append(email)
    if not taken:
        return
    where = f"realm_id = %s AND ({' OR '.join(taken)})"
    if user is not None:
        where += " AND id <> %s"
        params.append(user.pk)
    if username is not None and len(taken) > 1:  # the user of that name first, however many share the e-mail
        where += " ORDER BY username = %s DESC"
        params.append(username)
    holder = next(iter(rows.fetch(User, where + " LIMIT 1", params)), None)
    if holder is not None:
        raise errors.Conflict("User exists with same username" if holder.username == username
                              else "User exists with same email")


def _group_by_path(realm, path):
    names = [n for n in path.strip("/").split("/") if n]
    group = None
    for name in names:
        group = Group.objects.filter(realm=realm, parent=group, name=name).first()
        if group is None:
            break
    if group is None:
        raise errors.Invalid(f"Group {path} not found")
    return group


@contextmanager
def _password_refusals(reset=False):
    """The user's store refusing a password, as Keycloak answers it: at reset-password the
    policy's message key and message, or "Can't reset password as account is read only"; when a
    user is created or updated, "Password policy not met" (in the caller's transaction, so
    nothing is kept)."""
    try:
        yield
    except password_policy.PasswordPolicyError as exc:  # storage.ReadOnly among them
        if not reset:
            raise errors.Invalid("Password policy not met") from None
        if isinstance(exc, storage.ReadOnly):
            raise errors.BadRequest("Can't reset password as account is read only") from None
        raise errors.BadRequest(exc.key, str(exc)) from None


def _set_credentials(user, credentials):
    """An updated user's credentials; a password through the user's store (``_password_refusals``)."""
    for cred in credentials:
        cred = dict(cred)
        cred.pop("id", None)
        plain = cred.pop("plain", None)
        if plain is not None:
            storage.set_password(user.realm, user, plain[0])  # (password, JSON path)
        else:
            Credential.objects.create(user=user, **cred)


def user_of(resource, user_id):
    """The user of the resource's realm with this id (``RealmResource.row``), or 404."""
    user = resource.row(User, user_id)
    if user is None:
        raise errors.NotFound("User not found")
    return user


class UserDetail(RealmResource):
    required_role = {"GET": "view-users", "PUT": "manage-users", "DELETE": "manage-users"}

    def get(self, request, realm, user_id):
        return Response(user_profile.with_metadata(request, self.realm, user_fields_rep(user_of(self, user_id))))

    def put(self, request, realm, user_id):
        user = user_of(self, user_id)
        given = request.data if isinstance(request.data, dict) else {}
        values = _parse(request.data)
        fields = {k: v for k, v in values["fields"].items() if k not in ("id", "federation_link_id")}
        if "username" not in given:
            fields.pop("username", None)
        elif fields["username"] != user.username and not self.realm.edit_username_allowed:
            raise errors.Invalid("error-user-attribute-read-only")
        _check_unique(self.realm, fields, user)
        refused = user_profile.check_user(self.realm, given, fields, user)
        if refused is not None:
            return refused
        was_enabled = user.enabled
        for name, value in fields.items():
            setattr(user, name, value)
        _check(user)
        enabled = admin_events.enabled_change(was_enabled, user.enabled)
        with transaction.atomic(), _password_refusals():
            user.save()
            _set_credentials(user, values["credentials"])
            admin_events.record(self.realm, "UPDATE", "USER", f"users/{user.pk}", auth=self.auth_details(),
                                representation=lambda: user_fields_rep(user), details=enabled)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, user_id):
        user = user_of(self, user_id)
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "USER", f"users/{user.pk}", auth=self.auth_details())
            # A writable directory's entry too; a directory out of reach is the handler's 400.
            storage.delete_user(self.realm, user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ResetPassword(RealmResource):
    """PUT a CredentialRepresentation ``{"type": "password", "value": ..., "temporary": ...}``.
    Keycloak 26.4's ``requireResetPassword``: ``manage-users``, else the user's ``reset-password``
    (or its ``manage`` where no permission with ``reset-password`` applies)."""

    required_role = {"PUT": "manage-users"}
    fine_grained = {"PUT": [("Users", "reset-password", "user_id")]}

    def put(self, request, realm, user_id):
        user = user_of(self, user_id)
        cred = request.data if isinstance(request.data, dict) else {}
        value = cred.get("value")
        if not isinstance(value, str):
            raise errors.Invalid("No password provided")
        if not value.strip():
            raise errors.Invalid("Empty password")
        temporary = cred.get("temporary") is True
        with transaction.atomic():
            with _password_refusals(reset=True):
                storage.set_password(self.realm, user, value)
            actions = [a for a in user.required_actions if a != UPDATE_PASSWORD]
            user.required_actions = [*actions, UPDATE_PASSWORD] if temporary else actions
            user.save(update_fields=["required_actions"])
            admin_events.record(self.realm, "ACTION", "USER", f"users/{user.pk}/reset-password",
                                auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


class UserGroups(RealmResource):
    """The user's groups (Keycloak's ``groupMembership``), by name: ``search`` a part of the name
    in any case, ``first`` and ``max`` (all by default), brief unless ``briefRepresentation`` is
    false. Only the groups the caller may view (Keycloak's ``canView``), narrowed in the query so
    that a page holds ``max`` visible groups where Keycloak pages first and filters after."""

    required_role = "view-users"

    def groups(self, request, user_id):
        """The user's groups that ``count`` counts and ``get`` pages."""
        groups = user_of(self, user_id).groups.all()
        search = request.query_params.get("search")
        if search is not None:
            groups = groups.filter(name__icontains=search)
        return visible(request.user.admin, self.realm, "Groups", groups, ("view",))

    def get(self, request, realm, user_id):
        brief = flag(request, "briefRepresentation", True)
        groups = page(request, self.groups(request, user_id).order_by("name", "pk"), default_max=None)
        return Response(group_reps(request.user.admin, self.realm, groups, brief))


class UserGroupCount(UserGroups):
    """``users/{id}/groups/count``: the groups ``users/{id}/groups`` pages, ``search`` included."""

    def get(self, request, realm, user_id):
        return Response({"count": self.groups(request, user_id).count()})


class UserGroupMembership(RealmResource):
    required_role = {"PUT": "manage-users", "DELETE": "manage-users"}
    fine_grained = {method: [("Users", "manage-group-membership", "user_id"), ("Groups", "manage-membership", "group_id")]
                    for method in ("PUT", "DELETE")}

    def _both(self, user_id, group_id):
        user = user_of(self, user_id)
        group = self.row(Group, group_id)
        if group is None:
            raise errors.NotFound("Group not found")
        return user, group

    def put(self, request, realm, user_id, group_id):
        user, group = self._both(user_id, group_id)
        with transaction.atomic():
            if not user.groups.filter(pk=group.pk).exists():
                user.groups.add(group)
                admin_events.record(self.realm, "CREATE", "GROUP_MEMBERSHIP", f"users/{user.pk}/groups/{group.pk}",
                                    auth=self.auth_details(),
                                    representation=lambda: group_api_rep(request.user.admin, self.realm, group))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, user_id, group_id):
        user, group = self._both(user_id, group_id)
        with transaction.atomic():
            if user.groups.filter(pk=group.pk).exists():
                user.groups.remove(group)
                admin_events.record(self.realm, "DELETE", "GROUP_MEMBERSHIP", f"users/{user.pk}/groups/{group.pk}",
                                    auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


class Logout(RealmResource):
    """Ends every session of the user and revokes tokens issued before now (``notBefore``)."""

    required_role = {"POST": "manage-users"}

    def post(self, request, realm, user_id):
        user = user_of(self, user_id)
        with transaction.atomic():
            sessions.logout_user(user)
            admin_events.record(self.realm, "ACTION", "USER", f"users/{user.pk}/logout", auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


class Impersonation(RealmResource):
    """Keycloak's impersonation: a session as the user, its cookie on this answer, and where the
    browser goes next (the realm's account console)."""

    required_role = {"POST": "impersonation"}

    def post(self, request, realm, user_id):
        user = user_of(self, user_id)
        try:
            user_session = impersonation.impersonate(request, user, request.user.user)
        except impersonation.ImpersonationRefused as exc:
            raise errors.Invalid(str(exc)) from None
        response = Response({"sameRealm": request.user.realm.pk == self.realm.pk,
                             "redirect": request.build_absolute_uri(impersonation.account_url(self.realm))})
        return impersonation.set_session_cookie(response, request, user_session)


def _millis(dt):
    return int(dt.timestamp() * 1000)


def user_session_rep(s):
    """Keycloak's UserSessionRepresentation (``s.user`` is read)."""
    return {
        "id": s.pk, "username": s.user.username, "userId": s.user_id, "ipAddress": s.ip_address,
        "start": _millis(s.started), "lastAccess": _millis(s.last_refresh), "rememberMe": s.remember_me,
        "clients": {cs.client_id: cs.client.client_id for cs in s.client_sessions.select_related("client")},
        "transientUser": False,
    }


class Sessions(RealmResource):
    """Keycloak's UserSessionRepresentation of each online session."""

    required_role = "view-users"

    def get(self, request, realm, user_id):
        user = user_of(self, user_id)
        found = UserSession.objects.filter(user=user, offline=False).select_related("user").order_by("started")
        return Response([user_session_rep(s) for s in found])
