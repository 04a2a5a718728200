"""First broker login under the realm's user profile: the review page asks for a required
attribute the provider did not send, checks it, and the new user keeps it."""
import re

import pytest
from django.test import Client as HttpClient

from realms.models import User
from tests.realms.test_first_broker_login import answered, identity, idp  # noqa: F401 (fixture)
from tests.selfservice.test_reset_and_registration import form_action, html, redirect_query

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


def test_review_asks_for_the_profiles_required_attribute(profiled, web_app, idp):  # noqa: F811
    http = HttpClient()
    page = answered(http, profiled, idp, identity())
    assert 'id="kc-update-profile-form"' in html(page) and 'id="department"' in html(page)
    form = {"username": "alice", "email": "alice@example.com", "firstName": "Alice", "lastName": "Liddell"}
    refused = http.post(form_action(page), {**form, "department": "x"})
    assert re.search(r'id="input-error-department"[^>]*>Length must be between 2 and 20.<', html(refused))
    done = http.post(form_action(refused), {**form, "department": "Research"})
    assert "code" in redirect_query(done)
    assert User.objects.get(realm=profiled, username="alice").attributes == {"department": ["Research"]}
