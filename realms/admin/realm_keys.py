"""Realm signing keys."""
from django.contrib import admin

from ..data import keys
from ..models import RealmKey
from .base import ConsoleAdmin, adopt, realm_owned_list_filter
from .names import time_column


@admin.register(RealmKey)
class RealmKeyAdmin(ConsoleAdmin):
    """Realm signing keys: listed with kid, algorithm, status and priority. Adding one generates
    a fresh key pair; the private key is never shown (it is stored encrypted)."""

    list_display = ("kid", "algorithm", "status", "priority", "provider_name", "created_at")
    list_filter = realm_owned_list_filter("status", "algorithm")
    search_fields = ("kid",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("realm", "algorithm", "priority", "status")
        return ("realm", "kid", "algorithm", "use", "provider_name", "status", "priority", "created_at",
                "public_key_pem", "certificate_pem")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("kid", "algorithm", "use", "provider_name", "created_at", "public_key_pem", "certificate_pem")

    created_at = time_column("created", "Created")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        adopt(obj, keys.generate_key(obj.realm, obj.algorithm, priority=obj.priority, status=obj.status))
