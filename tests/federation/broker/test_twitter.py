"""The ``twitter`` (X) preset over OAuth 1.0a, against a loopback server that answers X's three
legs and checks every request's HMAC-SHA1 signature with Authlib's server side (an independent
RFC 5849 implementation): a request token for our callback carrying the broker's state, the
browser sent to authenticate, the verifier exchanged, verify_credentials read into the identity."""
import json
from urllib.parse import urlencode

import pytest
from authlib.oauth1.rfc5849 import signature
from authlib.oauth1.rfc5849.wrapper import OAuth1Request

from realms.brokering.providers import BrokerError

from .conftest import query_of

KEY, SECRET = "consumer-key", "consumer-secret"
TOKENS = {"req-1": "req-secret", "acc-1": "acc-secret"}


class _Client:
    def get_client_secret(self):
        return SECRET


class _Credential:
    def __init__(self, secret):
        self.secret = secret

    def get_oauth_token_secret(self):
        return self.secret


def verified(json_server, info):
    """Authlib's check of the request's signature, with the consumer secret and the token's."""
    url = json_server.base + info["path"] + (("?" + urlencode(info["query"], doseq=True)) if info["query"] else "")
    request = OAuth1Request(info["method"], url, body=info["body"] or None,
                            headers={k: v for k, v in info["headers"].items()})
    request.client = _Client()
    token = request.token
    request.credential = _Credential(TOKENS.get(token, "") if token else "")
    return request.client_id == KEY and signature.verify_hmac_sha1(request)


@pytest.fixture
def x_server(json_server, settings):
    base = json_server.base
    settings.IDP_BROKER_PRESET_URLS = {"twitter": {"https://api.twitter.com": base}}

    def request_token(info):
        if not verified(json_server, info):
            return 401, "bad signature"
        return 200, urlencode({"oauth_token": "req-1", "oauth_token_secret": "req-secret",
                               "oauth_callback_confirmed": "true"})

    def access_token(info):
        if not verified(json_server, info) or 'oauth_verifier="ver-1"' not in info["headers"]["Authorization"]:
            return 401, "refused"
        return 200, urlencode({"oauth_token": "acc-1", "oauth_token_secret": "acc-secret", "user_id": "12",
                               "screen_name": "jack"})

    def verify(info):
        if not verified(json_server, info):
            return 401, {"errors": [{"code": 32}]}
        return 200, {"id": 12, "id_str": "12", "screen_name": "jack", "name": "Jack Dorsey",
                     "email": "jack@x.example"}

    json_server.routes.update({"/oauth/request_token": request_token, "/oauth/access_token": access_token,
                               "/1.1/account/verify_credentials.json": verify})
    return json_server


def test_three_legs_signed_and_the_user_read(x_server, make_idp, trip, answer):
    idp = make_idp({"clientId": KEY, "clientSecret": SECRET}, provider_id="twitter", fields={"store_token": True})
    broker, url = trip(idp)
    assert url == f"{x_server.base}/oauth/authenticate?oauth_token=req-1"
    [leg1] = x_server.hits("/oauth/request_token")
    assert "oauth_callback" in leg1["headers"]["Authorization"] and broker.notes["oauth_token_secret"] == "req-secret"
    identity = answer(idp, broker, f"{broker.redirect_uri}?state={broker.state}&oauth_token=req-1&oauth_verifier=ver-1")
    assert (identity.id, identity.username, identity.email, identity.first_name) == ("12", "jack", "jack@x.example",
                                                                                      "Jack")
    assert json.loads(identity.token)["oauth_token"] == "acc-1"
    assert x_server.hits("/1.1/account/verify_credentials.json")[0]["query"]["include_email"] == ["true"]


def test_wrong_secret_is_refused_by_the_server(x_server, make_idp, trip):
    idp = make_idp({"clientId": KEY, "clientSecret": "not-it"}, provider_id="twitter")
    with pytest.raises(BrokerError) as caught:
        trip(idp)
    assert "401" in caught.value.detail


def test_another_trips_token_or_a_denial_refused(x_server, make_idp, trip, answer):
    idp = make_idp({"clientId": KEY, "clientSecret": SECRET}, provider_id="twitter")
    broker, _ = trip(idp)
    for query in ("oauth_token=other&oauth_verifier=ver-1", "denied=req-1"):
        with pytest.raises(BrokerError):
            answer(idp, broker, f"{broker.redirect_uri}?state={broker.state}&{query}")
    assert not x_server.hits("/oauth/access_token")


def test_config():
    from realms.brokering.providers import get_provider_type

    twitter = get_provider_type("twitter")
    assert twitter.social and twitter.clean_config({"clientId": "k", "clientSecret": "s"})
    for bad, words in (({"clientId": "k"}, "clientSecret is required"),
                       ({"clientId": "k", "clientSecret": "s", "pkceEnabled": "true"}, "Unsupported"),
                       ({"clientId": "k", "clientSecret": "s", "tokenUrl": "https://x"}, "Unsupported")):
        with pytest.raises(ValueError, match=words):
            twitter.clean_config(bad)
    assert query_of("https://x/?a=1") == {"a": "1"}
