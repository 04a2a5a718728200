"""Full and changed-users synchronisation of an LDAP provider with Import Users on (Keycloak's
LDAPStorageProviderFactory.sync / syncSince): the directory's users read a page at a time and
imported or updated a page per transaction, the directory sending the next page while this one
is written (a reader thread one page ahead). ``lastSync`` (epoch seconds, as Keycloak keeps it in
the component's config) moves only when a run has finished, so a run killed half-way leaves the
pages it committed and the next run does the rest; a run is idempotent. One run per provider at
a time (Keycloak takes a cluster lock): ``rows.session_lock``, which the database drops with the
connection of a killed worker."""
import queue
import threading
import time

from django.db import transaction

from realms.data import rows
from realms.models import Component, User

from . import membership
from .provider import LdapProvider


def _status(added, updated, removed, failed):
    # Keycloak's SynchronizationResult.getStatus().
    text = f"{added} imported users, {updated} updated users"
    if removed:
        text += f", {removed} removed users"
    if failed:
        text += f", {failed} users failed sync! See server log for more details"
    return text


def result_rep(added=0, updated=0, removed=0, failed=0, ignored=False):
    return {"ignored": ignored, "added": added, "updated": updated, "removed": removed, "failed": failed,
            "status": "ignored" if ignored else _status(added, updated, removed, failed)}


_END = object()


def _ahead(pages):
    """``pages`` read one page ahead by a thread (python-ldap waits for the server without the
    GIL), so the directory's next page overlaps the database's write of this one. An error of
    the reader is raised here; leaving early stops the reader."""
    ready, stop = queue.Queue(maxsize=1), threading.Event()

    def read():
        try:
            for page in pages:
                while not stop.is_set():
                    try:
                        ready.put(page, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            item = _END
        except Exception as exc:  # handed to the consumer, raised there
            item = exc
        finally:
            pages.close()
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    reader = threading.Thread(target=read, name="ldap-sync-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()


def sync(component, changed_only=False):
    """Run a full (or changed-users) sync; Keycloak's SynchronizationResult representation
    (``ignored`` when import is off or another run of this provider is under way)."""
    with rows.session_lock("federation.ldap.sync", component.pk) as locked:
        if not locked:
            return result_rep(ignored=True)
        return _sync(component, changed_only)


def _sync(component, changed_only):
    provider = LdapProvider(component)
    if not provider.config.import_enabled:
        return result_rep(ignored=True)  # nothing is imported to keep current
    started = int(time.time())
    condition = ""
    last = component.get("lastSync", "")
    if changed_only and last.isdigit() and int(last) > 0:
        # modifyTimestamp is GeneralizedTime; a second's overlap repeats a few, loses none.
        stamp = time.strftime("%Y%m%d%H%M%SZ", time.gmtime(int(last) - 1))
        condition = f"(|(modifyTimestamp>={stamp})(createTimestamp>={stamp}))"
    totals = [0, 0, 0]
    for page in _ahead(provider.directory.pages(provider.config.users_dn, provider.config.user_filter(condition),
                                                provider._read_attrs())):
        result = provider.import_page(component.realm, page)
        totals[0] += result.added
        totals[1] += result.updated
        totals[2] += result.failed
    rows.refresh_statistics(totals[0], User)
    with transaction.atomic():
        row = Component.objects.select_for_update().get(pk=component.pk)
        row.config["lastSync"] = [str(started)]
        row.save(update_fields=["config"])
    return result_rep(added=totals[0], updated=totals[1], failed=totals[2])


DIRECTIONS = ("fedToKeycloak", "keycloakToFed")


def sync_mapper(component, mapper_id, direction):
    """A group or role mapper's sync ("Sync LDAP groups to Keycloak" / "Sync Keycloak groups to
    LDAP"), in one transaction: Keycloak's SynchronizationResult representation, or None when the
    mapper has nothing to synchronize. Raises ``membership.MembershipError`` (a directory tree
    the realm cannot hold), DirectoryUnavailable, or ldap.LDAPError (the directory refused)."""
    provider = LdapProvider(component)
    mapper = next((m for m in provider.mappers if m.component.pk == mapper_id), None)
    if not isinstance(mapper, membership.Membership):
        return None
    with transaction.atomic():
        run = mapper.sync_to_realm if direction == DIRECTIONS[0] else mapper.sync_to_directory
        return run(provider.directory, component.realm)
