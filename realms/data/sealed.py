"""The columns that hold secrets sealed at rest (``crypto``), re-encrypted under the current
SECRET_KEY after a rotation by ``manage.py rotate_secret_key``, so that the old key can then be
dropped from SECRET_KEY_FALLBACKS.

Each owner registers its columns from its ``AppConfig.ready()`` with ``register``; short-lived
sealed values (authentication session notes, CIBA requests) are not registered: they expire
before a fallback is dropped (docs/operations/secret-key.md).
"""
import json

from cryptography.fernet import InvalidToken
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast

from ..registry import Registry
from . import crypto

BATCH = 500  # rows locked and rewritten per transaction

_columns = Registry("sealed columns")


def register(name, reseal_column):
    """``reseal_column()`` re-encrypts its rows and returns (rows rewritten, values no key opens)."""
    _columns.add(name, reseal_column)


def reseal_all():
    """name -> (rows rewritten, values no key opens) of every registered column."""
    return {name: _columns[name]() for name in sorted(_columns)}


def reseal_rows(queryset, field, convert, read=None):
    """Rewrite ``field`` of each row of ``queryset`` whose value ``convert`` changes. ``convert(value)``
    (the value of ``read``, by default ``field``) returns the new value, or None when every secret
    in it is sealed with the current key already. Rows are locked a batch at a time, so a change
    made meanwhile is not overwritten."""
    ids = list(queryset.values_list("pk", flat=True))
    rewritten = unreadable = 0
    for start in range(0, len(ids), BATCH):
        with transaction.atomic():
            for pk, value in queryset.filter(pk__in=ids[start:start + BATCH]).select_for_update().values_list(
                    "pk", read or field):
                try:
                    new = convert(value)
                except InvalidToken:
                    unreadable += 1
                    continue
                if new is not None:
                    queryset.model.objects.filter(pk=pk).update(**{field: new})
                    rewritten += 1
    return rewritten, unreadable


def text_column(model, field, **filters):
    """A resealer for a column holding one sealed token (empty: nothing sealed)."""
    return lambda: reseal_rows(model.objects.filter(**filters).exclude(**{field: ""}), field, crypto.reseal)


def map_column(model, field):
    """A resealer for a ``SealedMapField``, read as stored (its text, so no entry is opened on the way)
    and written in clear: the field seals every entry under the current key when it is written."""
    column = model._meta.get_field(field)

    def convert(text):
        value = json.loads(text or "{}")
        tokens = {name: value[name][len(column.PREFIX):] for name in column.sealed
                  if isinstance(value.get(name), str) and value[name].startswith(column.PREFIX)}
        if all(crypto.reseal(token) is None for token in tokens.values()):
            return None
        return {**value, **{name: crypto.decrypt(token) for name, token in tokens.items()}}

    return lambda: reseal_rows(model.objects.annotate(sealed_text=Cast(field, TextField())), field, convert,
                               read="sealed_text")
