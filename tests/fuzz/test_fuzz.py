"""Every fuzz target for a bounded time: its seeds, then a fixed, derandomized series of mutants
(the same inputs on every run, so a failure here is reproducible and not flaky). Longer,
coverage-guided runs: ``scripts/fuzz.sh TARGET|all --seconds N``."""
import base64
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from .strategies import inputs
from .targets import CORPUS, REALM, TARGETS, _fill, _saml_now, run_one

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))  # more for a deeper run by hand


def _fuzz(target):
    state = target.setup()
    for seed in target.seeds():
        run_one(target, state, seed)

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    @given(inputs(target))
    def fuzz(data):
        run_one(target, state, data)

    fuzz()


@pytest.mark.parametrize("name", sorted(n for n, t in TARGETS.items() if t.db))
def test_fuzz_target_with_database(name, db):
    _fuzz(TARGETS[name])


@pytest.mark.parametrize("name", sorted(n for n, t in TARGETS.items() if not t.db))
def test_fuzz_target(name):
    _fuzz(TARGETS[name])


def test_seeds_reach_the_code_behind_the_first_checks(db):
    """A target whose seeds are all refused at the door (a changed URL, a token the API no longer
    takes) would pass while fuzzing nothing: the main seeds must succeed."""
    state = TARGETS["webhook_api"].setup()
    query = (CORPUS / "authorize/code-confidential").read_text()
    assert state.http.get(f"/realms/{REALM}/protocol/openid-connect/auth", QUERY_STRING=query).status_code == 200
    header, _, body = (CORPUS / "token/client-credentials-basic").read_bytes().partition(b"\n")
    response = state.http.post(f"/realms/{REALM}/protocol/openid-connect/token", data=body,
                               content_type="application/x-www-form-urlencoded", HTTP_AUTHORIZATION=header.decode())
    assert response.status_code == 200, response.content
    xml = _fill((CORPUS / "saml/authn-post").read_bytes()[1:], _saml_now())
    response = state.http.post(f"/realms/{REALM}/protocol/saml", {"SAMLRequest": base64.b64encode(xml).decode()})
    assert response.status_code == 200 and b"<form" in response.content, response.content[:500]
    response = state.http.post(f"/admin/realms/{REALM}/webhooks", data=(CORPUS / "webhook_api/create").read_bytes()[1:],
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {state.admin_token}")
    assert response.status_code == 201, response.content
