"""The console's authentication pages (realms/admin/flows.py), driven like a browser: list a
realm's flows, copy one, set requirements as choices, add and remove steps and sub-flows,
configure a condition field by field, bind a flow to the realm and to one client, and the
realm's required actions."""
import pytest

from realms.administration import flow_admin
from realms.models import AuthenticationExecution, AuthenticationFlow, AuthenticatorConfig, Client, Event
from realms.representation.services import create_realm
from tests.realms.test_admin import console, master, read_form, submit  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

BASE = "/admin/master/console/realms"


@pytest.fixture
def acme():
    realm = create_realm("acme")
    realm.admin_events_enabled = True
    realm.save()
    return realm


def flow(realm, alias):
    return AuthenticationFlow.objects.get(realm=realm, alias=alias)


def change_url(obj):
    return f"{BASE}/{type(obj).__name__.lower()}/{obj.pk}/change/"


def rows(realm, alias):
    return [(e.authenticator or e.sub_flow.alias, e.requirement)
            for e in flow(realm, alias).executions.select_related("sub_flow")]


def test_list_copy_edit_and_bind(console, acme):  # noqa: F811
    listing = console.get(f"{BASE}/authenticationflow/?realm__id__exact={acme.pk}", follow=True)  # top-level ones
    assert listing.status_code == 200
    text = listing.content.decode()
    assert "direct grant" in text and "Browser flow" in text  # the binding it is used by

    browser = flow(acme, "browser")
    page = console.get(change_url(browser)).content.decode()
    assert 'name="executions-0-requirement"' in page and "executions-__prefix__" not in page  # no new rows
    response = submit(console, f"{BASE}/authenticationflow/{browser.pk}/copy/", "authenticationflow_form",
                      {"new_name": "strict"})
    assert response.status_code == 200 and "Copied browser to strict." in response.content.decode()
    strict = flow(acme, "strict")
    assert strict.built_in is False and flow(acme, "strict forms").top_level is False
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_type="AUTH_FLOW",
                                resource_path=f"authentication/flows/{strict.pk}").exists()

    # Requirements are choices; a new row adds a step.
    page = console.get(change_url(strict)).content.decode()
    data = read_form(page, "authenticationflow_form")
    cookie_index = _row_of(data, "auth-cookie")
    data[f"executions-{cookie_index}-requirement"] = ["DISABLED"]
    total = int(data["executions-TOTAL_FORMS"][0])
    data.update({"executions-TOTAL_FORMS": [str(total + 1)], f"executions-{total}-authenticator": ["auth-otp-form"],
                 f"executions-{total}-requirement": ["REQUIRED"], f"executions-{total}-priority": ["40"]})
    response = console.post(change_url(strict), data, follow=True)
    assert response.status_code == 200, response.content[:500]
    assert ("auth-cookie", "DISABLED") in rows(acme, "strict")
    assert ("auth-otp-form", "REQUIRED") in rows(acme, "strict")

    # A sub-flow, then bound to the realm and overriding one client's direct grant.
    response = submit(console, f"{BASE}/authenticationflow/{strict.pk}/sub-flow/", "authenticationflow_form",
                      {"alias": "step up", "type": "basic-flow"})
    assert "Added sub-flow step up" in response.content.decode()
    assert ("step up", "DISABLED") in rows(acme, "strict")
    web = Client.objects.create(realm=acme, client_id="web")
    response = submit(console, f"{BASE}/authenticationflow/{strict.pk}/bind/", "authenticationflow_form",
                      {"realm_binding": "browser_flow", "client": web.pk, "client_binding": "direct_grant"})
    assert "Bound strict." in response.content.decode()
    acme.refresh_from_db()
    web.refresh_from_db()
    assert acme.browser_flow == "strict" and web.authentication_flow_binding_overrides == {"direct_grant": strict.pk}


def test_only_the_built_in_clients_flow_binds_as_client_authentication(console, acme):  # noqa: F811
    """Client authentication is not a configurable flow here: another flow bound to it would run
    nothing, so the console refuses it with the reason and the realm keeps "clients"."""
    strict = flow_admin.copy_flow(acme, flow(acme, "browser"), "strict")
    response = submit(console, f"{BASE}/authenticationflow/{strict.pk}/bind/", "authenticationflow_form",
                      {"realm_binding": "client_authentication_flow"})
    assert "Only the built-in flow clients can be bound as the client authentication flow" in response.content.decode()
    acme.refresh_from_db()
    assert acme.client_authentication_flow == "clients"


def _row_of(data, provider):
    """The inline row index of the execution running ``provider``."""
    total = int(data["executions-TOTAL_FORMS"][0])
    return next(i for i in range(total)
                if AuthenticationExecution.objects.get(pk=data[f"executions-{i}-id"][0]).authenticator == provider)


def test_built_in_flows_cannot_be_deleted(console, acme):  # noqa: F811
    browser = flow(acme, "browser")
    response = console.post(f"{BASE}/authenticationflow/{browser.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert AuthenticationFlow.objects.filter(pk=browser.pk).exists()


def test_removing_a_sub_flow_row_removes_the_sub_flow(console, acme):  # noqa: F811
    mine = flow_admin.copy_flow(acme, flow(acme, "direct grant"), "mine")
    page = console.get(change_url(mine)).content.decode()
    data = read_form(page, "authenticationflow_form")
    otp_row = next(i for i in range(5) if f"executions-{i}-id" in data and AuthenticationExecution.objects.get(
        pk=data[f"executions-{i}-id"][0]).sub_flow_id)
    data[f"executions-{otp_row}-DELETE"] = ["on"]
    assert console.post(change_url(mine), data).status_code == 302
    assert not AuthenticationFlow.objects.filter(realm=acme, alias="mine Direct Grant - Conditional OTP").exists()


def test_a_condition_is_configured_field_by_field(console, acme):  # noqa: F811
    mine = flow_admin.create_flow(acme, "mine")
    sub, _ = flow_admin.add_sub_flow(acme, mine, "when auditor")
    condition = flow_admin.add_execution(acme, sub, "conditional-user-role")
    config = flow_admin.set_execution_config(acme, condition, "auditor", {"condUserRole": "auditor"})
    page = console.get(change_url(config)).content.decode()
    assert 'name="prop_condUserRole"' in page and 'name="prop_negate"' in page and 'name="config"' not in page
    submit(console, change_url(config), "authenticatorconfig_form", {"prop_condUserRole": "account.manage-account",
                                                                    "prop_negate": "on"})
    assert AuthenticatorConfig.objects.get(pk=config.pk).config == {"condUserRole": "account.manage-account",
                                                                    "negate": "true"}


def test_required_actions_are_listed_and_switched(console, acme):  # noqa: F811
    listing = console.get(f"{BASE}/requiredactionprovider/?realm__id__exact={acme.pk}").content.decode()
    assert "CONFIGURE_TOTP" in listing and "TERMS_AND_CONDITIONS" in listing
