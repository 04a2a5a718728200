"""A realm, what every realm-owned row derives from (``RealmOwned``), its components (user storage,
LDAP mappers: Keycloak's ComponentModel) and its signing keys."""
import base64

from django.db import models
from django.utils import timezone

from ..data import crypto
from .fields import IdField, SmtpServerField


def default_events_listeners():
    return ["jboss-logging"]  # Keycloak's default: events logged (realms.audit.events)


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
    # A database default too: the previous release's INSERTs leave the column out.
    user_managed_access_allowed = models.BooleanField(
        default=False, db_default=False,
        help_text="Users manage their resources and share them (the account console's My resources).")
    login_theme = models.CharField(max_length=64, default="v2")
    account_theme = models.CharField(max_length=64, blank=True)
    email_theme = models.CharField(max_length=64, blank=True)
    internationalization_enabled = models.BooleanField(default=False)
    supported_locales = models.JSONField(default=list, blank=True)
    default_locale = models.CharField(max_length=16, blank=True)

    # Events.
    events_enabled = models.BooleanField(default=False, help_text="Save events.")
    events_expiration = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds; empty = keep.")
    events_listeners = models.JSONField(default=default_events_listeners, blank=True)
    enabled_event_types = models.JSONField(default=list, blank=True)
    admin_events_enabled = models.BooleanField(default=False)
    admin_events_details_enabled = models.BooleanField(default=False)

    # Flow bindings (aliases of authentication flows).
    browser_flow = models.CharField(max_length=255, default="browser")
    registration_flow = models.CharField(max_length=255, default="registration")
    direct_grant_flow = models.CharField(max_length=255, default="direct grant")
    reset_credentials_flow = models.CharField(max_length=255, default="reset credentials")
    # Only Keycloak's built-in flow: clients authenticate by their own authenticator (decision 0064).
    client_authentication_flow = models.CharField(max_length=255, default="clients", choices=[("clients", "clients")])
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


class RealmKey(RealmOwned):
    """A signing key pair or an HMAC secret: one of Keycloak's KeyProvider components (its id, name,
    providerId and config priority/enabled/active). The active key with the highest priority signs;
    passive keys only verify, so tokens signed before a rotation stay valid until they expire."""

    ACTIVE, PASSIVE, DISABLED = "active", "passive", "disabled"
    # What tokens may be signed with: Keycloak's asymmetric token algorithms.
    ALGORITHMS = [(a, a) for a in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
                                   "EdDSA")]
    HMAC = "HS512"  # hmac-generated: the realm's secret for the tokens only it reads (refresh tokens)
    # hmac-generated keys of every HS algorithm: a client's access, ID token or userinfo algorithm
    # may name one (Keycloak's SecretSignatureProvider: signed with the realm's secret, never published).
    HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
    # rsa-enc-generated: key pairs the clients encrypt to (request objects), published with use enc.
    # RSA1_5, which Keycloak also offers, is refused: decrypting it is a padding oracle.
    ENCRYPTION_ALGORITHMS = ("RSA-OAEP", "RSA-OAEP-256")
    AES = "AES"  # aes-generated: a secret Keycloak keeps for its own use; kept so an export round-trips
    SIG, ENC = "sig", "enc"

    id = IdField()
    kid = models.CharField(max_length=64, unique=True)
    algorithm = models.CharField(max_length=16, choices=[*ALGORITHMS, *((a, a) for a in HMAC_ALGORITHMS),
                                                         *((a, a) for a in ENCRYPTION_ALGORITHMS), (AES, AES)],
                                 default="RS256")
    use = models.CharField(max_length=8, choices=[(SIG, SIG), (ENC, ENC)], default=SIG)
    status = models.CharField(
        max_length=16, choices=[(s, s) for s in (ACTIVE, PASSIVE, DISABLED)], default=ACTIVE
    )
    priority = models.IntegerField(default=100)
    private_key_encrypted = models.TextField(editable=False)
    public_key_pem = models.TextField(editable=False)
    certificate_pem = models.TextField(blank=True, editable=False)
    provider_name = models.CharField(max_length=255, default="rsa-generated")  # the component's name
    # Keycloak's KeyProvider providerId: rsa-generated, ecdsa-generated, eddsa-generated, hmac-generated,
    # rsa-enc-generated, aes-generated (generated here), rsa (a key pair brought in: PEM through the
    # Admin API, an import's key material).
    provider_id = models.CharField(max_length=64, default="rsa-generated")
    created = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-priority", "-created"]

    def __str__(self):
        return f"{self.algorithm} {self.kid} ({self.status})"

    @property
    def private_key_pem(self):
        return crypto.decrypt(self.private_key_encrypted)

    @property
    def secret(self):
        """An HMAC or AES key's secret (bytes): sealed at rest in the private key's column, base64url."""
        return base64.urlsafe_b64decode(crypto.decrypt(self.private_key_encrypted))
