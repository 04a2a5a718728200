"""Whether a realm has enabled webhook endpoints is kept per process for at most as many realms
as their configurations (IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT, decision 0107): a process that
serves ever more realms keeps the answers of those it served last, and reads a dropped one again."""
import pytest

from realms.audit.events import emit
from realms.models import Realm
from webhooks import outbox, services
from webhooks.models import Message

pytestmark = pytest.mark.django_db


def test_the_answers_kept_are_bounded_and_a_dropped_realm_is_read_again(settings, django_assert_num_queries,
                                                                       monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT = 3
    outbox._has_enabled_endpoints.clear()
    realms = [Realm.objects.create(name=f"bounded-{n}", events_enabled=False) for n in range(5)]
    services.create_endpoint(realms[0], "https://hooks.example.com/in", ["auth.*"])
    for realm in realms:
        emit(realm, "CLIENT_LOGIN", client_id="app")
    assert len(outbox._has_enabled_endpoints._entries) == 3
    with django_assert_num_queries(0):
        emit(realms[4], "CLIENT_LOGIN", client_id="app")  # served last: kept, no query
    with django_assert_num_queries(1):
        emit(realms[1], "CLIENT_LOGIN", client_id="app")  # dropped: read again (no endpoint)
    assert len(outbox._has_enabled_endpoints._entries) == 3
    emit(realms[0], "CLIENT_LOGIN", client_id="app")  # dropped too, and its endpoint still found
    assert Message.objects.filter(realm=realms[0]).count() == 2
