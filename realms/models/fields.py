"""The model fields and defaults the tables use: ids (``new_id``, ``IdField``) and string maps with
sealed entries (the realm's SMTP settings, an identity provider's config)."""
import uuid

from django.db import models

from ..data import crypto


def new_id():
    return str(uuid.uuid4())


class IdField(models.CharField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("default", new_id)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)


class SealedMapField(models.JSONField):
    """A string map whose ``sealed`` entries are encrypted at rest (the SMTP password, an identity
    provider's client secret); in Python the map holds the plain values. A value stored before
    encryption is read as it is and encrypted when the row is next saved."""

    PREFIX = "fernet:"
    sealed = ()

    def get_prep_value(self, value):
        if isinstance(value, dict) and any(value.get(name) for name in self.sealed):
            value = {**value, **{name: self.PREFIX + crypto.encrypt(value[name])
                                 for name in self.sealed if value.get(name)}}
        return super().get_prep_value(value)

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, dict):
            for name in self.sealed:
                secret = value.get(name)
                if isinstance(secret, str) and secret.startswith(self.PREFIX):
                    value[name] = crypto.decrypt(secret[len(self.PREFIX):])
        return value


class SmtpServerField(SealedMapField):
    """The realm's ``smtpServer`` map, its ``password`` sealed."""

    sealed = ("password",)


class IdentityProviderConfigField(SealedMapField):
    """An identity provider's ``config`` map, its ``clientSecret`` sealed."""

    sealed = ("clientSecret",)
