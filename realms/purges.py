"""Periodic purges: rows nothing can use any more (expired sessions, events past their
expiration, retired signing keys, and what other apps register: codes, pushed requests, SAML
request ids past their replay window, webhook logs) deleted by the beat task ``realms.purge`` (``realms.tasks``).

Each purge names the rows to delete as a query; ``run`` deletes them by primary key in batches
of ``IDP_PURGE_BATCH`` rows and stops a purge after ``IDP_PURGE_SECONDS``, so one run never
holds a long transaction or starves the others: what is left goes at the next run. Deletion goes
through the ORM, so cascades and the signals that drop cached copies still happen.

Action tokens have nothing to purge: a used token's id is kept in the shared cache only until
the token expires (``realms.http.action_tokens``)."""
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from .models import Client, Event, RealmKey, UserSession
from .registry import Registry
from .sso import sessions

logger = logging.getLogger(__name__)

# name -> expired(now): a QuerySet of the rows to delete. Apps add theirs from AppConfig.ready().
_purges = Registry("purges")

DEFAULT_BATCH = 1000
DEFAULT_SECONDS = 10.0


def register(name, expired):
    _purges.add(name, expired)


def run(now=None, batch=None, seconds=None):
    """Every registered purge, each bounded; returns {name: rows deleted}."""
    now = now or timezone.now()
    batch = batch if batch is not None else getattr(settings, "IDP_PURGE_BATCH", DEFAULT_BATCH)
    seconds = seconds if seconds is not None else getattr(settings, "IDP_PURGE_SECONDS", DEFAULT_SECONDS)
    counts = {}
    for name in sorted(_purges):
        try:
            counts[name] = delete_bounded(_purges[name](now), batch, seconds)
        except DatabaseError:
            # One purge's failure (a lock timeout, a dropped connection) must not stop the others.
            logger.exception("purge %s failed; it is tried again at the next run", name)
    return counts


def delete_bounded(queryset, batch, seconds):
    """Delete ``queryset``'s rows ``batch`` at a time, each batch its own transaction, until none
    is left or ``seconds`` have passed; returns how many rows of its model went."""
    deadline = time.monotonic() + seconds
    model, deleted = queryset.model, 0
    label = model._meta.label
    while True:
        # No ORDER BY: the first ``batch`` matches, found through the filter's index, not a sort
        # of every expired row (Event sorts by time by default).
        ids = list(queryset.order_by().values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        with transaction.atomic():
            deleted += model.objects.filter(pk__in=ids).delete()[1].get(label, 0)
        if len(ids) < batch or time.monotonic() >= deadline:
            return deleted


# The realms' own purges ------------------------------------------------------------------------

def expired_events(now):
    """User events past the realm's eventsExpiration and admin events past its
    adminEventsExpiration, both fixed when the event was stored (``realms.audit.events``)."""
    return Event.objects.filter(expires_at__lte=now)


def retired_keys(now):
    """Passive signing keys that nothing they signed can still use. Kept (see
    docs/decisions/0087-purges.md): active and disabled keys, HMAC secrets (they sign refresh,
    offline, registration and initial access tokens, some of which never expire), encryption and
    AES keys, keys brought in (provider ``rsa``) and any key no later key of its realm and
    algorithm with a higher priority replaced, which is how a rotation leaves it: a key made
    passive by hand is the administrator's to delete, as in Keycloak. A replaced key goes once
    its replacement is older than every lifespan of a token it may have signed (access, ID and
    action tokens, client overrides included) and no session of its realm started before the
    replacement is left (an ID token of a live session may still be sent as a logout hint)."""
    candidates = RealmKey.objects.filter(
        status=RealmKey.PASSIVE, use=RealmKey.SIG, algorithm__in=[a for a, _ in RealmKey.ALGORITHMS],
    ).exclude(provider_id="rsa").select_related("realm")
    retired = []
    for key in candidates:
        replaced_at = (RealmKey.objects.filter(realm_id=key.realm_id, algorithm=key.algorithm, status=RealmKey.ACTIVE,
                                               priority__gt=key.priority, created__gt=key.created)
                       .order_by("created").values_list("created", flat=True).first())
        if replaced_at is None or now - replaced_at <= timedelta(seconds=_longest_token_lifespan(key.realm)):
            continue
        if UserSession.objects.filter(realm_id=key.realm_id, started__lte=replaced_at).exists():
            continue
        retired.append(key.pk)
    return RealmKey.objects.filter(pk__in=retired)


def _longest_token_lifespan(realm):
    """Seconds: the longest a token signed by one of the realm's keys may be valid."""
    lifespans = [realm.access_token_lifespan, realm.access_token_lifespan_for_implicit_flow,
                 realm.action_token_generated_by_admin_lifespan, realm.action_token_generated_by_user_lifespan,
                 realm.access_code_lifespan_login, realm.oauth2_device_code_lifespan]
    lifespans += [_seconds(v) for k, v in (realm.attributes or {}).items()
                  if k.startswith("actionTokenGeneratedByUserLifespan.")]
    for attributes in Client.objects.filter(realm_id=realm.pk).exclude(attributes={}).values_list(
            "attributes", flat=True):
        lifespans.append(_seconds((attributes or {}).get("access.token.lifespan")))
    return max(lifespans)


def _seconds(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def register_own():
    """The realms' purges; called from ``RealmsConfig.ready``."""
    register("realms.sessions", sessions.expired_sessions)
    register("realms.events", expired_events)
    register("realms.keys", retired_keys)

