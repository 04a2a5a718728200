"""Each condition selects the clients (and events) Keycloak's does, with is-negative-logic; a
policy applies when no condition says no and one says yes. The probe: a profile whose
pkce-enforcer refuses a code redeemed without a verifier, so a refusal shows the policy applied."""
import pytest

from oidc import client_policies
from oidc.client_policies.events import TOKEN_REQUEST
from oidc.client_policies.executors import CodeVerifierMissing, InvalidRegistration
from oidc.errors import InvalidClient
from oidc.realm_cache import get_realm
from realms.models import Client, ClientScope, ClientScopeLink
from tests.oidc.browser.conftest import make_client

from .conftest import put_policy

pytestmark = pytest.mark.django_db
PROBE = {"profiles": [{"name": "probe", "executors": [{"executor": "pkce-enforcer", "configuration": {}}]}]}
CODE = {"grant_type": "authorization_code"}


def applies(realm, client_id, conditions, params=CODE, event=TOKEN_REQUEST):
    put_policy(realm, "probe", conditions=conditions, profiles=PROBE)
    realm_config = get_realm(realm.name)
    try:
        client_policies.enforce(event, realm_config, realm_config.client(client_id), params=params,
                                exchange=object())  # what a token request has
    except CodeVerifierMissing:
        return True
    return False


@pytest.fixture
def clients(realm):
    web = make_client(realm, "web", redirect_uris=["https://a.example/cb"], attributes={"tier": "gold"})
    make_client(realm, "spa", public_client=True, redirect_uris=["https://a.example/cb"])
    web.roles.create(realm=realm, name="fapi")
    return web


def test_any_client_and_negative_logic(realm, clients):
    assert applies(realm, "spa", [{"condition": "any-client"}])
    assert not applies(realm, "spa", [{"condition": "any-client", "configuration": {"is-negative-logic": True}}])


def test_client_access_type(realm, clients):
    condition = [{"condition": "client-access-type", "configuration": {"type": ["public"]}}]
    assert applies(realm, "spa", condition) and not applies(realm, "web", condition)
    assert not applies(realm, "web", [{"condition": "client-access-type"}])  # no type: none matches, as Keycloak


def test_client_roles(realm, clients):
    condition = [{"condition": "client-roles", "configuration": {"roles": ["fapi"]}}]
    assert applies(realm, "web", condition) and not applies(realm, "spa", condition)


def test_client_attributes(realm, clients):
    gold = [{"condition": "client-attributes", "configuration": {"attributes": '[{"key": "tier", "value": "gold"}]'}}]
    assert applies(realm, "web", gold) and not applies(realm, "spa", gold)
    assert not applies(realm, "web", [{"condition": "client-attributes", "configuration": {"attributes": "[]"}}])


def test_grant_type(realm, clients):
    """Keycloak's grant-type condition: the grant of the event (client credentials here; the
    authorization request's flow); it abstains at the code's own token request."""
    def confidential_only(grant_types, params, key="grantTypes"):
        put_policy(realm, "cc", conditions=[{"condition": "grant-type", "configuration": {key: grant_types}}],
                   profiles={"profiles": [{"name": "cc", "executors": [{"executor": "confidential-client"}]}]})
        realm_config = get_realm(realm.name)
        try:
            client_policies.enforce(TOKEN_REQUEST, realm_config, realm_config.client("spa"), params=params,
                                    exchange=object())
        except InvalidClient:
            return True
        return False

    assert confidential_only(["client_credentials"], {"grant_type": "client_credentials"})
    assert not confidential_only(["password"], {"grant_type": "client_credentials"})
    assert confidential_only(["client_credentials"], {"grant_type": "client_credentials"}, key="grant_types")  # alias
    assert not applies(realm, "web", [{"condition": "grant-type", "configuration": {"grantTypes": [
        "authorization_code"]}}])  # abstains at the code's token request


def test_client_scopes(realm, clients):
    scope = ClientScope.objects.create(realm=realm, name="payments", protocol="openid-connect")
    ClientScopeLink.objects.create(client=Client.objects.get(realm=realm, client_id="web"), client_scope=scope,
                                   default=False)
    optional = [{"condition": "client-scopes", "configuration": {"scopes": ["payments"], "type": "Optional"}}]
    assert applies(realm, "web", optional, params={**CODE, "scope": "openid payments"})
    assert not applies(realm, "web", optional, params={**CODE, "scope": "openid"})
    default = [{"condition": "client-scopes", "configuration": {"scopes": ["payments"]}}]
    assert not applies(realm, "web", default)  # an optional scope of web's, not a default one
    any_type = [{"condition": "client-scopes", "configuration": {"scopes": ["payments"], "type": "Any"}}]
    assert applies(realm, "web", any_type, params={**CODE, "scope": "payments"})


def test_abstaining_conditions_do_not_apply_a_policy(realm, clients):
    # client-updater-context has no say at a token request: alone, the policy does not apply.
    assert not applies(realm, "web", [{"condition": "client-updater-context"}])
    # With one that says yes, it does; with one that says no, it does not.
    assert applies(realm, "web", [{"condition": "client-updater-context"}, {"condition": "any-client"}])
    assert not applies(realm, "web", [{"condition": "any-client"}, {"condition": "client-roles",
                                                                   "configuration": {"roles": ["none"]}}])


def test_client_updater_context_at_registration(realm):
    put_policy(realm, "strict", conditions=[{"condition": "client-updater-context",
                                             "configuration": {"update-client-source": ["ByAnonymous"]}}],
               profiles={"profiles": [{"name": "strict", "executors": [{"executor": "consent-required"}]}]})
    client = Client(realm=realm, client_id="new", protocol="openid-connect")
    with pytest.raises(InvalidRegistration, match="Client is required to enable consentRequired"):
        client_policies.on_client_write(client_policies.REGISTER, realm, client, updater="ByAnonymous")
    client_policies.on_client_write(client_policies.REGISTER, realm, client, updater="ByAuthenticatedUser")


def test_disabled_policy_does_nothing(realm, clients):
    put_policy(realm, "probe", conditions=[{"condition": "any-client"}], profiles=PROBE)
    realm.attributes = {**realm.attributes, "client-policies.policies":
                        realm.attributes["client-policies.policies"].replace('"enabled":true', '"enabled":false')}
    realm.save()
    realm_config = get_realm(realm.name)
    client_policies.enforce(TOKEN_REQUEST, realm_config, realm_config.client("web"), params=CODE)


def test_policies_compiled_once_per_realm_configuration(realm, clients, monkeypatch):
    calls = []
    original = client_policies.compile_policies
    monkeypatch.setattr(client_policies, "compile_policies", lambda attrs: calls.append(1) or original(attrs))
    realm_config = get_realm(realm.name)
    for _ in range(3):
        client_policies.enforce(TOKEN_REQUEST, realm_config, realm_config.client("web"), params=CODE)
    assert calls == [1]  # no policy: compiled to nothing once, then a lookup per request


def test_a_request_under_a_policy_reads_nothing_from_the_database(realm, clients, django_assert_num_queries):
    put_policy(realm, "probe", conditions=[{"condition": "client-roles", "configuration": {"roles": ["fapi"]}},
                                           {"condition": "client-access-type", "configuration": {"type": ["confidential"]}}],
               profiles={"profiles": [{"name": "probe", "executors": [{"executor": "confidential-client"}]}]})
    realm_config = get_realm(realm.name)
    web = realm_config.client("web")
    client_policies.enforce(TOKEN_REQUEST, realm_config, web, params=CODE, exchange=object())  # warms the caches
    with django_assert_num_queries(0):
        client_policies.enforce(TOKEN_REQUEST, realm_config, web, params=CODE, exchange=object())
