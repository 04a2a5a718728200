"""The realm's client registration policies, each letting a request through and refusing one with
Keycloak's 403 ``insufficient_scope`` "Policy '<name>' rejected request to client-registration
service. Details: ...", for anonymous registrations (no token) and authenticated ones (an
initial access token or an admin's bearer token)."""
import pytest

from realms.models import Client, Component, Event
from realms.representation.components import REGISTRATION_POLICY

from .conftest import OIDC, call, initial_token, policy, trust_localhost

pytestmark = pytest.mark.django_db
REDIRECT = "https://localhost/cb"


def refused(resp, name, details):
    assert resp.status_code == 403, resp.content
    assert resp.json() == {"error": "insufficient_scope", "error_description":
                           f"Policy '{name}' rejected request to client-registration service. Details: {details}"}
    return True


def test_anonymous_registration_is_refused_where_no_policy_allows_it(acme):
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]})
    assert refused(resp, "Trusted Hosts", "Host not trusted.")
    event = Event.objects.get(realm=acme, type="CLIENT_REGISTER_ERROR")
    assert event.error == "not_allowed" and event.details["client_registration_policy"] == "Trusted Hosts"


def test_anonymous_registration_from_a_trusted_host_gets_the_anonymous_defaults(acme):
    trust_localhost(acme)
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "client_name": "anon"})
    assert resp.status_code == 201, resp.content
    client = Client.objects.get(realm=acme, client_id=resp.json()["client_id"])
    # Consent Required and Full Scope Disabled change the new client
    assert client.consent_required and not client.full_scope_allowed
    # Allowed Protocol Mapper Types removes built-in mappers of other types (none here)
    assert set(client.protocol_mappers.values_list("protocol_mapper", flat=True)) <= set(
        policy(acme, "allowed-protocol-mappers").config["allowed-protocol-mapper-types"])
    out = resp.json()
    # an anonymous client's later updates are held to the anonymous policies
    resp = call("put", acme, "default", {"clientId": out["client_id"], "consentRequired": False},
                bearer=out["registration_access_token"], client_id=out["client_id"])
    assert refused(resp, "Consent Required", "Not permitted to update consentRequired to false")
    resp = call("put", acme, "default", {"clientId": out["client_id"], "fullScopeAllowed": True},
                bearer=out["registration_access_token"], client_id=out["client_id"])
    assert refused(resp, "Full Scope Disabled", "Not permitted to enable fullScopeAllowed")
    # what keeps both settings passes, and hands out the next token
    resp = call("put", acme, "default", {"clientId": out["client_id"], "consentRequired": True,
                                         "fullScopeAllowed": False, "description": "kept"},
                bearer=out["registration_access_token"], client_id=out["client_id"])
    assert resp.status_code == 200, resp.content
    assert resp.json()["description"] == "kept" and resp.json()["consentRequired"] is True


def test_trusted_hosts_client_uris(acme):
    trust_localhost(acme)
    resp = call("post", acme, OIDC, {"redirect_uris": ["https://evil.example/cb"]})
    assert refused(resp, "Trusted Hosts", "URI doesn't match any trusted host or trusted domain")
    resp = call("post", acme, "default", {"clientId": "c", "rootUrl": "https://evil.example"})
    assert refused(resp, "Trusted Hosts", "URL doesn't match any trusted host or trusted domain")
    p = trust_localhost(acme)
    p.config["trusted-hosts"].append("*.example.org")
    p.save()
    assert call("post", acme, OIDC, {"redirect_uris": ["https://app.example.org/cb"]}).status_code == 201
    p.config["client-uris-must-match"] = ["false"]
    p.save()
    assert call("post", acme, OIDC, {"redirect_uris": ["https://evil.example/cb"]}).status_code == 201


def test_trusted_hosts_by_address_and_a_caller_elsewhere(acme):
    p = policy(acme, "trusted-hosts")
    p.config = {**p.config, "trusted-hosts": ["127.0.0.1"], "client-uris-must-match": ["false"]}
    p.save()
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}).status_code == 201
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, REMOTE_ADDR="10.1.2.3")  # private: http allowed
    assert refused(resp, "Trusted Hosts", "Host not trusted.")


def test_max_clients(acme):
    trust_localhost(acme)
    p = policy(acme, "max-clients")
    p.config = {"max-clients": [str(Client.objects.filter(realm=acme).count() + 1)]}
    p.save()
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}).status_code == 201
    limit = p.config["max-clients"][0]
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]})
    assert refused(resp, "Max Clients Limit", f"It's allowed to have max {limit} clients per realm")


def test_allowed_protocol_mappers(admin, acme):
    mapper = {"name": "n", "protocol": "openid-connect", "protocolMapper": "oidc-hardcoded-claim-mapper",
              "config": {"claim.name": "x", "claim.value": "y"}}
    resp = call("post", acme, "default", {"clientId": "m1", "protocolMappers": [mapper]},
                bearer=initial_token(admin, acme))
    assert refused(resp, "Allowed Protocol Mapper Types", "ProtocolMapper type not allowed")
    allowed = {**mapper, "protocolMapper": "oidc-usermodel-property-mapper",
               "config": {"user.attribute": "email", "claim.name": "mail"}}
    resp = call("post", acme, "default", {"clientId": "m2", "protocolMappers": [allowed]},
                bearer=initial_token(admin, acme))
    assert resp.status_code == 201, resp.content
    assert [m["protocolMapper"] for m in resp.json()["protocolMappers"]] == ["oidc-usermodel-property-mapper"]


def test_allowed_client_scopes(admin, acme):
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "scope": "openid"},
                bearer=initial_token(admin, acme))
    # openid is no client scope: Keycloak's policy refuses it
    assert refused(resp, "Allowed Client Scopes", "Not permitted to use specified clientScope")
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "scope": "phone address"},
                bearer=initial_token(admin, acme))
    assert resp.status_code == 201, resp.content
    client = Client.objects.get(realm=acme, client_id=resp.json()["client_id"])
    assert {"phone", "address"} <= set(client.scope_links.filter(default=False).values_list(
        "client_scope__name", flat=True))
    p = policy(acme, "allowed-client-templates", "authenticated")
    p.config = {"allow-default-scopes": ["false"], "allowed-client-scopes": ["phone"]}
    p.save()
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "scope": "address"},
                bearer=initial_token(admin, acme))
    assert refused(resp, "Allowed Client Scopes", "Not permitted to use specified clientScope")
    assert call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "scope": "phone"},
                bearer=initial_token(admin, acme)).status_code == 201


def test_authenticated_policies_apply_to_token_holders_only(admin, acme):
    # The anonymous Trusted Hosts policy does not apply to an initial access token's registration.
    assert call("post", acme, OIDC, {"redirect_uris": ["https://anywhere.example/cb"]},
                bearer=initial_token(admin, acme)).status_code == 201
    Component.objects.create(realm=acme, name="Strict", provider_id="trusted-hosts", parent_id=acme.pk,
                             provider_type=REGISTRATION_POLICY, sub_type="authenticated",
                             config={"trusted-hosts": ["192.0.2.1"]})
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=initial_token(admin, acme))
    assert refused(resp, "Strict", "Host not trusted.")


def test_a_policy_of_an_unknown_provider_refuses(admin, acme):
    Component.objects.create(realm=acme, name="Custom", provider_id="my-spi", parent_id=acme.pk,
                             provider_type=REGISTRATION_POLICY, sub_type="authenticated", config={})
    resp = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=initial_token(admin, acme))
    assert refused(resp, "Custom", "Policy of type 'my-spi' not found")


def test_policies_guard_view_and_delete(admin, acme):
    out = call("post", acme, OIDC, {"redirect_uris": [REDIRECT]}, bearer=initial_token(admin, acme)).json()
    Component.objects.create(realm=acme, name="Hosts", provider_id="trusted-hosts", parent_id=acme.pk,
                             provider_type=REGISTRATION_POLICY, sub_type="authenticated",
                             config={"trusted-hosts": ["192.0.2.1"]})
    rat = out["registration_access_token"]
    assert refused(call("get", acme, OIDC, bearer=rat, client_id=out["client_id"]), "Hosts", "Host not trusted.")
    assert refused(call("delete", acme, OIDC, bearer=rat, client_id=out["client_id"]), "Hosts", "Host not trusted.")
    assert Client.objects.filter(realm=acme, client_id=out["client_id"]).exists()


def test_allowed_client_scopes_on_update_keeps_what_the_client_had(admin, acme):
    out = call("post", acme, OIDC, {"redirect_uris": [REDIRECT], "scope": "phone"},
               bearer=initial_token(admin, acme)).json()
    p = policy(acme, "allowed-client-templates", "authenticated")
    p.config = {"allow-default-scopes": ["false"]}
    p.save()
    rat = out["registration_access_token"]
    kept = call("put", acme, OIDC, {**out, "scope": "phone"}, bearer=rat, client_id=out["client_id"])
    assert kept.status_code == 200, kept.content
    resp = call("put", acme, OIDC, {**out, "scope": "phone address"}, bearer=kept.json()["registration_access_token"],
                client_id=out["client_id"])
    assert refused(resp, "Allowed Client Scopes", "Not permitted to use specified clientScope")


@pytest.mark.parametrize("field, value", [("redirectUris", "https://localhost/cb"),
                                          ("defaultClientScopes", 3), ("protocolMappers", 7)])
def test_wrong_types_are_invalid_metadata_before_any_policy_reads_them(acme, field, value):
    trust_localhost(acme)
    resp = call("post", acme, "default", {"clientId": "typed", field: value})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_client_metadata"


def test_trusted_hosts_refuses_what_is_no_url(acme):
    trust_localhost(acme)
    assert refused(call("post", acme, "default", {"clientId": "c", "rootUrl": 5}), "Trusted Hosts", "URL is malformed")
    assert refused(call("post", acme, "default", {"clientId": "c", "redirectUris": ["no-host"]}), "Trusted Hosts",
                   "URI is malformed")
