"""A directory sync writes user rows without ``save()`` (``federation.ldap.rows``), so it drops
their sessions' cached copies itself: a user the directory disabled is refused at the next
session check, as one disabled in the console is, not served from the copy until it expires."""
from django.core.cache import cache

from federation.ldap import rows
from realms.sso import sessions
from realms.users.accounts import create_user


def test_a_user_the_sync_disabled_loses_the_cached_session(realm):
    alice = create_user(realm, "alice")
    session = sessions.create_user_session(realm, alice)
    assert sessions.get_valid_session(realm, session.pk).user.enabled  # copied, with its user
    assert cache.get(sessions.cache_key(session.pk)) is not None
    (changed,) = rows.existing(realm, ["alice"]).values()
    rows.update([(alice.pk, {**changed, "enabled": False})])
    assert cache.get(sessions.cache_key(session.pk)) is None
    assert not sessions.get_valid_session(realm, session.pk)


def test_a_renamed_user_is_read_again(realm):
    bob = create_user(realm, "bob")
    session = sessions.create_user_session(realm, bob)
    assert sessions.get_valid_session(realm, session.pk).user.email == ""
    (changed,) = rows.existing(realm, ["bob"]).values()
    rows.update([(bob.pk, {**changed, "email": "bob@example.org"})])
    assert sessions.get_valid_session(realm, session.pk).user.email == "bob@example.org"
