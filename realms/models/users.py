"""Users and their credentials, and the one place that says which roles a user holds: those
mapped to them, to their groups and the groups' ancestors, and what composite roles contain (the
role graph in SQL; the console's ``User.is_staff`` needs it too)."""
import hashlib

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.db import connection, models
from django.db.models.expressions import RawSQL
from django.utils import timezone

from ..data import rows
from .clients import Client
from .fields import IdField
from .realm import RealmOwned
from .roles import Group, Role


class UserManager(BaseUserManager):
    def get_by_natural_key(self, username):
        return self.get(realm__name="master", username=username)

    def create_superuser(self, username, password=None, **fields):
        """``manage.py createsuperuser`` cannot work here (passwords are credentials, not a field
        Django could prompt for): it says what to run instead (ValidationError: one line, no trace)."""
        from django.core.exceptions import ValidationError

        raise ValidationError("createsuperuser is not used here: create the master realm's admin with "
                              f"manage.py bootstrap_admin user --username {username} --password:env VARIABLE")


class User(RealmOwned, AbstractBaseUser):
    """A person or service account of one realm. Also the operator account of the admin console
    when it belongs to the master realm and holds its ``admin`` role (no second user table)."""

    password = None  # credentials live in Credential rows, one per type
    id = IdField()
    username = models.CharField(max_length=255)
    email = models.EmailField(max_length=255, blank=True)
    email_verified = models.BooleanField(default=False)
    first_name = models.CharField(max_length=255, blank=True)
    last_name = models.CharField(max_length=255, blank=True)
    enabled = models.BooleanField(default=True)
    attributes = models.JSONField(default=dict, blank=True)
    # The user storage provider (a Component) this user was imported from; null for local users.
    # Removing the provider removes the users it imported, as in Keycloak.
    federation_link = models.ForeignKey(
        "Component", null=True, blank=True, on_delete=models.CASCADE, related_name="users",
        help_text="The user storage provider this user comes from.")
    service_account_client = models.OneToOneField(
        Client, null=True, blank=True, on_delete=models.CASCADE, related_name="service_account_user"
    )
    required_actions = models.JSONField(default=list, blank=True)
    not_before = models.IntegerField(default=0)
    created = models.DateTimeField(default=timezone.now, editable=False)
    roles = models.ManyToManyField(Role, blank=True, related_name="users")
    groups = models.ManyToManyField(Group, blank=True, related_name="members")

    objects = UserManager()

    USERNAME_FIELD = "username"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = []

    class Meta:
        ordering = ["username"]
        constraints = [models.UniqueConstraint(fields=["realm", "username"], name="uniq_username_per_realm")]

    def __str__(self):
        return self.username

    # Django's auth contract -----------------------------------------------------------------
    @property
    def is_active(self):
        return self.enabled

    @property
    def is_staff(self):
        """The master realm's ``admin``: every realm. (Who may use the console at all, and what
        there, is ``realms.administration.admin_permissions``: the admin site's ``has_permission``.)"""
        if not hasattr(self, "_is_staff"):
            self._is_staff = self.enabled and self.realm.is_master and has_realm_role(self, "admin")
        return self._is_staff

    is_superuser = is_staff

    def has_perm(self, perm, obj=None):
        # The console's own pages ask realms.administration.admin_permissions.can; Django's permission check is
        # left to the pages that do not (webhook deliveries): the master admin only.
        return self.is_superuser

    def has_module_perms(self, app_label):
        return self.is_staff

    def get_full_name(self):
        return " ".join(p for p in (self.first_name, self.last_name) if p)

    def get_short_name(self):
        return self.first_name or self.username

    def stored_credentials(self):
        """The user's credential rows, best first, read once per instance: one query answers the
        password check and the sign-in's questions about second factors (``forget_credentials``
        after a change). A raw query: every sign-in reads these rows, and the ORM's query
        compiler costs more CPU than the database spends answering it."""
        if "_credentials" not in self.__dict__:
            self.__dict__["_credentials"] = rows.fetch(
                Credential, "user_id = %s ORDER BY priority DESC, created DESC", [self.pk])
        return self.__dict__["_credentials"]

    def forget_credentials(self):
        self.__dict__.pop("_credentials", None)

    def __getstate__(self):
        # A pickled user (the SSO session's cached copy) carries no credential rows (hashes, OTP
        # secrets, keys): those stay in the database.
        state = super().__getstate__()
        state.pop("_credentials", None)
        return state

    def refresh_from_db(self, *args, **kwargs):
        self.forget_credentials()  # a fresh look at the row is a fresh look at its credentials
        super().refresh_from_db(*args, **kwargs)

    def password_credential(self):
        return next((c for c in self.stored_credentials() if c.type == Credential.PASSWORD), None)

    def save(self, *args, **kwargs):
        # Every new user's row, however the save was asked for (``objects.create`` passes
        # ``force_insert`` and ``using``; there is one database): without the save machinery's compiler.
        if self._state.adding:
            rows.create(self)
        else:
            super().save(*args, **kwargs)

    # Django's password contract does not apply: a password is a credential of the user's store,
    # set by ``storage.set_password`` and checked by the sign-in (``signin.check_password``).
    def set_password(self, raw_password):
        raise NotImplementedError("a password is a credential: set it with realms.users.storage.set_password")

    def check_password(self, raw_password):
        raise NotImplementedError("a password is checked by the user's store: realms.signin.passwords.check_password")

    def has_usable_password(self):
        return self.password_credential() is not None  # the rows the session's check has read

    def _get_session_auth_hash(self, secret=None):
        # Changing the password ends the console sessions signed with the old one. Django calls
        # this with each of SECRET_KEY_FALLBACKS too, so a rotated key keeps those sessions.
        import hmac

        from django.conf import settings

        cred = self.password_credential()
        material = cred.secret_data if cred else ""
        return hmac.new((secret or settings.SECRET_KEY).encode(), material.encode(), hashlib.sha256).hexdigest()


class Credential(models.Model):
    """A secret of a user: a password (Django-encoded hash, Argon2id for new ones), an OTP seed
    or a WebAuthn credential. Keycloak's secretData/credentialData split is kept for OTP and
    WebAuthn so that later sign-in steps read what an import brought."""

    PASSWORD, OTP, WEBAUTHN, WEBAUTHN_PASSWORDLESS = "password", "otp", "webauthn", "webauthn-passwordless"

    id = IdField()
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="credentials")
    type = models.CharField(max_length=64)
    user_label = models.CharField(max_length=255, blank=True)
    secret_data = models.TextField(blank=True)
    credential_data = models.JSONField(default=dict, blank=True)
    priority = models.IntegerField(default=10)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.type} of {self.user}"


def expand_composites(roles):
    """The given roles plus every role reachable through composites (one query per level)."""
    seen = {r.pk: r for r in roles}
    frontier = list(seen)
    through = Role.composites.through
    while frontier:
        child_ids = set(
            through.objects.filter(from_role_id__in=frontier).values_list("to_role_id", flat=True)
        ) - seen.keys()
        if not child_ids:
            break
        for role in Role.objects.filter(pk__in=child_ids).select_related("client"):
            seen[role.pk] = role
        frontier = list(child_ids)
    return set(seen.values())


def group_with_ancestors(groups):
    """The given groups and all their ancestors."""
    result = {g.pk: g for g in groups}
    pending = {g.parent_id for g in groups if g.parent_id} - result.keys()
    while pending:
        parents = list(Group.objects.filter(pk__in=pending))
        for g in parents:
            result[g.pk] = g
        pending = {g.parent_id for g in parents if g.parent_id} - result.keys()
    return set(result.values())


def _effective_role_ids_sql():
    """One recursive query for the ids of a user's effective roles (PostgreSQL and SQLite both
    take it): the user's groups and their ancestors, the roles mapped to the user and to those
    groups, then the composites' closure. UNION drops repeats, so composite cycles terminate."""
    q = connection.ops.quote_name
    user_groups, group_roles = User.groups.through._meta.db_table, Group.roles.through._meta.db_table
    user_roles, composites = User.roles.through._meta.db_table, Role.composites.through._meta.db_table
    return (
        f"WITH RECURSIVE grp(id) AS ("
        f"SELECT group_id FROM {q(user_groups)} WHERE user_id = %s UNION "
        f"SELECT g.parent_id FROM {q(Group._meta.db_table)} g JOIN grp ON g.id = grp.id WHERE g.parent_id IS NOT NULL"
        f"), held(id) AS ("
        f"SELECT role_id FROM {q(user_roles)} WHERE user_id = %s UNION "
        f"SELECT role_id FROM {q(group_roles)} WHERE group_id IN (SELECT id FROM grp) UNION "
        f"SELECT c.to_role_id FROM {q(composites)} c JOIN held ON c.from_role_id = held.id"
        f") SELECT id FROM held"
    )


def effective_roles(user):
    """Every role the user holds: direct, via groups (with ancestors), composites expanded. One
    query: every Admin API request and token grant asks it, and a query per composite level
    (with the ORM compiling each) cost more than all the rest of creating a user."""
    return set(Role.objects.filter(pk__in=RawSQL(_effective_role_ids_sql(), [user.pk, user.pk]))
               .select_related("client"))


_ROLE_IDS_READ = "_effective_role_ids_read"


def effective_role_ids_column(user_id):
    """``rows.fetch``'s ``extra`` that reads ``effective_role_ids`` of the user with another row
    (the Admin API's caller: their row and their roles in one round trip); the next
    ``effective_role_ids`` of the instance uses it, once."""
    sql, params = _effective_role_ids_sql(), [user_id, user_id]
    if connection.vendor == "postgresql":
        return _ROLE_IDS_READ, f"ARRAY({sql})", params
    # coalesce: a user without roles reads '' (none), not NULL (which would mean "not read").
    return _ROLE_IDS_READ, f"(SELECT coalesce(group_concat(id, ' '), '') FROM ({sql}))", params


def effective_role_ids(user, keep=False):
    """The ids of ``effective_roles(user)``: the same one query, raw (a user's first token in a
    process reads it, and the ORM's compiler costs more CPU than the answer), or the answer read
    with the user's row (``effective_role_ids_column``), used once unless ``keep`` (a caller that
    answers from the ids and may still build the roles in the same request)."""
    read = user.__dict__.get(_ROLE_IDS_READ) if keep else user.__dict__.pop(_ROLE_IDS_READ, None)
    if read is not None:
        return set(read.split() if isinstance(read, str) else read)
    with connection.cursor() as cursor:
        cursor.execute(_effective_role_ids_sql(), [user.pk, user.pk])
        return {row[0] for row in cursor.fetchall()}


def roles_by_id(realm):
    """{role id: role, its client loaded} of every role of the realm: one query, for a cache of
    the realm's configuration, over which ``effective_roles_in`` needs no role rows."""
    return {r.pk: r for r in Role.objects.filter(realm=realm).select_related("client")}


def effective_roles_in(roles, user):
    """``effective_roles(user)`` taken from the realm's ``roles_by_id``: one query whatever the
    groups and the composites' depth. A role newer than ``roles`` (made a moment ago in another
    process, whose cached copy is not yet dropped here) is read from the database."""
    ids = effective_role_ids(user)
    missing = ids - roles.keys()
    found = {roles[role_id] for role_id in ids if role_id in roles}
    if missing:
        found.update(Role.objects.filter(pk__in=missing).select_related("client"))
    return found


def realm_role_ids(realm):
    """{name: id} of the realm's realm roles: one query, for a cache of the realm's configuration
    (whether a user holds one is then whether its id is among ``effective_role_ids``)."""
    return dict(Role.objects.filter(realm=realm, client=None).values_list("name", "pk"))


def client_roles_named(realm, ids):
    """{id: (clientId, name)} of the client roles of ``realm`` among ``ids``, None for the other
    ids: one query, over which a cache of the realm's configuration names the roles a user holds
    without building their rows."""
    named = dict.fromkeys(ids)
    named.update((pk, (client_id, name)) for pk, client_id, name in Role.objects.filter(
        realm=realm, pk__in=ids, client__isnull=False).values_list("pk", "client__client_id", "name"))
    return named


def realm_role_names(roles):
    return sorted(r.name for r in roles if r.client_id is None)


def client_role_names(roles):
    """{clientId: [role names]} for the client roles among ``roles``."""
    out = {}
    for r in roles:
        if r.client_id is not None:
            out.setdefault(r.client.client_id, []).append(r.name)
    return {k: sorted(v) for k, v in sorted(out.items())}


def has_realm_role(user, name):
    """Whether the user holds the realm role ``name`` (directly, by a group or a composite): one
    query answering yes or no. It walks up from the role to the composites holding it, not down
    from the user's roles: a master admin holds every realm's management roles (about twenty a
    realm, 19,000 with a thousand realms), too many to expand for one question."""
    q = connection.ops.quote_name
    user_groups, group_roles = User.groups.through._meta.db_table, Group.roles.through._meta.db_table
    user_roles, composites = User.roles.through._meta.db_table, Role.composites.through._meta.db_table
    sql = (
        f"WITH RECURSIVE grp(id) AS ("
        f"SELECT group_id FROM {q(user_groups)} WHERE user_id = %s UNION "
        f"SELECT g.parent_id FROM {q(Group._meta.db_table)} g JOIN grp ON g.id = grp.id WHERE g.parent_id IS NOT NULL"
        f"), holder(id) AS ("
        f"SELECT id FROM {q(Role._meta.db_table)} WHERE realm_id = %s AND client_id IS NULL AND name = %s UNION "
        f"SELECT c.from_role_id FROM {q(composites)} c JOIN holder ON c.to_role_id = holder.id"
        f") SELECT 1 FROM {q(user_roles)} WHERE user_id = %s AND role_id IN (SELECT id FROM holder) "
        f"UNION ALL SELECT 1 FROM {q(group_roles)} WHERE group_id IN (SELECT id FROM grp) "
        f"AND role_id IN (SELECT id FROM holder) LIMIT 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.pk, user.realm_id, name, user.pk])
        return cursor.fetchone() is not None


def effective_role_ids_read(user):
    """Whether ``effective_role_ids(user)`` is already at hand (read with the user's row), so
    asking it costs no statement."""
    return _ROLE_IDS_READ in user.__dict__
