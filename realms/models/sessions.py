"""SSO sessions, client sessions and events."""
from django.db import models
from django.utils import timezone

from ..data import crypto
from .clients import Client
from .fields import IdField
from .realm import RealmOwned
from .users import User


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
