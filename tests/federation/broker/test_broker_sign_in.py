"""What the broker does around a brokered sign-in, end to end against oidc-provider: the neutral
mappers (hardcoded role, group and attribute; the username template) on the first sign-in and as
the sync mode says on later ones; sync mode FORCE keeping the e-mail and names in step; the
provider's post broker login flow (a one-time code after the provider); stored tokens read back
through ``/broker/{alias}/token`` by a holder of ``broker`` ``read-token``."""
import pytest
import requests

from realms.data import realm_cache
from realms.models import (
    AuthenticationExecution,
    AuthenticationFlow,
    FederatedIdentity,
    Group,
    IdentityProviderMapper,
    Role,
    User,
)
from tests.realms.test_first_broker_login_e2e import submit
from tests.realms.test_otp import add_otp, app_totp

from .conftest import ALIAS
from .test_end_to_end import app, base, live_idp, new_browser, realm, sign_in, tokens  # noqa: F401


def mapper(idp, name, mapper_type, **config):
    IdentityProviderMapper.objects.create(realm=idp.realm, identity_provider=idp, name=name, mapper_type=mapper_type,
                                          config=config)
    realm_cache.clear()


def test_neutral_mappers_on_the_first_sign_in_and_as_the_sync_mode_says(live_idp, base, realm, upstream):  # noqa: F811
    Role.objects.create(realm=realm, name="partner")
    Group.objects.create(realm=realm, name="partners")
    idp = live_idp(syncMode="IMPORT")
    mapper(idp, "role", "oidc-hardcoded-role-idp-mapper", role="partner")
    mapper(idp, "group", "oidc-hardcoded-group-idp-mapper", group="/partners", syncMode="FORCE")
    mapper(idp, "attribute", "hardcoded-attribute-idp-mapper", attribute="source", **{"attribute.value": "partner"})
    mapper(idp, "username", "oidc-username-idp-mapper", template="${ALIAS}.${CLAIM.preferred_username | uppercase}")
    assert tokens(base, sign_in(new_browser(), base, upstream, login="lin"))["access_token"]
    user = User.objects.get(realm=realm)
    assert user.username == "upstream.lin"  # the template's local name (usernames are kept lower-case)
    assert FederatedIdentity.objects.get(user=user).user_name == "lin"  # the provider's own name on the link
    assert set(user.roles.values_list("name", flat=True)) >= {"partner"}
    assert list(user.groups.values_list("name", flat=True)) == ["partners"]
    assert user.attributes["source"] == ["partner"]
    # Taken away here; the next sign-in gives back only what runs under FORCE (the group's own mode).
    user.roles.remove(Role.objects.get(realm=realm, name="partner"))
    user.groups.clear()
    assert tokens(base, sign_in(new_browser(), base, upstream, login="lin"))["access_token"]
    assert not user.roles.filter(name="partner").exists() and user.groups.filter(name="partners").exists()


def test_sync_mode_force_keeps_the_profile_in_step(live_idp, base, realm, upstream):  # noqa: F811
    live_idp(syncMode="FORCE", fields={"trust_email": True})
    assert tokens(base, sign_in(new_browser(), base, upstream, login="max"))["access_token"]
    user = User.objects.get(realm=realm)
    user.first_name, user.email = "Changed", "changed@example.org"
    user.save()
    assert tokens(base, sign_in(new_browser(), base, upstream, login="max"))["access_token"]
    user.refresh_from_db()
    assert (user.first_name, user.email, user.email_verified) == ("Max", "max@upstream.example", True)


def test_sync_mode_import_leaves_the_profile_alone(live_idp, base, realm, upstream):  # noqa: F811
    live_idp(syncMode="IMPORT")
    assert tokens(base, sign_in(new_browser(), base, upstream, login="ida"))["access_token"]
    User.objects.filter(realm=realm).update(first_name="Changed")
    assert tokens(base, sign_in(new_browser(), base, upstream, login="ida"))["access_token"]
    assert User.objects.get(realm=realm).first_name == "Changed"


def test_the_post_broker_login_flow_asks_for_a_one_time_code(live_idp, base, realm, upstream):  # noqa: F811
    flow = AuthenticationFlow.objects.create(realm=realm, alias="after broker", provider_id="basic-flow",
                                             top_level=True)
    AuthenticationExecution.objects.create(realm=realm, flow=flow, authenticator="auth-otp-form",
                                           requirement="REQUIRED", priority=0)
    live_idp()
    assert tokens(base, sign_in(new_browser(), base, upstream, login="otto"))["access_token"]  # linked, no flow yet
    add_otp(User.objects.get(realm=realm))
    idp = FederatedIdentity.objects.get().identity_provider
    idp.post_broker_login_flow_alias = "after broker"
    idp.save()
    realm_cache.clear()
    browser = new_browser()
    page = sign_in(browser, base, upstream, login="otto")
    assert page.status_code == 200 and 'name="otp"' in page.text  # the provider alone is not enough
    wrong = submit(browser, page, {"otp": "000000"})
    assert wrong.status_code == 200 and 'name="otp"' in wrong.text
    assert tokens(base, submit(browser, wrong, {"otp": app_totp().now()}))["access_token"]


@pytest.mark.parametrize("stored", [True, False])
def test_stored_tokens_for_a_holder_of_read_token(live_idp, base, realm, upstream, stored):  # noqa: F811
    live_idp(fields={"store_token": stored, "add_read_token_role_on_create": True})
    issued = tokens(base, sign_in(new_browser(), base, upstream, login="tok"))
    url = f"{base}/realms/acme/broker/{ALIAS}/token"
    answer = requests.get(url, headers={"Authorization": f"Bearer {issued['access_token']}"}, timeout=10)
    if stored:
        assert answer.status_code == 200 and answer.json()["access_token"] and answer.json()["id_token"]
        assert FederatedIdentity.objects.get().token.startswith("gAAAA")  # sealed at rest
    else:
        assert answer.status_code == 400 and "does not support" in answer.json()["errorMessage"]
    assert requests.get(url, timeout=10).status_code == 401


def test_stored_tokens_refused_without_read_token(live_idp, base, realm, upstream):  # noqa: F811
    live_idp(fields={"store_token": True})
    issued = tokens(base, sign_in(new_browser(), base, upstream, login="nora"))
    answer = requests.get(f"{base}/realms/acme/broker/{ALIAS}/token",
                          headers={"Authorization": f"Bearer {issued['access_token']}"}, timeout=10)
    assert answer.status_code == 403 and "not authorized" in answer.json()["error_description"]
