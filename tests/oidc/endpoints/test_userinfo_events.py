"""The userinfo endpoint's events carry Keycloak's names, USER_INFO_REQUEST(_ERROR): a realm that
saves only those (``enabledEventTypes``) stores them and a webhook subscription to
``auth.user_info_request`` receives them."""
from realms.models import Event
from realms.sso import sessions
from webhooks import catalogue

from .conftest import code_for, exchange, url


def test_userinfo_events_are_stored_under_keycloaks_names(http, realm, alice):
    realm.events_enabled = True
    realm.enabled_event_types = ["USER_INFO_REQUEST", "USER_INFO_REQUEST_ERROR"]
    realm.save()
    code, user_session = code_for(realm, alice)
    token = exchange(http, realm, code).json()["access_token"]
    assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION="Bearer " + token).status_code == 200
    sessions.end_session(user_session)
    assert http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION="Bearer " + token).status_code == 401
    stored = list(Event.objects.filter(realm=realm).order_by("time", "id").values_list("type", "error"))
    assert stored == [("USER_INFO_REQUEST", ""), ("USER_INFO_REQUEST_ERROR", "user_session_not_found")]
    assert [catalogue.webhook_type(Event(kind=Event.USER, type=t)) for t, _ in stored] == [
        "auth.user_info_request", "auth.user_info_request_error"]
