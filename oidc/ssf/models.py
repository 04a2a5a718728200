"""A receiver's stream: its configuration and status. The SETs themselves are the webhook
outbox's rows (a message and a delivery to the stream's endpoint), so push and poll share them."""
from django.db import models
from django.utils import timezone

from realms.models import Client, IdField, Realm


class SsfStream(models.Model):
    """One stream per receiver client (SSF 1.0 §8.1.1; Keycloak allows one). ``endpoint`` is the
    webhook endpoint whose deliveries carry its SETs: POSTed to ``endpoint_url`` for a push
    stream, held for the receiver's poll for a poll stream."""

    PUSH, POLL = "urn:ietf:rfc:8935", "urn:ietf:rfc:8936"
    # RISC's names of the same methods, which Keycloak accepts too (Apple Business Manager uses them).
    RISC_PUSH = "https://schemas.openid.net/secevent/risc/delivery-method/push"
    RISC_POLL = "https://schemas.openid.net/secevent/risc/delivery-method/poll"
    ENABLED, PAUSED, DISABLED = "enabled", "paused", "disabled"

    id = IdField()
    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="+")
    client = models.OneToOneField(Client, on_delete=models.CASCADE, related_name="ssf_stream")
    endpoint = models.OneToOneField("webhooks.Endpoint", on_delete=models.CASCADE, related_name="ssf_stream")
    issuer = models.CharField(max_length=2048, help_text="The SETs' iss: the realm's issuer when created.")
    audience = models.CharField(max_length=512)
    method = models.CharField(max_length=64)
    endpoint_url = models.CharField(max_length=2048, blank=True, help_text="Push: the receiver's URL.")
    description = models.CharField(max_length=1024, blank=True)
    events_requested = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=8, default=ENABLED)
    reason = models.CharField(max_length=1024, blank=True)
    subjects = models.JSONField(default=list, blank=True, help_text="Subjects added (SSF 1.0 §8.1.3).")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["realm"], name="oidc_ssf_stream_realm")]

    @property
    def polled(self):
        return self.method in (self.POLL, self.RISC_POLL)

    def __str__(self):
        return f"SSF stream {self.id} of {self.client_id}"
