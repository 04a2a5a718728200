"""The realm's password policy in the browser sign-in, through the real pages: an expired
password asks for a new one, and the policy's reason is shown under the new-password field."""
import re
from datetime import timedelta

from django.utils import timezone

from realms.models import Credential
from tests.oidc.browser.test_browser_authorize import _action, _params, _query, _sign_in
from tests.passwords import holds_password


def test_an_expired_password_is_changed_under_the_policy_on_the_pages(client, realm, client_app, user_with_password):
    realm.password_policy = "length(24) and forceExpiredPasswordChange(90)"
    realm.save()
    user_with_password.credentials.filter(type=Credential.PASSWORD).update(
        created=timezone.now() - timedelta(days=91))

    page = _sign_in(client, _params())
    assert page.status_code == 200 and b'name="password-new"' in page.content

    page = client.post(_action(page), {"password-new": "too short", "password-confirm": "too short"})
    assert page.status_code == 200
    error = re.search(r'<input id="password-new"[^>]*aria-invalid="true"[^>]*>\s*'
                      r'<p class="field-error" id="input-error-password" role="alert">([^<]*)</p>',
                      page.content.decode())
    assert error and error.group(1) == "Invalid password: minimum length 24."

    new = "a much longer passphrase!"
    _, query = _query(client.post(_action(page), {"password-new": new, "password-confirm": new}))
    assert query["code"] and query["state"] == "st-123"
    user_with_password.refresh_from_db()
    assert user_with_password.required_actions == [] and holds_password(user_with_password, new)
