"""The request ids SAML remembers against replay (``saml.inbound.first_use``) are deleted by the
realms' periodic purge (``saml.purges``) once a message carrying them would be stale, not by each
request; a replayed AuthnRequest is refused all the same."""
from datetime import timedelta

from django.test import Client as HttpClient
from django.utils import timezone

from realms import purges
from saml import inbound
from saml.models import SeenRequest

from . import messages as m
from .test_security import ACS, SP, acme, http, keys, post, realm, sp_client  # noqa: F401 (fixtures)

SECOND = timedelta(seconds=1)


def _ids():
    return set(SeenRequest.objects.values_list("request_id", flat=True))


def test_the_purge_deletes_expired_request_ids_and_keeps_live_ones(http, sp_client, keys):
    SeenRequest.objects.create(client=sp_client, request_id="_stale", expires_at=timezone.now() - SECOND)
    form = m.post_form(m.sign(m.authn_request(SP, acs=ACS, request_id="_live"), keys[0]))
    assert post(http, form).status_code == 200
    assert _ids() == {"_stale", "_live"}  # a request leaves expired ids to the purge

    assert purges.run()["saml.seen_requests"] == 1
    assert _ids() == {"_live"}
    replayed = post(HttpClient(), form)
    assert replayed.status_code == 400 and "This request was already used." in replayed.content.decode()

    live_until = SeenRequest.objects.get().expires_at
    assert live_until >= timezone.now() + inbound.MAX_AGE  # kept as long as the request would be fresh
    assert purges.run(live_until + SECOND)["saml.seen_requests"] == 1
    assert _ids() == set()


def test_an_expired_id_the_purge_has_not_reached_is_no_replay(sp_client):
    SeenRequest.objects.create(client=sp_client, request_id="_again", expires_at=timezone.now() - SECOND)
    assert inbound.first_use(sp_client, "_again")
    assert SeenRequest.objects.get().expires_at > timezone.now()  # remembered afresh
    assert not inbound.first_use(sp_client, "_again")
    assert inbound.first_use(sp_client, "_other")
