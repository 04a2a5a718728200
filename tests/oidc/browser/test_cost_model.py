"""The cost model (docs/cost-model.md) of the authorization endpoint answered from the SSO cookie:
a browser signed in already gets a code without a page, for a client it used before or for
another, once the realm's configuration is cached, held exactly."""
from django.test import Client as HttpClient

from oidc.codes import s256_challenge
from tests.conftest import assert_costs
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_otp import action_of
from tests.realms.test_signin import redirect_query

AUTH = "/realms/acme/protocol/openid-connect/auth"

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The client session written again (one upsert: redirect URI, scope, idle timer, notes), the
    # code inserted; the SSO session from the cache once (the flow's cookie step: the endpoint
    # reads it only for max_age or kc_action), the client session's copy dropped.
    "authorize_with_sso_same_client": (2, 2),
    # The client session inserted (the same upsert), the code inserted; the SSO session once.
    "authorize_with_sso_another_client": (2, 1),
}


def _params(client_id, redirect_uri):
    return {"client_id": client_id, "redirect_uri": redirect_uri, "response_type": "code", "scope": "openid",
            "state": "st"}


WEB_APP = _params("web-app", "https://app.example/cb")
SPA = {**_params("spa", "https://spa.example/cb"), "code_challenge": s256_challenge("v" * 43),
       "code_challenge_method": "S256"}


def _signed_in_browser():
    """A browser signed in through web-app's login form (its SSO cookie set), and its SSO session
    in the shared cache (the sign-in writes it to the database only; the code exchange, or this
    first answer from the cookie, caches it)."""
    browser = HttpClient()
    page = browser.get(AUTH, WEB_APP)
    assert "code" in redirect_query(browser.post(action_of(page), {"username": "bob", "password": PASSWORD}))
    assert "code" in redirect_query(browser.get(AUTH, WEB_APP))
    return browser


def test_queries_and_cache_calls_per_request_type(realm, client_app, public_app, user_with_password, measure):
    first = _signed_in_browser()  # caches the realm's configuration and both clients'
    assert "code" in redirect_query(first.get(AUTH, SPA))
    browser = _signed_in_browser()
    found = {}
    with measure() as found["authorize_with_sso_same_client"]:
        response = browser.get(AUTH, WEB_APP)
    assert "code" in redirect_query(response)
    with measure() as found["authorize_with_sso_another_client"]:
        response = browser.get(AUTH, SPA)
    assert "code" in redirect_query(response)
    assert_costs(found, EXPECTED)
