"""The Standard Webhooks signature vectors (third-party data, tests/data/README.md)."""
import json
from pathlib import Path

VECTORS_PATH = Path(__file__).resolve().parents[1] / "data" / "standard-webhooks" / "vectors.json"


def load():
    return json.loads(VECTORS_PATH.read_text())


def verified():
    return [v for v in load() if v.get("verified")]


def must_reject_signatures():
    """Wrong and decoy signatures of the unverified notes: none may match a verified vector."""
    out = []
    for v in load():
        if v.get("verified"):
            continue
        out += [v["signature"]] if "signature" in v else []
        out += v.get("signatures", [])
    return out
