"""State the OpenID Connect endpoints keep beyond the realm model."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from realms.models import Client, Realm, UserSession


class AuthorizationCode(models.Model):
    """An issued authorization code. Only its SHA-256 digest is stored; it is redeemed once
    (an atomic update of ``used``), for the client and redirect URI it was issued to, before
    ``expires_at`` (the realm's client login timeout, 60 s by default)."""

    digest = models.CharField(max_length=64, primary_key=True)
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE)
    client = models.ForeignKey(Client, on_delete=models.CASCADE)
    user_session = models.ForeignKey(UserSession, on_delete=models.CASCADE)
    redirect_uri = models.CharField(max_length=2048)
    scope = models.CharField(max_length=1024, blank=True)
    nonce = models.CharField(max_length=512, blank=True)
    code_challenge = models.CharField(max_length=128, blank=True)
    code_challenge_method = models.CharField(max_length=8, blank=True)
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used = models.BooleanField(default=False)
    # RFC 8707: the resource indicators of the authorization request, space-separated (no
    # resource holds a space); the token request may narrow them, never widen them.
    resource = models.TextField(blank=True, default="")
    # RFC 9449 §10: the thumbprint of the DPoP key the authorization request bound the code to
    # (``dpop_jkt``, or the proof at PAR); the token request must prove that key.
    dpop_jkt = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]


class ConsentGrant(models.Model):
    """The client scopes a user has granted a client that requires consent (Keycloak's user
    consent). A sign-in asks again only for scopes not granted yet, or when ``prompt=consent``."""

    realm = models.ForeignKey(Realm, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    scope_ids = models.JSONField(default=list, help_text="Ids of the granted client scopes.")
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "client"], name="uniq_consent_per_user_client")]


class BackchannelAuthentication(models.Model):
    """A CIBA authentication request (OpenID Connect CIBA Core 1.0). Only SHA-256 digests of the
    ``auth_req_id`` handed to the client and of the authentication channel's token id are kept.
    ``state`` goes pending -> approved or denied by the channel's callback; approval creates the
    user session. The grant redeems an approved row once (a delete guarded by its state); a row
    found expired is deleted. In ping mode the client's notification token and the auth_req_id
    the notification carries are kept sealed (realms.data.crypto), the only way to send them back."""

    PENDING, APPROVED, DENIED = "pending", "approved", "denied"

    digest = models.CharField(max_length=64, primary_key=True)
    result_digest = models.CharField(max_length=64, unique=True)
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="+")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=1024, blank=True)
    binding_message = models.CharField(max_length=64, blank=True)
    acr_values = models.CharField(max_length=512, blank=True)
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    interval = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=8, default=PENDING)
    user_session = models.ForeignKey(UserSession, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    notification_token = models.TextField(blank=True)
    sealed_auth_req_id = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]


class DeviceAuthorization(models.Model):
    """An OAuth 2.0 device authorization (RFC 8628; Keycloak's OAuth2DeviceCodeModel). Only
    SHA-256 digests of the ``device_code`` and of the user code are kept. ``state`` goes pending
    -> approved (with the user session of the sign-in on the user-code page) or denied; the
    token grant redeems an approved row once (a delete guarded by its state); a row found
    expired is deleted. Polls read the cache's copy of the state (see
    oidc/device.py), so a pending poll reads no table."""

    PENDING, APPROVED, DENIED = "pending", "approved", "denied"

    digest = models.CharField(max_length=64, primary_key=True)
    user_code_digest = models.CharField(max_length=64)
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="+")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=1024, blank=True)
    nonce = models.CharField(max_length=512, blank=True)
    code_challenge = models.CharField(max_length=128, blank=True)
    code_challenge_method = models.CharField(max_length=8, blank=True)
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    interval = models.PositiveIntegerField(default=5)
    state = models.CharField(max_length=8, default=PENDING)
    user_session = models.ForeignKey(UserSession, null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]
        constraints = [models.UniqueConstraint(fields=["realm", "user_code_digest"],
                                               name="uniq_device_user_code_per_realm")]


class ClientInitialAccess(models.Model):
    """Keycloak's ClientInitialAccessModel: an initial access token for dynamic client
    registration. The token handed out is a JWT signed by the realm whose ``jti`` is this row's
    id; the row holds what Keycloak keeps: when it was made (epoch seconds), its lifetime
    (seconds, 0 = no expiry) and how many registrations it still allows."""

    id = models.CharField(max_length=36, primary_key=True)
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="+")
    timestamp = models.IntegerField()
    expiration = models.IntegerField(default=0)
    count = models.IntegerField(default=1)
    remaining_count = models.IntegerField(default=1)


class PushedAuthorization(models.Model):
    """A pushed authorization request (RFC 9126; Keycloak's PAR entry in its single-use store).
    Only the SHA-256 digest of the random part of the ``request_uri`` handed out is kept. The row
    holds the validated request's parameters (a request object's claims merged in, and the
    ``dpop_jkt`` of a DPoP proof sent with the push) and the object's claims; the authorization
    endpoint takes it once (a delete) for the client that pushed it, before ``expires_at`` (the
    realm's ``parRequestUriLifespan``). In a table, not the cache: dev mode's cache is per
    process, and the push and the redirect may reach different worker processes."""

    digest = models.CharField(max_length=64, primary_key=True)
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="+")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    params = models.JSONField(default=dict)  # name -> list of values
    request_object = models.JSONField(null=True, blank=True)  # the verified request object's claims
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]


class RevokedToken(models.Model):
    """An access token revoked (RFC 7009) before it expired, by the SHA-256 digest of its ``jti``,
    kept until it would have expired anyway (Keycloak's REVOKED_TOKEN). The shared cache's mark is
    what requests read; these rows put the marks back when the cache has lost them (a Redis
    restarted empty), so a revoked token never comes back to life."""

    digest = models.CharField(max_length=64, primary_key=True)
    expires_at = models.DateTimeField(db_index=True)


from .ssf.models import SsfStream  # noqa: E402, F401 -- a model of this app kept in its package
