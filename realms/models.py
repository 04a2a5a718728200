"""The tenant model and everything a realm owns.

Every name (username, clientId, role name, scope name, group name among siblings) is unique
within its realm, never globally. Primary keys are strings so that Keycloak's ids survive an
import and an export unchanged, which keeps cross-references (role ``containerId``, group
``parentId``) intact.
"""
import hashlib
import uuid

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.db import connection, models
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.utils import timezone

from . import crypto, rows


def new_id():
    return str(uuid.uuid4())


class IdField(models.CharField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("default", new_id)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)


class SmtpServerField(models.JSONField):
    """The realm's ``smtpServer`` map, its ``password`` encrypted at rest (as client secrets are);
    in Python the map holds the plain password. A value stored before encryption is read as it is
    and encrypted when the realm is next saved."""

    _PREFIX = "fernet:"

    def get_prep_value(self, value):
        if isinstance(value, dict) and value.get("password"):
            value = {**value, "password": self._PREFIX + crypto.encrypt(value["password"])}
        return super().get_prep_value(value)

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        password = value.get("password") if isinstance(value, dict) else None
        if isinstance(password, str) and password.startswith(self._PREFIX):
            value["password"] = crypto.decrypt(password[len(self._PREFIX):])
        return value


class Realm(models.Model):
    """A separate space of users, clients, keys and settings with its own issuer."""

    SSL_CHOICES = [("all", "all"), ("external", "external"), ("none", "none")]

    id = IdField()
    name = models.CharField(max_length=100, unique=True, help_text="Part of the issuer URL.")
    display_name = models.CharField(max_length=255, blank=True)
    display_name_html = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    ssl_required = models.CharField(max_length=16, choices=SSL_CHOICES, default="external")

    # Token and session lifespans, seconds (spec 1 §2 and §8).
    access_token_lifespan = models.PositiveIntegerField(default=300)
    access_token_lifespan_for_implicit_flow = models.PositiveIntegerField(default=900)
    sso_session_idle_timeout = models.PositiveIntegerField(default=1800)
    sso_session_max_lifespan = models.PositiveIntegerField(default=36000)
    sso_session_idle_timeout_remember_me = models.PositiveIntegerField(default=0)
    sso_session_max_lifespan_remember_me = models.PositiveIntegerField(default=0)
    client_session_idle_timeout = models.PositiveIntegerField(default=0, help_text="0 = SSO Session Idle")
    client_session_max_lifespan = models.PositiveIntegerField(default=0, help_text="0 = SSO Session Max")
    offline_session_idle_timeout = models.PositiveIntegerField(default=2592000)
    offline_session_max_lifespan_enabled = models.BooleanField(default=False)
    offline_session_max_lifespan = models.PositiveIntegerField(default=5184000)
    client_offline_session_idle_timeout = models.PositiveIntegerField(default=0)
    client_offline_session_max_lifespan = models.PositiveIntegerField(default=0)
    access_code_lifespan = models.PositiveIntegerField(
        default=60, help_text="Client login timeout: lifetime of an authorization code, seconds."
    )
    access_code_lifespan_user_action = models.PositiveIntegerField(default=300)
    access_code_lifespan_login = models.PositiveIntegerField(default=1800)
    action_token_generated_by_admin_lifespan = models.PositiveIntegerField(default=43200)
    action_token_generated_by_user_lifespan = models.PositiveIntegerField(default=300)
    oauth2_device_code_lifespan = models.PositiveIntegerField(default=600)
    oauth2_device_polling_interval = models.PositiveIntegerField(default=5)
    not_before = models.IntegerField(default=0)

    default_signature_algorithm = models.CharField(max_length=16, default="RS256")
    revoke_refresh_token = models.BooleanField(default=False)
    refresh_token_max_reuse = models.PositiveIntegerField(default=0)

    # Brute-force detection (off in a new realm).
    brute_force_protected = models.BooleanField(default=False)
    permanent_lockout = models.BooleanField(default=False)
    max_temporary_lockouts = models.PositiveIntegerField(default=0)
    max_failure_wait_seconds = models.PositiveIntegerField(default=900)
    minimum_quick_login_wait_seconds = models.PositiveIntegerField(default=60)
    wait_increment_seconds = models.PositiveIntegerField(default=60)
    quick_login_check_milli_seconds = models.PositiveIntegerField(default=1000)
    max_delta_time_seconds = models.PositiveIntegerField(default=43200)
    failure_factor = models.PositiveIntegerField(default=30)

    # Login settings.
    registration_allowed = models.BooleanField(default=False)
    registration_email_as_username = models.BooleanField(default=False)
    remember_me = models.BooleanField(default=False)
    verify_email = models.BooleanField(default=False)
    login_with_email_allowed = models.BooleanField(default=True)
    duplicate_emails_allowed = models.BooleanField(default=False)
    reset_password_allowed = models.BooleanField(default=False)
    edit_username_allowed = models.BooleanField(default=False)
    passkeys_enabled = models.BooleanField(default=False, help_text="Enable Passkeys (Login tab).")
    organizations_enabled = models.BooleanField(default=False)
    scim_api_enabled = models.BooleanField(default=False, help_text="SCIM 2.0 provisioning below /realms/<realm>/scim/v2.")
    admin_permissions_enabled = models.BooleanField(
        default=False, help_text="Fine-grained admin permissions: the admin-permissions client's permissions apply.")
    login_theme = models.CharField(max_length=64, default="v2")
    account_theme = models.CharField(max_length=64, blank=True)
    email_theme = models.CharField(max_length=64, blank=True)
    internationalization_enabled = models.BooleanField(default=False)
    supported_locales = models.JSONField(default=list, blank=True)
    default_locale = models.CharField(max_length=16, blank=True)

    # Events.
    events_enabled = models.BooleanField(default=False, help_text="Save events.")
    events_expiration = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds; empty = keep.")
    events_listeners = models.JSONField(default=list, blank=True)
    enabled_event_types = models.JSONField(default=list, blank=True)
    admin_events_enabled = models.BooleanField(default=False)
    admin_events_details_enabled = models.BooleanField(default=False)

    # Flow bindings (aliases of authentication flows).
    browser_flow = models.CharField(max_length=255, default="browser")
    registration_flow = models.CharField(max_length=255, default="registration")
    direct_grant_flow = models.CharField(max_length=255, default="direct grant")
    reset_credentials_flow = models.CharField(max_length=255, default="reset credentials")
    client_authentication_flow = models.CharField(max_length=255, default="clients")
    docker_authentication_flow = models.CharField(max_length=255, default="docker auth")
    first_broker_login_flow = models.CharField(max_length=255, default="first broker login")

    # Keycloak policy groups kept as their representation keys (otpPolicy*, webAuthnPolicy*,
    # passwordPolicy, browserSecurityHeaders, smtpServer, requiredCredentials ...).
    otp_policy = models.JSONField(default=dict, blank=True)
    webauthn_policy = models.JSONField(default=dict, blank=True)
    password_policy = models.CharField(max_length=1024, blank=True)
    browser_security_headers = models.JSONField(default=dict, blank=True)
    smtp_server = SmtpServerField(default=dict, blank=True)
    required_credentials = models.JSONField(default=list, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    localization_texts = models.JSONField(default=dict, blank=True)

    default_role = models.ForeignKey(
        "Role", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def is_master(self):
        return self.name == "master"


class RealmOwned(models.Model):
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE)

    class Meta:
        abstract = True


class ClientScope(RealmOwned):
    """A named bundle of protocol mappers and role scope mappings (profile, email, roles ...)."""

    id = IdField()
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    protocol = models.CharField(max_length=32, default="openid-connect")
    attributes = models.JSONField(default=dict, blank=True)
    scope_roles = models.ManyToManyField("Role", blank=True, related_name="scoped_in_client_scopes")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_scope_name_per_realm")]

    def __str__(self):
        return self.name

    @property
    def include_in_token_scope(self):
        return self.attributes.get("include.in.token.scope", "true") == "true"


class RealmDefaultClientScope(models.Model):
    """Realm-level defaults copied onto new clients: default (always) or optional (on request)."""

    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="default_scope_links")
    client_scope = models.ForeignKey(ClientScope, on_delete=models.CASCADE, related_name="+")
    default = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["realm", "client_scope"], name="uniq_realm_default_scope")
        ]


class Client(RealmOwned):
    """An application (or a resource server) known to the realm."""

    id = IdField()
    client_id = models.CharField(max_length=255, help_text="clientId; for SAML the entity id.")
    name = models.CharField(max_length=255, blank=True)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    always_display_in_console = models.BooleanField(default=False)
    protocol = models.CharField(max_length=32, default="openid-connect")
    public_client = models.BooleanField(default=False, help_text="Client authentication off.")
    bearer_only = models.BooleanField(default=False)
    client_authenticator_type = models.CharField(max_length=64, default="client-secret")
    # The secret is kept encrypted (client_secret_jwt needs the key itself) beside a SHA-256
    # digest, so checking a presented secret costs one hash and a constant-time compare.
    secret_encrypted = models.TextField(blank=True, editable=False)
    secret_digest = models.CharField(max_length=64, blank=True, editable=False)
    registration_access_token = models.CharField(max_length=255, blank=True)

    standard_flow_enabled = models.BooleanField(default=True)
    implicit_flow_enabled = models.BooleanField(default=False)
    direct_access_grants_enabled = models.BooleanField(default=False)
    service_accounts_enabled = models.BooleanField(default=False)
    authorization_services_enabled = models.BooleanField(default=False)
    consent_required = models.BooleanField(default=False)
    full_scope_allowed = models.BooleanField(default=True)
    frontchannel_logout = models.BooleanField(default=True)
    surrogate_auth_required = models.BooleanField(default=False)

    root_url = models.CharField(max_length=1024, blank=True)
    base_url = models.CharField(max_length=1024, blank=True)
    admin_url = models.CharField(max_length=1024, blank=True)
    redirect_uris = models.JSONField(default=list, blank=True)
    web_origins = models.JSONField(default=list, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    authentication_flow_binding_overrides = models.JSONField(default=dict, blank=True)
    # Keycloak's authorizationSettings (ResourceServerRepresentation), held by the admin-permissions
    # client only (realms.representation.authorization refuses any other).
    authorization_settings = models.JSONField(default=dict, blank=True, editable=False)
    node_re_registration_timeout = models.IntegerField(default=-1)
    not_before = models.IntegerField(default=0)

    client_scopes = models.ManyToManyField(
        ClientScope, through="ClientScopeLink", blank=True, related_name="clients"
    )
    scope_roles = models.ManyToManyField("Role", blank=True, related_name="scoped_in_clients")
    created = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["client_id"]
        constraints = [models.UniqueConstraint(fields=["realm", "client_id"], name="uniq_client_id_per_realm")]

    def __str__(self):
        return self.client_id

    @property
    def confidential(self):
        return not self.public_client and not self.bearer_only

    def set_secret(self, secret):
        self.secret_encrypted = crypto.encrypt(secret) if secret else ""
        self.secret_digest = hashlib.sha256(secret.encode()).hexdigest() if secret else ""

    def get_secret(self):
        return crypto.decrypt(self.secret_encrypted) if self.secret_encrypted else ""

    def check_secret(self, presented):
        if not self.secret_digest or not presented:
            return False
        return crypto.constant_time_equals(
            hashlib.sha256(presented.encode()).hexdigest(), self.secret_digest
        )

    def regenerate_secret(self):
        secret = crypto.random_secret()
        self.set_secret(secret)
        return secret

    @property
    def pkce_method(self):
        return self.attributes.get("pkce.code.challenge.method", "")


class ClientScopeLink(models.Model):
    """A client scope assigned to a client, as a default scope or an optional one."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="scope_links")
    client_scope = models.ForeignKey(ClientScope, on_delete=models.CASCADE, related_name="client_links")
    default = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "client_scope"], name="uniq_client_scope_link")]


class Role(RealmOwned):
    """A realm role (client is null) or a client role; composites contain other roles."""

    id = IdField()
    client = models.ForeignKey(Client, null=True, blank=True, on_delete=models.CASCADE, related_name="roles")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    composites = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="parents")

    class Meta:
        ordering = ["client_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["realm", "name"], condition=Q(client__isnull=True), name="uniq_realm_role_name"
            ),
            models.UniqueConstraint(
                fields=["client", "name"], condition=Q(client__isnull=False), name="uniq_client_role_name"
            ),
        ]

    def __str__(self):
        return f"{self.client.client_id}:{self.name}" if self.client_id else self.name

    @property
    def composite(self):
        return self.composites.exists()


class Group(RealmOwned):
    """A node in the realm's group tree; members inherit its and its ancestors' role mappings."""

    id = IdField()
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    roles = models.ManyToManyField(Role, blank=True, related_name="groups")

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["realm", "name"], condition=Q(parent__isnull=True), name="uniq_top_group_name"
            ),
            models.UniqueConstraint(
                fields=["parent", "name"], condition=Q(parent__isnull=False), name="uniq_sub_group_name"
            ),
        ]

    def __str__(self):
        return self.path

    @property
    def path(self):
        names, node = [], self
        while node is not None:
            names.append(node.name)
            node = node.parent
        return "/" + "/".join(reversed(names))


class Component(RealmOwned):
    """Keycloak's ComponentModel: a configured provider of a realm (a user storage provider such
    as LDAP, a key provider ...). ``config`` is a multivalued map (name -> list of strings), as
    Keycloak stores and exports it. User storage providers and their children (an LDAP
    provider's mappers, ``parent_id`` the provider's id) are stored here (keys have their own table)."""

    USER_STORAGE = "org.keycloak.storage.UserStorageProvider"

    id = IdField()
    name = models.CharField(max_length=255)
    provider_id = models.CharField(max_length=255)
    provider_type = models.CharField(max_length=255)
    parent_id = models.CharField(max_length=64, blank=True)
    sub_type = models.CharField(max_length=255, blank=True)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.provider_id})"

    def get(self, name, default=""):
        """The first value of a config entry."""
        values = self.config.get(name) or []
        return values[0] if values else default


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
        there, is ``realms.admin_permissions``: the admin site's ``has_permission``.)"""
        if not hasattr(self, "_is_staff"):
            self._is_staff = self.enabled and self.realm.is_master and has_realm_role(self, "admin")
        return self._is_staff

    is_superuser = is_staff

    def has_perm(self, perm, obj=None):
        # The console's own pages ask realms.admin_permissions.can; Django's permission check is
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
        if self._state.adding and not args and not kwargs:
            rows.create(self)  # every user made: the row without the save machinery's compiler
        else:
            super().save(*args, **kwargs)

    # Django's password contract does not apply: a password is a credential of the user's store,
    # set by ``storage.set_password`` and checked by the sign-in (``signin.check_password``).
    def set_password(self, raw_password):
        raise NotImplementedError("a password is a credential: set it with realms.storage.set_password")

    def check_password(self, raw_password):
        raise NotImplementedError("a password is checked by the user's store: realms.signin.check_password")

    def has_usable_password(self):
        return self.credentials.filter(type=Credential.PASSWORD).exists()

    def get_session_auth_hash(self):
        # Changing the password ends the console sessions signed with the old one.
        import hmac

        from django.conf import settings

        cred = self.password_credential()
        material = cred.secret_data if cred else ""
        return hmac.new(settings.SECRET_KEY.encode(), material.encode(), hashlib.sha256).hexdigest()


class AuthenticationFlow(RealmOwned):
    """A sign-in flow (Keycloak's AuthenticationFlowModel): its executions run in priority order.
    Top-level flows are what the realm's bindings and clients' overrides name; the others are
    sub-flows. Built-in flows come from ``realms.flows`` (Keycloak 26's)."""

    BASIC, CLIENT, FORM = "basic-flow", "client-flow", "form-flow"
    PROVIDERS = [(BASIC, BASIC), (CLIENT, CLIENT), (FORM, FORM)]

    id = IdField()
    alias = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    provider_id = models.CharField(max_length=36, choices=PROVIDERS, default=BASIC)
    top_level = models.BooleanField(default=True)
    built_in = models.BooleanField(default=False)

    class Meta:
        ordering = ["alias"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="flow_alias_unique_in_realm")]

    def __str__(self):
        return self.alias


class AuthenticatorConfig(RealmOwned):
    """Named settings of one execution (e.g. a condition's role, ``loa-condition-level``)."""

    id = IdField()
    alias = models.CharField(max_length=255)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["alias"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="authenticator_config_alias_unique")]

    def __str__(self):
        return self.alias


class AuthenticationExecution(RealmOwned):
    """One entry of a flow: a step (``authenticator``, a provider id) or a sub-flow
    (``sub_flow``; a form flow's execution has both, the form's provider id and its flow)."""

    REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED = "REQUIRED", "ALTERNATIVE", "CONDITIONAL", "DISABLED"
    REQUIREMENTS = [(r, r) for r in (REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED)]

    id = IdField()
    flow = models.ForeignKey(AuthenticationFlow, on_delete=models.CASCADE, related_name="executions")
    authenticator = models.CharField(max_length=255, blank=True)
    sub_flow = models.ForeignKey(AuthenticationFlow, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="parent_executions")
    requirement = models.CharField(max_length=16, choices=REQUIREMENTS, default=DISABLED)
    priority = models.IntegerField(default=0)
    authenticator_config = models.ForeignKey(AuthenticatorConfig, null=True, blank=True, on_delete=models.SET_NULL,
                                             related_name="executions")
    user_setup_allowed = models.BooleanField(default=False)

    class Meta:
        ordering = ["priority", "id"]

    def __str__(self):
        return self.authenticator or "(sub-flow)"  # no query: the sub-flow may already be gone


class RequiredActionProvider(RealmOwned):
    """A required action as the realm configures it (Keycloak's RequiredActionProviderModel):
    ``enabled`` (a disabled one is not asked for), ``default_action`` (given to new users)."""

    id = IdField()
    alias = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    provider_id = models.CharField(max_length=255)
    enabled = models.BooleanField(default=True)
    default_action = models.BooleanField(default=False)
    priority = models.IntegerField(default=0)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["priority", "name"]
        constraints = [models.UniqueConstraint(fields=["realm", "alias"], name="required_action_alias_unique")]

    def __str__(self):
        return self.alias


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


class ProtocolMapper(models.Model):
    """Writes one claim (OIDC) or attribute (SAML); belongs to a client or to a client scope."""

    id = IdField()
    client = models.ForeignKey(Client, null=True, blank=True, on_delete=models.CASCADE, related_name="protocol_mappers")
    client_scope = models.ForeignKey(
        ClientScope, null=True, blank=True, on_delete=models.CASCADE, related_name="protocol_mappers"
    )
    name = models.CharField(max_length=255)
    protocol = models.CharField(max_length=32, default="openid-connect")
    protocol_mapper = models.CharField(max_length=255, help_text="Mapper type, e.g. oidc-audience-mapper.")
    consent_required = models.BooleanField(default=False)
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(client__isnull=False) ^ Q(client_scope__isnull=False), name="mapper_has_one_owner"
            )
        ]

    def __str__(self):
        return self.name


class RealmKey(RealmOwned):
    """A signing key pair. The active key with the highest priority signs; passive keys only
    verify, so tokens signed before a rotation stay valid until they expire."""

    ACTIVE, PASSIVE, DISABLED = "active", "passive", "disabled"
    ALGORITHMS = [("RS256", "RS256"), ("ES256", "ES256"), ("EdDSA", "EdDSA")]

    id = IdField()
    kid = models.CharField(max_length=64, unique=True)
    algorithm = models.CharField(max_length=16, choices=ALGORITHMS, default="RS256")
    use = models.CharField(max_length=8, default="sig")
    status = models.CharField(
        max_length=16, choices=[(s, s) for s in (ACTIVE, PASSIVE, DISABLED)], default=ACTIVE
    )
    priority = models.IntegerField(default=100)
    private_key_encrypted = models.TextField(editable=False)
    public_key_pem = models.TextField(editable=False)
    certificate_pem = models.TextField(blank=True, editable=False)
    provider_name = models.CharField(max_length=255, default="rsa-generated")
    created = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-priority", "-created"]

    def __str__(self):
        return f"{self.algorithm} {self.kid} ({self.status})"

    @property
    def private_key_pem(self):
        return crypto.decrypt(self.private_key_encrypted)


class Event(RealmOwned):
    """A user event (LOGIN, CODE_TO_TOKEN ...) or an admin event (CREATE of users/<id> ...).

    Written once, in the transaction of the change it records; storage is one listener of it."""

    USER, ADMIN = "user", "admin"

    id = IdField()
    kind = models.CharField(max_length=8, choices=[(USER, USER), (ADMIN, ADMIN)], default=USER)
    time = models.DateTimeField(default=timezone.now, db_index=True)
    type = models.CharField(max_length=64, help_text="User event type, or the admin operation type.")
    client_id = models.CharField(max_length=255, blank=True)
    user_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    ip_address = models.CharField(max_length=64, blank=True)
    error = models.CharField(max_length=255, blank=True)
    details = models.JSONField(default=dict, blank=True)
    resource_type = models.CharField(max_length=64, blank=True)
    resource_path = models.CharField(max_length=1024, blank=True)
    representation = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-time"]
        indexes = [models.Index(fields=["realm", "kind", "-time"])]

    def __str__(self):
        return f"{self.kind} {self.type} {self.time:%Y-%m-%d %H:%M:%S}"


class UserSession(RealmOwned):
    """The SSO session: one per signed-in browser (or offline grant), shared by OIDC and SAML
    clients. Stored in the database (so it survives a restart) and cached by its id."""

    id = models.CharField(max_length=64, primary_key=True, default=crypto.random_id, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="sessions")
    offline = models.BooleanField(default=False)
    started = models.DateTimeField(default=timezone.now)
    last_refresh = models.DateTimeField(default=timezone.now)
    auth_time = models.DateTimeField(default=timezone.now)
    remember_me = models.BooleanField(default=False)
    ip_address = models.CharField(max_length=64, blank=True)
    auth_methods = models.JSONField(default=list, blank=True, help_text="Steps passed, e.g. pwd, otp.")
    notes = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["realm", "user"])]

    def __str__(self):
        return f"session {self.id} of {self.user}"


class ClientSession(models.Model):
    """One client's share of an SSO session."""

    id = IdField()
    user_session = models.ForeignKey(UserSession, on_delete=models.CASCADE, related_name="client_sessions")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="sessions")
    started = models.DateTimeField(default=timezone.now)
    last_refresh = models.DateTimeField(default=timezone.now)
    redirect_uri = models.CharField(max_length=2048, blank=True)
    scope = models.CharField(max_length=1024, blank=True)
    notes = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user_session", "client"], name="uniq_client_session")]


class Organization(RealmOwned):
    """Keycloak 26's organization: a named set of the realm's users (its members) with e-mail
    domains. Kept in its own tables, not behind a hidden group as Keycloak does: members get no
    roles from it and it never shows among the realm's groups."""

    id = IdField()
    name = models.CharField(max_length=255)
    alias = models.CharField(max_length=255, help_text="Set once; the token claim's key.")
    enabled = models.BooleanField(default=True)
    description = models.TextField(blank=True)
    redirect_url = models.CharField(max_length=2048, blank=True)
    attributes = models.JSONField(default=dict, blank=True)  # name -> [values], as a group's
    members = models.ManyToManyField(User, through="OrganizationMember", related_name="organizations")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_org_name"),
                       models.UniqueConstraint(fields=["realm", "alias"], name="uniq_org_alias")]

    def __str__(self):
        return self.name


class OrganizationDomain(RealmOwned):
    """An e-mail domain of an organization: one organization per domain in a realm."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="domains")
    name = models.CharField(max_length=255)
    verified = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["realm", "name"], name="uniq_org_domain")]


class OrganizationMember(models.Model):
    """A user's membership: MANAGED when the organization provisioned the user (Keycloak: through
    its identity provider; removing the membership removes the user), else UNMANAGED."""

    MANAGED, UNMANAGED = "MANAGED", "UNMANAGED"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="organization_memberships")
    membership_type = models.CharField(max_length=16, default=UNMANAGED,
                                       choices=[(MANAGED, MANAGED), (UNMANAGED, UNMANAGED)])

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "user"], name="uniq_org_member")]


# Effective roles: the one place that says which roles a user holds. A user holds the roles mapped
# to them directly, the roles mapped to each of their groups and every ancestor of those groups,
# and, transitively, every role contained in a composite role they hold. Cycles among composites
# are allowed (Keycloak allows them) and terminate. They live beside the models because the
# console's ``User.is_staff`` needs them too.

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


def effective_role_ids(user):
    """The ids of ``effective_roles(user)``: the same one query, raw (a user's first token in a
    process reads it, and the ORM's compiler costs more CPU than the answer), or the answer read
    with the user's row (``effective_role_ids_column``)."""
    read = user.__dict__.pop(_ROLE_IDS_READ, None)
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
    return any(r.client_id is None and r.name == name for r in effective_roles(user))
