"""The model fields and defaults every table uses: ids (``new_id``, ``IdField``) and the realm's SMTP
settings field."""
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
