"""The OpenID Connect purges (``oidc.purges``) run by the realms' purge task."""
from datetime import timedelta

import pytest
from django.utils import timezone

from oidc import codes
from oidc.models import AuthorizationCode, BackchannelAuthentication, DeviceAuthorization, PushedAuthorization
from realms import purges
from realms.representation.services import create_realm
from realms.sso import sessions
from realms.users.accounts import create_user
from tests.oidc.browser.conftest import make_client

pytestmark = pytest.mark.usefixtures("fresh_caches")
DAY = timedelta(days=1)


@pytest.fixture
def realm(db):
    return create_realm("acme")


@pytest.fixture
def user(realm):
    return create_user(realm, "bob", password="Bob-pass-1234", email="bob@example.com")


def test_expired_codes_pushed_and_device_requests_go(realm, user):
    client = make_client(realm, "web-app", redirect_uris=["https://app.example/cb"])
    session = sessions.create_user_session(realm, user)
    live = codes.issue_code(client=client, user_session=session, redirect_uri="https://app.example/cb")
    used = codes.issue_code(client=client, user_session=session, redirect_uri="https://app.example/cb")
    codes.redeem_code(client=client, code=used, redirect_uri="https://app.example/cb")
    old = codes.issue_code(client=client, user_session=session, redirect_uri="https://app.example/cb")
    AuthorizationCode.objects.filter(digest=codes.digest(old)).update(expires_at=timezone.now() - timedelta(seconds=1))
    PushedAuthorization.objects.create(digest="a" * 64, realm=realm, client=client, expires_at=timezone.now() - DAY)
    pushed = PushedAuthorization.objects.create(digest="b" * 64, realm=realm, client=client,
                                                expires_at=timezone.now() + DAY)
    DeviceAuthorization.objects.create(digest="c" * 64, user_code_digest="c", realm=realm, client=client,
                                       expires_at=timezone.now() - DAY)
    BackchannelAuthentication.objects.create(digest="d" * 64, result_digest="d", realm=realm, client=client, user=user,
                                             expires_at=timezone.now() - DAY)
    counts = purges.run()
    assert (counts["oidc.codes"], counts["oidc.pushed_requests"], counts["oidc.device_requests"],
            counts["oidc.backchannel_requests"]) == (1, 1, 1, 1)
    # A used code stays until it expires: its replay must still end what it started.
    assert set(AuthorizationCode.objects.values_list("digest", flat=True)) == {codes.digest(live), codes.digest(used)}
    assert list(PushedAuthorization.objects.values_list("pk", flat=True)) == [pushed.pk]
    assert purges.run(timezone.now() + timedelta(seconds=realm.access_code_lifespan + 1))["oidc.codes"] == 2
