"""Step-up authentication (issue 12, deliverable 7): acr_values and the claims parameter's acr
mapped to levels, the flow's level-of-authentication conditions, the acr of the tokens, and
max_age / prompt=login forcing every level again."""
import base64
import json
import time

import pytest
import time_machine

from realms.models import UserSession
from realms.representation.services import create_realm
from realms.signin import flows, loa
from realms.signin.flows import ALTERNATIVE, CONDITIONAL, REQUIRED, Flow, step, sub_flow
from realms.sso.auth_sessions import AuthSession
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.realms.test_otp import action_of, add_otp, app_totp
from tests.realms.test_signin import AUTH, PARAMS, TOKEN, redirect_query

pytestmark = pytest.mark.django_db


def level(n, *steps, max_age=36000):
    return sub_flow(f"Level {n}", CONDITIONAL,
                    step("conditional-level-of-authentication", REQUIRED,
                         **{"loa-condition-level": str(n), "loa-max-age": str(max_age)}),
                    *steps)


# Keycloak's "Browser - step-up" shape: the cookie, then one conditional sub-flow per level.
STEP_UP = Flow("browser", (
    step("auth-cookie", ALTERNATIVE),
    sub_flow("forms", ALTERNATIVE,
        level(1, step("auth-username-password-form", REQUIRED)),
        level(2, step("auth-otp-form", REQUIRED), max_age=300),
    ),
))


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    yield


@pytest.fixture
def realm(db):
    realm = create_realm("acme")
    realm.attributes = {**realm.attributes, "acr.loa.map": json.dumps({"silver": 1, "gold": 2})}
    # The tests give the same code more than once within its period.
    realm.otp_policy = {**realm.otp_policy, "otpPolicyCodeReusable": True}
    realm.save()
    return realm


@pytest.fixture
def web_app(realm):
    return make_client(realm, "web-app", redirect_uris=["https://app.example/cb"])


@pytest.fixture
def bob(realm):
    user = create_user(realm, "bob", password=PASSWORD)
    add_otp(user)
    return user


@pytest.fixture
def step_up(monkeypatch):
    monkeypatch.setattr(flows, "_flow_loaders", [])
    flows.register_flow_loader(lambda realm, ref: STEP_UP if ref == "browser" else None)


def authorize(http, **extra):
    return http.get(AUTH, {**PARAMS, **extra})


def is_password_page(page):
    return page.status_code == 200 and 'name="password"' in page.content.decode()


def is_otp_page(page):
    return page.status_code == 200 and 'id="kc-otp-login-form"' in page.content.decode()


def password(http, page):
    return http.post(action_of(page), {"username": "bob", "password": PASSWORD})


def otp(http, page):
    return http.post(action_of(page), {"otp": app_totp().now()})


def id_token_acr(http, response):
    """The acr of the ID and access tokens the code in ``response`` is exchanged for."""
    code = redirect_query(response)["code"][0]
    tokens = http.post(TOKEN, {"grant_type": "authorization_code", "code": code, "client_id": "web-app",
                               "client_secret": "secret-of-web-app", "redirect_uri": PARAMS["redirect_uri"]}).json()

    def claims(jwt):
        payload = jwt.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))

    id_acr, access_acr = claims(tokens["id_token"]).get("acr"), claims(tokens["access_token"]).get("acr")
    assert id_acr == access_acr
    return id_acr


def sign_in_level_1(http):
    page = authorize(http)
    assert is_password_page(page)  # without acr_values, the flow's lowest level: the password alone
    done = password(http, page)
    assert id_token_acr(http, done) == "1"


def test_level_2_forces_the_second_factor_on_a_level_1_session(client, bob, web_app, step_up):
    sign_in_level_1(client)
    page = authorize(client, acr_values="2")
    assert is_otp_page(page)  # the user is known from the SSO session: no password form
    done = otp(client, page)
    assert id_token_acr(client, done) == "2"
    session = UserSession.objects.get(user=bob)
    assert set(session.notes["LoA_MAP"]) == {"1", "2"}
    # Level 2 is now remembered for its loa-max-age: asked again, no form.
    assert id_token_acr(client, authorize(client, acr_values="2")) == "2"


def test_level_1_request_answers_from_the_sso_session(client, bob, web_app, step_up):
    sign_in_level_1(client)
    answer = authorize(client, acr_values="1")
    assert id_token_acr(client, answer) == "1"  # the level reached, not "0" for the cookie


def test_acr_by_name_is_mapped_and_answered_by_name(client, bob, web_app, step_up):
    sign_in_level_1(client)
    page = authorize(client, acr_values="gold")
    assert is_otp_page(page)
    assert id_token_acr(client, otp(client, page)) == "gold"
    # The requested name of the highest level reached (Keycloak's mapLoaToAcr).
    assert id_token_acr(client, authorize(client, acr_values="silver")) == "silver"
    assert id_token_acr(client, authorize(client, acr_values="silver gold")) == "gold"
    assert id_token_acr(client, authorize(client)) == "2"  # nothing asked: the level reached


def test_client_mapping_overrides_the_realm_one(client, bob, web_app, step_up):
    web_app.attributes = {**web_app.attributes, "acr.loa.map": json.dumps({"gold": 1})}
    web_app.save()
    sign_in_level_1(client)
    assert id_token_acr(client, authorize(client, acr_values="gold")) == "gold"


def test_client_default_acr_values(client, bob, web_app, step_up):
    web_app.attributes = {**web_app.attributes, "default.acr.values": "gold"}
    web_app.save()
    page = authorize(client)
    assert is_password_page(page)
    page = password(client, page)
    assert is_otp_page(page)
    assert id_token_acr(client, otp(client, page)) == "gold"


def test_claims_parameter_requests_a_level(client, bob, web_app, step_up):
    sign_in_level_1(client)
    claims = json.dumps({"id_token": {"acr": {"essential": True, "values": ["gold"]}}})
    page = authorize(client, claims=claims)
    assert is_otp_page(page)
    assert id_token_acr(client, otp(client, page)) == "gold"


def test_essential_acr_that_is_not_met_is_refused(client, bob, web_app):
    # The built-in browser flow has no levels: the password reaches level 1 only.
    claims = json.dumps({"id_token": {"acr": {"essential": True, "values": ["gold"]}}})
    page = authorize(client, claims=claims)
    answer = client.post(action_of(page), {"username": "bob", "password": PASSWORD})
    if is_otp_page(answer):
        answer = otp(client, answer)
    assert redirect_query(answer)["error"] == ["unmet_authentication_requirements"]
    # Not essential: the client gets the level reached and decides.
    page = authorize(client, acr_values="gold", prompt="login")
    answer = client.post(action_of(page), {"username": "bob", "password": PASSWORD})
    if is_otp_page(answer):
        answer = otp(client, answer)
    assert id_token_acr(client, answer) == "1"


def test_essential_acr_without_a_level_is_invalid(client, bob, web_app, step_up):
    claims = json.dumps({"id_token": {"acr": {"essential": True, "values": ["platinum"]}}})
    query = redirect_query(authorize(client, claims=claims))
    assert query["error"] == ["invalid_request"] and query["error_description"] == ["Invalid parameter: claims"]
    # Not essential, an unknown acr is the lowest level.
    assert is_password_page(authorize(client, acr_values="platinum"))


def test_max_age_zero_forces_the_password_again(client, bob, web_app, step_up):
    sign_in_level_1(client)
    page = authorize(client, max_age="0")
    assert is_password_page(page)
    assert id_token_acr(client, password(client, page)) == "1"


@pytest.mark.parametrize("force", [{"max_age": "0"}, {"prompt": "login"}])
def test_reauthentication_repeats_the_steps_after_the_password(client, bob, web_app, step_up, force):
    sign_in_level_1(client)
    assert id_token_acr(client, otp(client, authorize(client, acr_values="2"))) == "2"
    page = authorize(client, acr_values="2", **force)
    assert is_password_page(page)
    page = password(client, page)
    assert is_otp_page(page)  # level 2 from the SSO session does not count either
    assert id_token_acr(client, otp(client, page)) == "2"


def test_discovery_lists_the_realm_acr_names(client, realm):
    document = client.get("/realms/acme/.well-known/openid-configuration").json()
    assert document["acr_values_supported"] == ["0", "1", "silver", "gold"]


def test_client_minimum_acr_value(client, bob, web_app, step_up):
    web_app.attributes = {**web_app.attributes, "minimum.acr.value": "gold"}
    web_app.save()
    sign_in_level_1_page = authorize(client, acr_values="silver")
    assert is_password_page(sign_in_level_1_page)
    page = password(client, sign_in_level_1_page)
    assert is_otp_page(page)  # silver is below the client's minimum: gold is asked instead
    assert id_token_acr(client, otp(client, page)) == "gold"


def test_a_level_past_its_max_age_is_asked_again(client, bob, web_app, step_up):
    sign_in_level_1(client)
    assert id_token_acr(client, otp(client, authorize(client, acr_values="2"))) == "2"
    with time_machine.travel(time.time() + 301):  # level 2's loa-max-age is 300 s, level 1's 10 hours
        page = authorize(client, acr_values="2")
        assert is_otp_page(page)
        assert id_token_acr(client, otp(client, page)) == "2"
        # Without a request, the session answers with its level still in time.
        assert id_token_acr(client, authorize(client)) == "2"


def test_highest_level_counts_up_to_the_first_expired_one():
    auth_session = AuthSession(root_id="r", tab_id="t", realm_id="x", client_pk="c", protocol="p", client_data={})
    assert loa.highest_reached(auth_session, {1: 60, 2: 60}) == loa.NO_LOA  # never reached a level
    now = int(time.time())
    auth_session.notes[loa.LOA_MAP] = {"1": now - 120, "2": now}
    assert loa.highest_reached(auth_session, {1: 60, 2: 60}) == loa.MINIMUM_LOA  # level 1 expired first
    assert loa.highest_reached(auth_session, {1: 600, 2: 60}) == 2
    assert loa.highest_reached(auth_session, {1: 600}) == 1  # no condition for level 2: no max age


def test_requested_level_is_the_lowest_asked():
    assert loa.requested_level(["gold", "silver"], {"silver": 1, "gold": 2}, essential=False) == 1
    assert loa.requested_level(["3", "platinum"], {}, essential=False) == loa.MINIMUM_LOA
    with pytest.raises(loa.UnknownAcr):
        loa.requested_level(["platinum"], {}, essential=True)
    assert loa.requested_level([], {}, essential=False) is None


def test_refreshed_tokens_keep_the_acr_reached(client, bob, web_app, step_up):
    sign_in_level_1(client)
    done = otp(client, authorize(client, acr_values="gold"))
    code = redirect_query(done)["code"][0]
    secret = {"client_id": "web-app", "client_secret": "secret-of-web-app"}
    tokens = client.post(TOKEN, {"grant_type": "authorization_code", "code": code,
                                 "redirect_uri": PARAMS["redirect_uri"], **secret}).json()
    refreshed = client.post(TOKEN, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                    **secret}).json()
    payload = refreshed["id_token"].split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["acr"] == "gold"
