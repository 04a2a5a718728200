"""Signatures: the Standard Webhooks vectors, interop both ways with the standardwebhooks reference
library, v1a Ed25519, rotation, tolerance and malformed input."""
import base64
import time
from datetime import UTC, datetime, timezone

import pytest
import standardwebhooks

from webhooks import signing
from webhooks.signing import InvalidSecret, Signer, VerificationError, Verifier

from . import vectors

VERIFIED = vectors.verified()


def test_vectors_file_has_complete_vectors():
    assert len(VERIFIED) >= 2
    assert vectors.must_reject_signatures()


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
def test_signer_reproduces_vector(v):
    header = Signer([v["secret"]]).sign(v["msg_id"], v["timestamp"], v["payload"].encode())
    assert header == v["signature"]


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
def test_verifier_accepts_vector_at_its_time(v):
    Verifier([v["secret"]]).verify(v["msg_id"], str(v["timestamp"]), v["signature"], v["payload"].encode(),
                                   now=v["timestamp"] + 10)


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
def test_verifier_rejects_vector_outside_tolerance(v):
    with pytest.raises(VerificationError):
        Verifier([v["secret"]]).verify(v["msg_id"], str(v["timestamp"]), v["signature"], v["payload"].encode(),
                                       now=v["timestamp"] + 301)
    with pytest.raises(VerificationError):
        Verifier([v["secret"]]).verify(v["msg_id"], str(v["timestamp"]), v["signature"], v["payload"].encode(),
                                       now=v["timestamp"] - 301)


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
@pytest.mark.parametrize("bad", vectors.must_reject_signatures())
def test_must_reject_values_are_rejected(v, bad):
    with pytest.raises(VerificationError):
        Verifier([v["secret"]]).verify(v["msg_id"], str(v["timestamp"]), bad, v["payload"].encode(),
                                       now=v["timestamp"])


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
def test_decoys_do_not_hide_the_real_signature(v):
    header = " ".join(vectors.must_reject_signatures() + [v["signature"]])
    Verifier([v["secret"]]).verify(v["msg_id"], str(v["timestamp"]), header, v["payload"].encode(),
                                   now=v["timestamp"])


@pytest.mark.parametrize("v", VERIFIED, ids=[v["msg_id"] for v in VERIFIED])
def test_tampered_vector_is_rejected(v):
    ts = str(v["timestamp"])
    verifier = Verifier([v["secret"]])
    for msg_id, body in [(v["msg_id"], v["payload"].encode() + b" "), (v["msg_id"] + "x", v["payload"].encode())]:
        with pytest.raises(VerificationError):
            verifier.verify(msg_id, ts, v["signature"], body, now=v["timestamp"])
    with pytest.raises(VerificationError):
        verifier.verify(v["msg_id"], str(v["timestamp"] + 1), v["signature"], v["payload"].encode(),
                        now=v["timestamp"])


def test_reference_library_verifies_what_we_send():
    secret = signing.generate_secret()
    body = b'{"type":"user.created","timestamp":"2026-01-01T00:00:00Z","data":{"id":"42"}}'
    headers = Signer([secret]).headers("msg_ours", body)
    assert standardwebhooks.Webhook(secret).verify(body, headers) == {
        "type": "user.created", "timestamp": "2026-01-01T00:00:00Z", "data": {"id": "42"}}


def test_reference_library_verifies_each_secret_of_a_rotation():
    old, new = signing.generate_secret(24), signing.generate_secret(64)
    body = b'{"x":1}'
    headers = Signer([old, new]).headers("msg_rot", body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        standardwebhooks.Webhook(secret).verify(body, headers)
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(signing.generate_secret()).verify(body, headers)


def test_we_verify_what_the_reference_library_signs():
    secret = signing.generate_secret()
    wh = standardwebhooks.Webhook(secret)
    now = datetime.now(tz=UTC)
    body = '{"type":"invoice.paid","data":{}}'
    signature = wh.sign("msg_theirs", now, body)
    ts = str(int(now.timestamp()))
    Verifier([signing.generate_secret(), secret]).verify("msg_theirs", ts, signature, body.encode())
    with pytest.raises(VerificationError):
        Verifier([signing.generate_secret()]).verify("msg_theirs", ts, signature, body.encode())


def test_v1a_ed25519_round_trip_and_rejections():
    private, public = signing.generate_key_pair()
    assert private.startswith("whsk_") and public.startswith("whpk_")
    assert signing.public_key_of(private) == public
    body = b'{"a":1}'
    headers = Signer([private]).headers("msg_ed", body)
    assert headers["webhook-signature"].startswith("v1a,")
    verifier = Verifier([public])
    verifier.verify_request_headers(headers, body)
    with pytest.raises(VerificationError):
        verifier.verify_request_headers(headers, body + b"x")
    other_private, other_public = signing.generate_key_pair()
    with pytest.raises(VerificationError):
        Verifier([other_public]).verify_request_headers(headers, body)
    # A v1a signature presented as v1 (or any unknown version) is not accepted.
    relabelled = dict(headers, **{"webhook-signature": "v2," + headers["webhook-signature"][4:]})
    with pytest.raises(VerificationError):
        verifier.verify_request_headers(relabelled, body)


def test_mixed_v1_and_v1a_header():
    secret = signing.generate_secret()
    private, public = signing.generate_key_pair()
    body = b"{}"
    headers = Signer([secret, private]).headers("msg_mixed", body)
    versions = [e.split(",", 1)[0] for e in headers["webhook-signature"].split(" ")]
    assert versions == ["v1", "v1a"]
    Verifier([secret]).verify_request_headers(headers, body)
    Verifier([public]).verify_request_headers(headers, body)
    standardwebhooks.Webhook(secret).verify(body, headers)


@pytest.mark.parametrize("ts", ["", "abc", "1.5", "-1", "99999999999999"])
def test_malformed_timestamps_are_rejected(ts):
    secret = signing.generate_secret()
    with pytest.raises(VerificationError):
        Verifier([secret]).verify("msg_1", ts, "v1,AAAA", b"{}")


@pytest.mark.parametrize("sig", ["", "v1", "v1,", "v1,%%%", "garbage", "v1,AAAA v1"])
def test_malformed_signatures_are_rejected(sig):
    secret = signing.generate_secret()
    with pytest.raises(VerificationError):
        Verifier([secret]).verify("msg_1", str(int(time.time())), sig, b"{}")


def test_too_many_entries_are_refused():
    secret = signing.generate_secret()
    body = b"{}"
    headers = Signer([secret]).headers("msg_1", body)
    flood = " ".join(["v1,AAAA"] * signing.MAX_SIGNATURE_ENTRIES + [headers["webhook-signature"]])
    with pytest.raises(VerificationError):
        Verifier([secret]).verify("msg_1", headers["webhook-timestamp"], flood, body)


@pytest.mark.parametrize("secret", [
    "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  # no prefix
    "whsec_" + base64.b64encode(b"x" * 23).decode(),  # too short
    "whsec_" + base64.b64encode(b"x" * 65).decode(),  # too long
    "whsec_not base64!",
])
def test_bad_secrets_are_refused(secret):
    with pytest.raises(InvalidSecret):
        Signer([secret])


def test_generated_secrets_have_24_to_64_bytes():
    for n in (24, 32, 64):
        assert len(signing.decode_secret(signing.generate_secret(n))) == n
    with pytest.raises(InvalidSecret):
        signing.generate_secret(16)


def test_fresh_timestamp_on_every_signing(monkeypatch):
    secret = signing.generate_secret()
    signer = Signer([secret])
    monkeypatch.setattr(signing, "_now", lambda: 1_700_000_000)
    first = signer.headers("msg_same", b"{}")
    monkeypatch.setattr(signing, "_now", lambda: 1_700_000_007)
    second = signer.headers("msg_same", b"{}")
    assert first["webhook-id"] == second["webhook-id"]
    assert first["webhook-timestamp"] != second["webhook-timestamp"]
    assert first["webhook-signature"] != second["webhook-signature"]
