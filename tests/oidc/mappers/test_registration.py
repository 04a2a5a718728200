"""Dynamic registration's ``subject_type: pairwise`` and ``sector_identifier_uri`` become the
client's pairwise mapper, as in Keycloak; its checks refuse what does not fit."""
import pytest

from oidc.mappers import PAIRWISE
from realms.models import ProtocolMapper
from tests.oidc.registration.conftest import OIDC, call, initial_token
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def _register(api, realm, body):
    return call("post", realm, OIDC, body, bearer=initial_token(api, realm))


def test_pairwise_registration_creates_a_salted_mapper(master_api, acme):
    resp = _register(master_api, acme, {"redirect_uris": ["https://rp.example/cb"], "subject_type": "pairwise"})
    assert resp.status_code == 201, resp.content
    out = resp.json()
    assert out["subject_type"] == "pairwise" and "sector_identifier_uri" not in out
    mapper = ProtocolMapper.objects.get(client__client_id=out["client_id"], protocol_mapper=PAIRWISE)
    assert mapper.config["pairwiseSubAlgorithmSalt"]

    update = {"client_id": out["client_id"], "redirect_uris": ["https://rp.example/cb"], "subject_type": "public"}
    resp = call("put", acme, OIDC, update, bearer=out["registration_access_token"], client_id=out["client_id"])
    assert resp.status_code == 200, resp.content
    assert resp.json()["subject_type"] == "public"
    assert not ProtocolMapper.objects.filter(client__client_id=out["client_id"], protocol_mapper=PAIRWISE).exists()


def test_pairwise_registration_refused_for_redirect_uris_on_two_hosts(master_api, acme):
    resp = _register(master_api, acme, {"redirect_uris": ["https://a.example/cb", "https://b.example/cb"],
                                        "subject_type": "pairwise"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_client_metadata"
    assert "multiple host" in resp.json()["error_description"]


def test_sector_identifier_uri_listing_the_redirect_uris(master_api, acme, sector):
    url = sector.serve("/sector.json", ["https://a.example/cb", "https://b.example/cb"])
    resp = _register(master_api, acme, {"redirect_uris": ["https://a.example/cb", "https://b.example/cb"],
                                        "subject_type": "pairwise", "sector_identifier_uri": url})
    assert resp.status_code == 201, resp.content
    assert resp.json()["sector_identifier_uri"] == url
    sector.serve("/sector.json", ["https://a.example/cb"])
    resp = _register(master_api, acme, {"redirect_uris": ["https://a.example/cb", "https://b.example/cb"],
                                        "subject_type": "pairwise", "sector_identifier_uri": url})
    assert resp.status_code == 400 and "does not match" in resp.json()["error_description"]


def test_unknown_subject_type_refused(master_api, acme):
    resp = _register(master_api, acme, {"redirect_uris": ["https://rp.example/cb"], "subject_type": "secret"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_client_metadata"
