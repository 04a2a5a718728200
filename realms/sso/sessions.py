"""SSO sessions (spec 1 §3): one user session per signed-in browser (or offline grant), holding
one client session per application. OIDC and SAML share them, so they live here, not in a
protocol app.

Rows are the truth (sessions survive a restart); the Django cache holds each user session by id,
and each client session by its session and client, so that the hot paths (authorization request
with a cookie, refresh) skip the database: a refresh reads both copies in one round trip (decision
0113). Every change goes through this module, which writes the row and refreshes or drops the
cache entry. With the feature ``stateless`` the cache is a table of the same database, so there
is no copy: the row is read and written once (decision 0109).

Timeouts follow Keycloak: a session ends when idle longer than SSO Session Idle or older than
SSO Session Max (remember-me variants when set and the user ticked "remember me"; offline
sessions: Offline Session Idle, and Offline Session Max only when enabled). A client can shorten
them for its own client session with the attributes ``client.session.idle.timeout`` and
``client.session.max.lifespan`` (offline: ``client.offline.session.*``).
"""
import copy
import time
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal
from django.utils import timezone

from .. import features
from ..data import rows
from ..models import ClientSession, Realm, User, UserSession, effective_role_ids_column
from ..registry import Registry

# Sent before the session row is deleted, with user_session=<UserSession> (still readable),
# client_sessions=[ClientSession ...] (with .client loaded) and reason=<str>. Logout propagation
# (front/back-channel) listens; receivers run inside the caller's transaction.
session_ended = Signal()

# Front-channel logout, per protocol: how the browser signs one client out. See
# register_frontchannel_logout.
_frontchannel_logout = Registry("front-channel logout")

# The idle timer is only written when it is at least this old, so a burst of requests on one
# session costs one UPDATE, not one per request. Idle timeouts are minutes to days; seconds of
# slack do not matter.
TOUCH_INTERVAL = timedelta(seconds=5)
# Cache entries are a shortcut, never the truth: keep them for a bounded time.
CACHE_TTL = 600

REASON_LOGOUT = "logout"
REASON_EXPIRED = "expired"
REASON_USER_DISABLED = "user_disabled"


def _copied():
    return not features.enabled("stateless")


def cache_key(session_id):
    """The key of the session's copy in the shared cache; None when sessions are not copied."""
    return f"idp:usersession:{session_id}" if _copied() else None


def client_cache_key(session_id, client_pk):
    """The key of a client session's copy (only when ``cache_key`` says sessions are copied)."""
    return f"idp:clientsession:{session_id}:{client_pk}"


def _client_copy(client_session):
    # Without its user session and client: the reader holds both (session_with_client).
    cached = copy.copy(client_session)
    cached._state.fields_cache.clear()
    return cached


def _session_copy(user_session):
    # Cached with its user but without their realm: every reader holds the realm already
    # (get_valid_session puts it back), and a Realm row costs more to unpickle than the rest.
    # (A pickled user carries no credential rows: User.__getstate__.)
    cached = copy.copy(user_session)
    cached._state.fields_cache.pop("realm", None)
    cached.__dict__.pop("fresh", None)  # true only for the request that created it
    user = cached._state.fields_cache.get("user")
    if user is not None:
        cached.user = copy.copy(user)
        cached.user._state.fields_cache.pop("realm", None)
    return cached


def _cache_put(user_session=None, client_session=None):
    """Put the copies given, in one round trip."""
    if not _copied():
        return
    copies = {}
    if user_session is not None:
        copies[cache_key(user_session.pk)] = _session_copy(user_session)
    if client_session is not None:
        copies[client_cache_key(client_session.user_session_id, client_session.client_id)] = (
            _client_copy(client_session))
    if len(copies) > 1:
        cache.set_many(copies, CACHE_TTL)
    elif copies:
        cache.set(*copies.popitem(), CACHE_TTL)


def _cache_drop(*session_ids):
    if session_ids and _copied():
        cache.delete_many([cache_key(s) for s in session_ids])


def _client_cache_drop(session_id, client_pk):
    if not _copied():
        return
    key = client_cache_key(session_id, client_pk)
    if transaction.get_connection().in_atomic_block:
        # At once for the transaction's own reads, and again once committed: another node may
        # put back the row it read before the commit.
        cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))


# Timeouts -------------------------------------------------------------------------------------

def session_idle_timeout(realm, user_session) -> int:
    """Seconds of inactivity after which the SSO (or offline) session ends."""
    if user_session.offline:
        return realm.offline_session_idle_timeout
    if user_session.remember_me and realm.sso_session_idle_timeout_remember_me:
        return realm.sso_session_idle_timeout_remember_me
    return realm.sso_session_idle_timeout


def session_max_lifespan(realm, user_session) -> int | None:
    """Seconds after sign-in at which the session ends; None when unbounded (offline sessions
    without Offline Session Max)."""
    if user_session.offline:
        return realm.offline_session_max_lifespan if realm.offline_session_max_lifespan_enabled else None
    if user_session.remember_me and realm.sso_session_max_lifespan_remember_me:
        return realm.sso_session_max_lifespan_remember_me
    return realm.sso_session_max_lifespan


def session_expiry(realm, user_session) -> datetime:
    """The instant the user session ends unless it is used again before."""
    expiry = user_session.last_refresh + timedelta(seconds=session_idle_timeout(realm, user_session))
    max_lifespan = session_max_lifespan(realm, user_session)
    if max_lifespan is not None:
        expiry = min(expiry, user_session.started + timedelta(seconds=max_lifespan))
    return expiry


def _int_attribute(client, key):
    try:
        return int(client.attributes.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def client_session_expiry(client_session) -> datetime:
    """The instant this client's share of the session ends (its refresh tokens expire then).

    Client overrides (attribute, else realm's Client Session Idle/Max) can only shorten the
    session: the result never exceeds the user session's own expiry."""
    user_session = client_session.user_session
    client = client_session.client
    realm = user_session.realm
    expiry = session_expiry(realm, user_session)
    if user_session.offline:
        idle = (_int_attribute(client, "client.offline.session.idle.timeout")
                or realm.client_offline_session_idle_timeout)
        max_lifespan = (_int_attribute(client, "client.offline.session.max.lifespan")
                        or realm.client_offline_session_max_lifespan)
    else:
        idle = _int_attribute(client, "client.session.idle.timeout") or realm.client_session_idle_timeout
        max_lifespan = _int_attribute(client, "client.session.max.lifespan") or realm.client_session_max_lifespan
    if idle:
        expiry = min(expiry, client_session.last_refresh + timedelta(seconds=idle))
    if max_lifespan:
        expiry = min(expiry, client_session.started + timedelta(seconds=max_lifespan))
    return expiry


def client_session_valid(client_session, now=None) -> bool:
    return (now or timezone.now()) < client_session_expiry(client_session)


# Lifecycle ------------------------------------------------------------------------------------

def create_user_session(realm, user, *, ip_address="", auth_methods=(), remember_me=False,
                        offline=False, notes=None) -> UserSession:
    now = timezone.now()
    user_session = rows.insert(UserSession(
        realm=realm, user=user, ip_address=ip_address or "", auth_methods=list(auth_methods),
        remember_me=bool(remember_me), offline=bool(offline), started=now, last_refresh=now, auth_time=now,
        notes=dict(notes or {}),
    ))
    # Created by this request, so it has no client session yet: the first one is inserted
    # without looking for an existing one (get_or_create_client_session).
    user_session.fresh = True
    transaction.on_commit(lambda: _cache_put(user_session))
    return user_session


_UNREAD = object()


def _load(session_id, cached=_UNREAD):
    if cached is _UNREAD:
        cached = cache.get(cache_key(session_id)) if _copied() else None
    if cached is not None:
        return cached
    user_session = _read_row(session_id)
    if user_session is not None:
        _cache_put(user_session)
    return user_session


def _read_row(session_id):
    """The session with its user, in one round trip of two one-row statements: PostgreSQL plans
    the ORM's join in several times their time, and the ORM compiles it on every stateless refresh
    (decision 0109)."""
    in_session = f"id = (SELECT user_id FROM {UserSession._meta.db_table} WHERE id = %s)"
    with rows.ahead(User, in_session, [session_id]) as user:
        user_session = next(iter(rows.fetch(UserSession, "id = %s", [session_id])), None)
    users = user.result() if user_session is not None else ()
    if not users:
        return None
    user_session.user = users[0]
    return user_session


def get_valid_session(realm, session_id, cached=_UNREAD) -> UserSession | None:
    """The live session with this id in this realm, or None. A session found past its idle or
    max timeout, or whose user is disabled, is ended on the way. ``cached``: the value of its
    ``cache_key`` when the caller read it already (with other keys, in one round trip; None when
    it was not there)."""
    if not session_id:
        return None
    user_session = _load(session_id, cached)
    if user_session is None or user_session.realm_id != realm.pk:
        return None
    user_session.realm = user_session.user.realm = realm  # the caller's copy is at least as fresh
    if not user_session.user.enabled:
        end_session(user_session, reason=REASON_USER_DISABLED)
        return None
    if timezone.now() >= session_expiry(realm, user_session):
        end_session(user_session, reason=REASON_EXPIRED)
        return None
    return user_session


def touch(user_session, client_session=None):
    """Reset the idle timer of the session (and of the client session). Writes at most once per
    TOUCH_INTERVAL per session, so it is cheap to call on every use."""
    now = timezone.now()
    touched = {}
    if now - user_session.last_refresh >= TOUCH_INTERVAL:
        user_session.last_refresh = now
        # A row ended meanwhile (0 rows updated) must not be put back in the cache.
        if UserSession.objects.filter(pk=user_session.pk).update(last_refresh=now):
            touched["user_session"] = user_session
    if client_session is not None and now - client_session.last_refresh >= TOUCH_INTERVAL:
        client_session.last_refresh = now
        if ClientSession.objects.filter(pk=client_session.pk).update(last_refresh=now):
            touched["client_session"] = client_session
    # A newer idle timer in the cache is harmless even if the transaction rolls back.
    _cache_put(**touched)


def set_note(user_session, name, value):
    """Write one note of the SSO session, in the database and the shared cache."""
    user_session.notes = {**(user_session.notes or {}), name: value}
    UserSession.objects.filter(pk=user_session.pk).update(notes=user_session.notes)
    _cache_put(user_session)


def reauthenticated(user_session, auth_methods):
    """The user signed in again within this session (prompt=login, max_age): new auth_time."""
    now = timezone.now()
    user_session.auth_time = now
    user_session.auth_methods = list(auth_methods)
    UserSession.objects.filter(pk=user_session.pk).update(auth_time=now, auth_methods=user_session.auth_methods)
    _cache_put(user_session)


def get_or_create_client_session(user_session, client, *, redirect_uri="", scope="", notes=None) -> ClientSession:
    """This client's session within the SSO session; a repeated sign-in of the same client
    refreshes it (new redirect URI and scope, idle timer reset). ``notes`` are written in the
    same statement (a None value removes that note)."""
    now = timezone.now()
    notes = notes or {}
    new = ClientSession(user_session=user_session, client=client, redirect_uri=redirect_uri, scope=scope,
                        started=now, last_refresh=now, notes={k: v for k, v in notes.items() if v is not None})
    if getattr(user_session, "fresh", False):
        # Nothing to find in a session this request created: a plain INSERT (batched with the sign-in's).
        client_session = rows.insert(new)
        user_session.fresh = False
    else:
        # One statement, the row found changed in it: redirect URI and scope unless blank, the idle
        # timer, the notes given (its start kept).
        client_session = rows.upsert(new, ("user_session", "client"), {
            "redirect_uri": rows.NEW_UNLESS_BLANK, "scope": rows.NEW_UNLESS_BLANK, "last_refresh": rows.NEW,
            "notes": notes})
        if client_session.pk != new.pk:
            _client_cache_drop(user_session.pk, client.pk)
    client_session.user_session = user_session
    client_session.client = client
    return client_session


def client_session_of(user_session, client) -> ClientSession | None:
    """This client's session within the SSO session, or None (the refresh and code-exchange
    read). A raw query: the ORM spends more CPU compiling this one-row lookup than the database
    spends answering it, and the token endpoint runs it on every refresh."""
    found = next(iter(rows.fetch(ClientSession, "user_session_id = %s AND client_id = %s",
                                 [user_session.pk, client.pk])), None)
    if found is not None:
        found.user_session, found.client = user_session, client
    return found


def session_with_client(realm, session_id, client):
    """The refresh's read: ``get_valid_session`` and this client's session within it (None when
    it has none), the copies of both from the shared cache in one round trip (decision 0113). A
    client session not in the cache is read from its row and put there."""
    if not session_id:
        return None, None
    keys = [cache_key(session_id), client_cache_key(session_id, client.pk)] if _copied() else []
    found = cache.get_many(keys) if keys else {}
    user_session = get_valid_session(realm, session_id, found.get(keys[0]) if keys else _UNREAD)
    if user_session is None:
        return None, None
    return user_session, copied_client_session(user_session, client, found.get(keys[1]) if keys else None)


def copied_client_session(user_session, client, cached):
    """This client's session within the SSO session: ``cached``, the value of its
    ``client_cache_key`` read with other keys (None when it was not there), else its row, then
    put in the shared cache."""
    if cached is not None:
        cached.user_session, cached.client = user_session, client
        return cached
    client_session = client_session_of(user_session, client)
    if client_session is not None:
        _cache_put(client_session=client_session)
    return client_session


def user_with_client_session(user_session, client) -> User | None:
    """The session's user, read now, if this client's session within it still exists; else
    None. One query, which reads the user's roles too: the Admin API asks all three on every
    request."""
    table = ClientSession._meta.db_table
    return next(iter(rows.fetch(User, f'realm_id = %s AND id = %s AND EXISTS (SELECT 1 FROM "{table}" '
                                      'WHERE user_session_id = %s AND client_id = %s)',
                                [user_session.realm_id, user_session.user_id, user_session.pk, client.pk],
                                extra=effective_role_ids_column(user_session.user_id))), None)


def client_sessions_with_clients(user_session) -> list:
    """The session's client sessions, each with its client: what ending the session tells its
    listeners, and what its front-channel logout reads."""
    return list(ClientSession.objects.select_related("client").filter(user_session=user_session))


def end_session(user_session, *, reason="", client_sessions=None):
    """End the SSO session: tell listeners (logout propagation) and delete it with its client
    sessions and authorization codes. ``client_sessions``: ``client_sessions_with_clients``, when
    the caller read them already (for ``frontchannel_logout_urls``)."""
    if client_sessions is None:
        client_sessions = client_sessions_with_clients(user_session)
    session_ended.send(sender=UserSession, user_session=user_session, client_sessions=client_sessions,
                       reason=reason or REASON_LOGOUT)
    UserSession.objects.filter(pk=user_session.pk).delete()  # its copy dropped by the signal (_drop_session)


def logout_all(realm):
    """Keycloak's ``logout-all``: every online session of the realm ends, and tokens issued
    before now are refused (the realm's not-before)."""
    for user_session in UserSession.objects.filter(realm=realm, offline=False):
        end_session(user_session)
    realm.not_before = int(time.time())
    realm.save(update_fields=["not_before"])


def logout_user(user):
    """Keycloak's user ``logout``: the user's online sessions end, and the user's tokens issued
    before now are refused (the user's not-before)."""
    for user_session in UserSession.objects.filter(user=user, offline=False):
        end_session(user_session)
    user.not_before = int(time.time())
    user.save(update_fields=["not_before"])


def end_client_sessions(user_sessions, client, *, reason=""):
    """End ``client``'s share of each of ``user_sessions`` (every token issued to it from them
    stops refreshing); an offline session left without a client ends. Returns how many shares
    were ended."""
    ended = 0
    for user_session in user_sessions:
        ended += end_client_session(user_session.pk, client.pk)
        if user_session.offline and not ClientSession.objects.filter(user_session=user_session).exists():
            end_session(user_session, reason=reason)
    return ended


def end_client_session(session_id, client_pk) -> int:
    """Delete one client's share of a session, row and cached copy; how many rows were deleted.
    Every deletion of a client session goes through here, or a refresh would find its copy."""
    ended = ClientSession.objects.filter(user_session_id=session_id, client_id=client_pk).delete()[0]
    _client_cache_drop(session_id, client_pk)
    return ended


def register_frontchannel_logout(protocol, url_for):
    """``url_for(request, user_session, client_session) -> str``: a URL the browser loads (in an
    iframe of the logout page) to sign that client out, or "" when the client has none. Each
    protocol registers one, so a logout started by any protocol reaches the clients of all."""
    _frontchannel_logout.add(protocol, url_for)


def frontchannel_logout_urls(request, user_session, client_sessions, exclude_client=None) -> list:
    """The front-channel logout URLs of the session's clients (``client_sessions_with_clients``),
    but ``exclude_client``, the one that asked for the logout and gets the protocol's own answer."""
    urls = []
    for client_session in client_sessions:
        if exclude_client is not None and client_session.client_id == exclude_client.pk:
            continue
        url_for = _frontchannel_logout.get(client_session.client.protocol)
        url = url_for(request, user_session, client_session) if url_for else ""
        if url:
            urls.append(url)
    return urls


# The realm's fields the timeouts of its sessions follow (session_idle_timeout, session_max_lifespan).
_LIFESPANS = ("sso_session_idle_timeout", "sso_session_max_lifespan", "sso_session_idle_timeout_remember_me",
              "sso_session_max_lifespan_remember_me", "offline_session_idle_timeout",
              "offline_session_max_lifespan", "offline_session_max_lifespan_enabled")


def expired_sessions(now=None):
    """Every session past its idle or max timeout (``realms.purges`` deletes them in batches; the
    delete signal drops their cached copies). Expiry is not a sign-out, so no session_ended signal
    is sent (Keycloak does not propagate it either).

    One condition per distinct set of lifespans, over the realms that have it (a subquery), not
    one per realm: a thousand realms mostly keep the defaults, and their purge stays a short query."""
    now = now or timezone.now()

    def older(field, seconds):
        return Q(**{f"{field}__lte": now - timedelta(seconds=seconds)})

    expired = Q(pk__in=[])
    for values in Realm.objects.order_by(*_LIFESPANS).values_list(*_LIFESPANS).distinct():
        lifespans = dict(zip(_LIFESPANS, values))
        realm = Realm(**lifespans)  # what the timeouts read of each of these realms
        kinds = Q(pk__in=[])
        for offline, remember_me in ((False, False), (False, True), (True, False)):
            probe = UserSession(offline=offline, remember_me=remember_me)
            timed_out = older("last_refresh", session_idle_timeout(realm, probe))
            max_lifespan = session_max_lifespan(realm, probe)
            if max_lifespan is not None:
                timed_out |= older("started", max_lifespan)
            kind = Q(offline=True) if offline else Q(offline=False, remember_me=remember_me)
            kinds |= kind & timed_out
        expired |= Q(realm__in=Realm.objects.filter(**lifespans).values("pk")) & kinds
    return UserSession.objects.filter(expired)


# Cache invalidation on changes made elsewhere ------------------------------------------------

def drop_users_sessions(user_ids):
    """Drop the cached copies of these users' sessions, now and once committed. A user change
    (disabled, deleted, renamed) must be seen by the next session check, in every process: the
    cached sessions carry the user. ``save()`` calls this through a signal; a writer that changes
    user rows without it (a directory sync) calls it itself."""
    if not user_ids or not _copied():
        return
    ids = list(UserSession.objects.filter(user_id__in=user_ids).values_list("pk", flat=True))
    _cache_drop(*ids)
    transaction.on_commit(lambda: _cache_drop(*ids))


def _drop_user_sessions(sender, instance, created=False, **kwargs):
    if not created:  # a new user has no session yet
        drop_users_sessions([instance.pk])


def _drop_session(sender, instance, **kwargs):
    _cache_drop(instance.pk)
    transaction.on_commit(lambda: _cache_drop(instance.pk))


def connect_signals():
    """Drop cached sessions when their user or session row changes; called from ``RealmsConfig.ready``."""
    post_save.connect(_drop_user_sessions, sender=User, dispatch_uid="usersession-cache-user-save")
    post_delete.connect(_drop_session, sender=UserSession, dispatch_uid="usersession-cache-delete")
