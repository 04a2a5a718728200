"""Migration 0003 gives every existing realm Keycloak 26's built-in flows and required actions as
data, as a new realm gets them (decision 0025)."""
import pytest

from realms.signin.flows import BUILTIN_REQUIRED_ACTIONS
from tests.realms.test_federation_link_migration import _migrate, back_to_latest  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_existing_realms_get_the_built_in_flows_and_required_actions():
    old = _migrate([("realms", "0002_component_user_federation_link")])
    Realm = old.get_model("realms", "Realm")
    acme = Realm.objects.create(name="acme")
    master = Realm.objects.filter(name="master").first() or Realm.objects.create(name="master")
    new = _migrate([("realms", "0003_authentication_flows")])
    Flow = new.get_model("realms", "AuthenticationFlow")
    Execution = new.get_model("realms", "AuthenticationExecution")
    aliases = set(Flow.objects.filter(realm_id=acme.pk, top_level=True).values_list("alias", flat=True))
    assert aliases == {"browser", "direct grant", "registration", "reset credentials", "clients",
                       "first broker login", "saml ecp", "docker auth"}
    assert Flow.objects.filter(realm_id=acme.pk, alias="Organization").exists()
    assert not Flow.objects.filter(realm_id=master.pk, alias="Organization").exists()
    otp = Execution.objects.get(realm_id=acme.pk, flow__alias="Browser - Conditional 2FA",
                                authenticator="auth-otp-form")
    assert (otp.requirement, otp.priority) == ("ALTERNATIVE", 30)
    review = Execution.objects.get(realm_id=acme.pk, authenticator="idp-review-profile")
    assert review.authenticator_config.config == {"update.profile.on.first.login": "missing"}
    actions = new.get_model("realms", "RequiredActionProvider").objects.filter(realm_id=acme.pk)
    assert [a.alias for a in actions.order_by("priority")] == [a for a, _, _ in BUILTIN_REQUIRED_ACTIONS]
