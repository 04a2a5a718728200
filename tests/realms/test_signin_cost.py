"""What the second factors and passkeys cost the database (issue 12): the token endpoint makes the
same queries whichever way the user signed in; the one-time-code POST reads the user and its
credentials once and writes the three rows of a sign-in (no realm row, no row lock for TOTP); a
user's roles, the first time a process puts them in a token, cost one query whatever the
composites and groups."""
import re
import time

import pytest
from django.db import connection
from django.test import Client as HttpClient
from django.test.utils import CaptureQueriesContext

from oidc.realm_cache import RoleRef, get_realm
from realms.models import Group, Role, effective_roles
from realms.users.accounts import create_user
from tests.realms.test_otp import action_of as form_action
from tests.realms.test_otp import add_otp, app_totp, password_page, post_code
from tests.realms.test_signin import PARAMS, TOKEN, redirect_query
from tests.realms.test_webauthn import add_passkey, passkey_for, passkeys_on, sign_in_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


_TABLE = re.compile(r'(?:FROM|INTO|UPDATE) "?(\w+)')
_INNERMOST = re.compile(r"\([^()]*\)")


def _statements(queries):
    """Each statement as its verb and table (savepoints of the test's transaction left out)."""
    out = []
    for query in queries.captured_queries:
        if query["sql"].startswith(("SAVEPOINT", "RELEASE")):
            continue
        # Statements sent together (``realms.data.rows.batch``) are one entry: "INSERT a + INSERT b".
        out.append(" + ".join(_statement(sql) for sql in query["sql"].split(";\n")))
    return out


def _statement(sql):
    if sql.startswith("SELECT"):  # named by its own FROM, not a subquery's in its columns
        while (inner := _INNERMOST.sub("", sql)) != sql:
            sql = inner
    return f"{sql.split()[0]} {_TABLE.search(sql).group(1)}"


def _exchange(code):
    with CaptureQueriesContext(connection) as queries:
        response = HttpClient().post(TOKEN, {"grant_type": "authorization_code", "code": code,
                                             "redirect_uri": PARAMS["redirect_uri"], "client_id": "web-app",
                                             "client_secret": "secret-of-web-app"})
    assert response.status_code == 200, response.content
    return _statements(queries)


def test_token_exchange_makes_the_same_queries_after_a_second_factor_or_a_passkey(realm, web_app, bob):
    passkeys_on(realm)
    authenticator = passkey_for(bob)
    add_passkey(bob, authenticator)
    _exchange(redirect_query(password_page(HttpClient()))["code"][0])  # caches the realm and bob's roles

    password = _exchange(redirect_query(password_page(HttpClient()))["code"][0])
    add_otp(bob)
    http = HttpClient()
    totp = _exchange(redirect_query(post_code(http, password_page(http), app_totp().now()))["code"][0])
    passkey = _exchange(redirect_query(sign_in_with(HttpClient(), authenticator))["code"][0])

    assert password == totp == passkey, (password, totp, passkey)
    # The code burnt, the sessions read (the SSO session and its user from the database, in one
    # round trip, only because the test's transaction never commits, which is when the cache gets
    # it), the CODE_TO_TOKEN event (Save events is on here).
    session_and_user = (["SELECT realms_usersession + SELECT realms_user"] if connection.vendor == "postgresql"
                        else ["SELECT realms_usersession", "SELECT realms_user"])  # SQLite: one at a time
    assert password == ["UPDATE oidc_authorizationcode", *session_and_user, "SELECT realms_clientsession",
                        "INSERT realms_event"]


@pytest.mark.postgresql
def test_one_time_code_post_reads_the_user_and_credentials_and_writes_three_rows(realm, web_app, bob):
    add_otp(bob)
    warm = HttpClient()  # caches the realm; the previous period's code (a code is good once)
    redirect_query(post_code(warm, password_page(warm), app_totp().at(time.time() - 30)))
    http = HttpClient()
    page = password_page(http)
    code = app_totp().now()
    with CaptureQueriesContext(connection) as queries:
        answer = http.post(form_action(page), {"otp": code})
    redirect_query(answer)
    # The SSO session, the client session, the code and the LOGIN event (Save events is on) sent
    # together.
    assert _statements(queries) == ["SELECT realms_user", "SELECT realms_credential",
                                    "INSERT realms_usersession + INSERT realms_clientsession"
                                    " + INSERT oidc_authorizationcode + INSERT realms_event"], _statements(queries)


def test_a_users_roles_cost_one_query_and_match_the_expanded_roles(realm, web_app, bob):
    parent = Group.objects.create(realm=realm, name="staff")
    child = Group.objects.create(realm=realm, name="ops", parent=parent)
    reader, writer, admin = (Role.objects.create(realm=realm, name=n) for n in ("reader", "writer", "admin"))
    app_role = Role.objects.create(realm=realm, client=web_app, name="app-user")
    admin.composites.add(writer)
    writer.composites.add(reader, app_role)
    parent.roles.add(admin)
    bob.groups.add(child)
    config = get_realm(realm.name)
    expected = {(r.id, r.name, r.client_id) for r in (RoleRef(role) for role in effective_roles(bob))}
    assert {"admin", "writer", "reader", "app-user", "offline_access"} <= {name for _, name, _ in expected}
    assert {(r.id, r.name, r.client_id) for r in config.user_roles(bob)} == expected

    bob.groups.clear()  # drops the realm's configuration, as any change of a role mapping does
    config = get_realm(realm.name)
    config.user_roles(create_user(realm, "carol"))  # loads the realm's role rows
    with CaptureQueriesContext(connection) as queries:
        roles = config.user_roles(bob)
    assert len(queries.captured_queries) == 1
    assert {(r.id, r.name, r.client_id) for r in roles} == {
        (r.id, r.name, r.client_id) for r in (RoleRef(role) for role in effective_roles(bob))}
    assert "admin" not in {r.name for r in roles}
