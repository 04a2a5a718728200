"""Request ids seen from SAML clients, kept against replay until the request would be stale."""
from django.db import models

from realms.models import Client


class SeenRequest(models.Model):
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="+")
    request_id = models.CharField(max_length=256)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "request_id"], name="uniq_saml_request_id")]

    def __str__(self):
        return f"{self.request_id} from {self.client_id}"
