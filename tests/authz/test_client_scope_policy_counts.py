"""Authorization Services' client-scope policy names scopes by id or by name; the realm's
{id or name: name} is read once per realm configuration (``realms.authz.policies``), not twice per
entry on every decision, and a scope renamed is followed at once."""
import pytest

from realms.authz.evaluation import Identity
from realms.authz.policies import evaluate
from realms.models import ClientScope
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.conftest import assert_costs

pytestmark = pytest.mark.django_db


def _policy(*entries):
    refs = ",".join(f'{{"id":"{ref}","required":{required}}}' for ref, required in entries)
    return {"type": "client-scope", "config": {"clientScopes": f"[{refs}]"}}


def test_a_client_scope_policy_reads_the_realms_scopes_once(fresh_caches, measure):
    realm = create_realm("scopes")
    alice = create_user(realm, "alice")
    mail = ClientScope.objects.create(realm=realm, name="mail", protocol="openid-connect")
    ClientScope.objects.create(realm=realm, name="calendar", protocol="openid-connect")
    asked = Identity(alice, "app", scopes=frozenset({"mail"}))
    assert evaluate(asked, realm, _policy(("calendar", "false"), (mail.pk, "false")))  # the names read
    found = {}
    with measure() as found["client_scope_policy"]:
        assert evaluate(asked, realm, _policy(("mail", "true")))  # by name
        assert evaluate(asked, realm, _policy((mail.pk, "true")))  # by id
        assert not evaluate(asked, realm, _policy(("calendar", "false")))
        assert not evaluate(asked, realm, _policy(("mail", "false"), ("calendar", "true")))  # required, not held
        assert not evaluate(asked, realm, _policy(("no-such-scope", "false")))
    # Nothing: each entry was looked up by id, then by name, on every decision before (11 here).
    assert_costs(found, {"client_scope_policy": (0, 0)})
    mail.name = "post"
    mail.save()
    assert not evaluate(asked, realm, _policy((mail.pk, "true")))  # the token's scope is "mail"
    assert evaluate(Identity(alice, "app", scopes=frozenset({"post"})), realm, _policy((mail.pk, "true")))
