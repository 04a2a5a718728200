"""Background jobs the console starts (a realm import, a partial import, a partial export): one
row each, which the job's runner updates as it goes and the console shows while it runs."""
from django.db import models
from django.utils import timezone

from .fields import IdField
from .realm import Realm
from .users import User


class ConsoleJob(models.Model):
    REALM_IMPORT, PARTIAL_IMPORT, PARTIAL_EXPORT = "realm-import", "partial-import", "partial-export"
    KINDS = [(REALM_IMPORT, "Realm import"), (PARTIAL_IMPORT, "Partial import"), (PARTIAL_EXPORT, "Partial export")]
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, "Queued"), (RUNNING, "Running"), (DONE, "Done"), (FAILED, "Failed")]

    id = IdField()
    kind = models.CharField(max_length=16, choices=KINDS)
    # The realm imported into or exported; a realm import's once it exists (its name is realm_name).
    realm = models.ForeignKey(Realm, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    realm_name = models.CharField(max_length=255, blank=True)
    started_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    ip_address = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=8, choices=STATUSES, default=QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    step = models.CharField(max_length=255, blank=True)
    options = models.JSONField(default=dict, blank=True)
    # The uploaded representation until the job has run (it may hold secrets and password
    # hashes: dropped as soon as the job ends, whatever its outcome).
    payload = models.JSONField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "import or export job"

    def __str__(self):
        return f"{self.get_kind_display()} of {self.realm_name}"

    @property
    def running(self):
        return self.status in (self.QUEUED, self.RUNNING)
