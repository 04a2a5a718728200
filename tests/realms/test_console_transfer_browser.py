"""Realm import, partial import and partial export in the console, run as background jobs: the job's
page shows its progress, then what it did, or why it failed (and then nothing changed). The
browser test imports a Keycloak 26 export through the console at a phone's width."""
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from realms.admin import jobs
from realms.models import Client, ConsoleJob, Event, Realm, Role, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user

from .test_admin import make_admin

pytestmark = pytest.mark.usefixtures("fresh_caches")

DATA = Path(__file__).resolve().parents[1] / "data" / "keycloak"
FGAP = DATA / "keycloak-fgap-realm-kc26-full-export.json"


@pytest.fixture
def master():
    return Realm.objects.get_or_create(name="master")[0]


@pytest.fixture
def console(client, master):
    client.force_login(make_admin(master))
    return client


def upload(content, name="realm.json"):
    return SimpleUploadedFile(name, content if isinstance(content, bytes) else json.dumps(content).encode(),
                              content_type="application/json")


def started_job(response):
    """The job a start form redirected to (it has not run: tests here run it in their thread)."""
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ConsoleJob.objects.get()
    assert response["Location"] == reverse("admin:realms_consolejob_change", args=[job.pk])
    assert job.status == ConsoleJob.QUEUED
    return job


def run(job):
    jobs.run(job.pk)
    job.refresh_from_db()
    return job


IMPORT = reverse("admin:realms_consolejob_realm_import")


def partial_import_url(realm):
    return reverse("admin:realms_consolejob_partial_import", args=[realm.pk])


def job_page(console, job):
    return console.get(reverse("admin:realms_consolejob_change", args=[job.pk])).content.decode()


# --- Realm import ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_a_keycloak_export_becomes_a_realm_through_a_job(console):
    job = started_job(console.post(IMPORT, {"file": upload(FGAP.read_bytes())}))
    assert job.realm_name == "fgap" and job.payload["realm"] == "fgap"
    page = job_page(console, job)
    assert 'http-equiv="refresh"' in page and "Queued" in page  # the page follows the job
    job = run(job)
    assert job.status == ConsoleJob.DONE and job.progress == 100 and job.error == ""
    assert job.payload is None  # the file (password hashes, secrets) is not kept
    realm = Realm.objects.get(name="fgap")
    assert job.realm == realm
    assert User.objects.filter(realm=realm, username="at-user-0").exists()
    assert Client.objects.filter(realm=realm, client_id="admin-permissions").exists()
    assert job.result["users"] == User.objects.filter(realm=realm, service_account_client=None).count() > 0
    page = job_page(console, job)
    assert 'http-equiv="refresh"' not in page and "Done" in page and "Open realm fgap" in page
    assert console.get(reverse("admin:realms_realm_change", args=[realm.pk])).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe not text", "The file is not text"),
    (b"{\"realm\": ", "The file is not valid JSON (line 1"),
    (b"[1, 2]", "expected a JSON object"),
    (b"{\"users\": []}", "The file names no realm"),
    (b"{\"realm\": \"master\"}", "A realm named master already exists."),
])
def test_a_file_that_holds_no_new_realm_is_refused_on_the_form(console, content, message):
    response = console.post(IMPORT, {"file": upload(content)})
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors["file"])
    assert not ConsoleJob.objects.exists()


@pytest.mark.django_db
def test_an_import_that_fails_changes_nothing_and_says_why(console):
    # Users are written last: the realm and its client were written when the group turns out missing.
    rep = {"realm": "broken", "clients": [{"clientId": "app"}], "users": [{"username": "alice", "groups": ["/nope"]}]}
    job = run(started_job(console.post(IMPORT, {"file": upload(rep)})))
    assert job.status == ConsoleJob.FAILED and job.payload is None
    assert job.error == "users[0].groups[0]: unknown group '/nope'"
    assert not Realm.objects.filter(name="broken").exists() and not Client.objects.filter(client_id="app").exists()
    page = job_page(console, job)
    assert '<li class="error" id="job-error">users[0].groups[0]: unknown group &#x27;/nope&#x27;</li>' in page


@pytest.mark.django_db
def test_only_an_admin_who_may_create_realms_imports_one(client, master):
    acme = create_realm("acme")
    helper = create_user(master, "helper")
    helper.roles.add(Role.objects.get(realm=master, client__client_id="acme-realm", name="manage-realm"))
    client.force_login(helper)
    assert client.post(IMPORT, {"file": upload({"realm": "other"})}).status_code == 403
    # ... and partial-imports into the realm they manage, but sees nobody else's jobs.
    response = client.post(partial_import_url(acme), {"file": upload({"users": []}), "policy": "FAIL"})
    own = started_job(response)
    other = ConsoleJob.objects.create(kind=ConsoleJob.PARTIAL_EXPORT, realm=acme, realm_name="acme")
    assert client.get(reverse("admin:realms_consolejob_change", args=[other.pk])).status_code == 403
    listing = client.get(reverse("admin:realms_consolejob_changelist")).content.decode()
    assert own.pk in listing and other.pk not in listing


# --- Partial import ----------------------------------------------------------------------------

PARTIAL = {"users": [{"username": "alice", "email": "alice@example.org"}, {"username": "bob"}],
           "clients": [{"clientId": "web-app", "redirectUris": ["https://app.example/cb"]}]}


@pytest.mark.django_db
@pytest.mark.parametrize("policy, expected", [
    ("SKIP", {"added": 2, "skipped": 1, "overwritten": 0}),
    ("OVERWRITE", {"added": 2, "skipped": 0, "overwritten": 1}),
])
def test_partial_import_follows_the_policy_for_what_exists(console, policy, expected):
    acme = create_realm("acme", admin_events_enabled=True)
    create_user(acme, "alice", first_name="Alice")
    job = run(started_job(console.post(partial_import_url(acme), {"file": upload(PARTIAL), "policy": policy})))
    assert job.status == ConsoleJob.DONE, job.error
    assert {k: job.result[k] for k in expected} == expected
    assert User.objects.filter(realm=acme, username="bob").exists()
    assert Client.objects.filter(realm=acme, client_id="web-app").exists()
    alice = User.objects.get(realm=acme, username="alice")
    assert (alice.first_name == "Alice") == (policy == "SKIP")
    page = job_page(console, job)
    assert "Added" in page and '<table class="console-table" id="job-results">' in page
    # Keycloak's admin events, one per resource written, by the admin who started the job.
    root = User.objects.get(realm__name="master", username="root")
    written = Event.objects.filter(realm=acme, kind=Event.ADMIN, resource_path__startswith="users/", user_id=root.pk)
    assert written.count() == (1 if policy == "SKIP" else 2)  # bob, and alice overwritten (skipped: no event)


@pytest.mark.django_db
def test_partial_import_under_fail_imports_nothing_when_one_exists(console):
    acme = create_realm("acme")
    create_user(acme, "alice")
    job = run(started_job(console.post(partial_import_url(acme), {"file": upload(PARTIAL), "policy": "FAIL"})))
    assert job.status == ConsoleJob.FAILED and job.error == "User with user name alice already exists."
    assert not User.objects.filter(realm=acme, username="bob").exists()
    assert not Client.objects.filter(realm=acme, client_id="web-app").exists()


@pytest.mark.django_db
def test_partial_import_refuses_a_policy_keycloak_does_not_have(console):
    acme = create_realm("acme")
    response = console.post(partial_import_url(acme), {"file": upload(PARTIAL), "policy": "MERGE"})
    assert "policy" in response.context["form"].errors and not ConsoleJob.objects.exists()


# --- Partial export ----------------------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("options, present, absent", [
    ({}, (), ("clients", "roles", "groups")),
    ({"clients": "on"}, ("clients",), ("roles", "groups")),
    ({"groups_and_roles": "on", "clients": "on"}, ("clients", "roles", "groups"), ()),
])
def test_partial_export_is_a_download_with_the_chosen_parts(console, options, present, absent):
    acme = create_realm("acme")
    app = Client.objects.create(realm=acme, client_id="web-app", redirect_uris=["https://app.example/cb"])
    app.secret = app.regenerate_secret()
    app.save()
    job = started_job(console.post(reverse("admin:realms_consolejob_partial_export", args=[acme.pk]), options))
    download = reverse("admin:realms_consolejob_download", args=[job.pk])
    assert console.get(download).status_code == 403  # not done yet
    job = run(job)
    assert job.status == ConsoleJob.DONE
    assert download in job_page(console, job)
    response = console.get(download)
    assert response["Content-Disposition"] == 'attachment; filename="realm-export.json"'
    rep = json.loads(response.content)
    assert rep["realm"] == "acme"
    assert all(key in rep for key in present) and not any(key in rep for key in absent)
    assert "users" not in rep or all("credentials" not in u for u in rep["users"])
    if "clients" in rep:
        exported = next(c for c in rep["clients"] if c["clientId"] == "web-app")
        assert exported["secret"] == "**********"


# --- In Chromium at a phone's width ------------------------------------------------------------

@pytest.mark.browser
def test_a_keycloak_export_imported_through_the_console(live_server, tmp_path):
    from playwright.sync_api import sync_playwright

    from realms.representation.bootstrap import ensure_bootstrap_admin
    from tests.browser import CHROMIUM_ARGS, sign_in_to_console

    ensure_bootstrap_admin("ops", "bootstrap-pass-1")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"realm": "broken", "users": [{"username": "alice", "groups": ["/nope"]}]}))
    wide = []
    # No database access inside: Playwright's sync API runs an event loop in this thread.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.set_default_timeout(30000)
            sign_in_to_console(page, live_server.url, "ops", "bootstrap-pass-1")
            page.goto(f"{live_server.url}{reverse('admin:realms_realm_changelist')}")
            page.click("#import-realm")
            page.set_input_files("#id_file", str(FGAP))
            page.click("input[type=submit]")
            page.wait_for_selector("#job[data-status=done]")  # the page reloads itself until then
            wide += too_wide(page)
            assert "Users" in page.inner_text("#job")
            page.click("#job-realm")
            assert page.locator("#id_name").input_value() == "fgap"
            # A file the import refuses: the job fails with the reason, nothing is created.
            page.goto(live_server.url + IMPORT)
            page.set_input_files("#id_file", str(broken))
            page.click("input[type=submit]")
            page.wait_for_selector("#job[data-status=failed]")
            assert page.inner_text("#job-error") == "users[0].groups[0]: unknown group '/nope'"
            wide += too_wide(page)
        finally:
            browser.close()
    assert not wide, wide
    realm = Realm.objects.get(name="fgap")
    assert User.objects.filter(realm=realm, username="at-user-0").exists()
    assert Client.objects.filter(realm=realm, client_id="admin-permissions").exists()
    assert not Realm.objects.filter(name="broken").exists()
    assert list(ConsoleJob.objects.values_list("status", flat=True).order_by("created")) == ["done", "failed"]


def too_wide(page):
    page.wait_for_load_state("load")  # a page the job reloaded is measured with its styles
    return page.evaluate(WIDER_THAN_THE_WINDOW)


WIDER_THAN_THE_WINDOW = """() => {
  const root = document.documentElement;
  return root.scrollWidth > root.clientWidth ? [`${location.pathname}: ${root.scrollWidth} > ${root.clientWidth}`] : [];
}"""


@pytest.mark.browser
def test_attribute_rows_and_the_password_policy_at_a_phones_width_save_with_enter(live_server):
    from playwright.sync_api import sync_playwright

    from realms.representation.bootstrap import ensure_bootstrap_admin
    from tests.browser import CHROMIUM_ARGS, sign_in_to_console

    ensure_bootstrap_admin("ops", "bootstrap-pass-1")
    acme = create_realm("acme")
    alice = create_user(acme, "alice", attributes={"team": ["blue"]})
    user_page = live_server.url + reverse("admin:realms_user_change", args=[alice.pk])
    realm_page = live_server.url + reverse("admin:realms_realm_change", args=[acme.pk])
    wide = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.set_default_timeout(30000)
            sign_in_to_console(page, live_server.url, "ops", "bootstrap-pass-1")
            page.goto(user_page)
            page.get_by_role("button", name="Add an attribute").click()  # a new row, focused
            page.keyboard.type("phone")
            page.keyboard.press("Tab")
            page.keyboard.type("555")
            page.get_by_role("button", name="Add an attribute").click()
            page.keyboard.type("phone")
            page.keyboard.press("Tab")
            page.keyboard.type("556")
            wide += too_wide(page)
            with page.expect_navigation():
                page.keyboard.press("Enter")  # saves the user, as the Save button does
            assert page.locator(".messagelist .success").count() == 1
            page.goto(realm_page + "#authentication")
            policy = page.locator("select[name=password_policy-policy]").last
            policy.select_option("length")  # fills in the policy's default
            assert page.locator("input[name=password_policy-value]").last.input_value() == "8"
            page.locator("input[name=password_policy-value]").last.fill("12")
            page.get_by_role("button", name="Add another policy").click()
            page.locator("select[name=password_policy-policy]").last.select_option("notUsername")
            wide += too_wide(page)
            with page.expect_navigation():
                page.locator("input[name=password_policy-value]").first.press("Enter")
            assert page.locator(".messagelist .success").count() == 1
        finally:
            browser.close()
    assert not wide, wide
    alice.refresh_from_db()
    acme.refresh_from_db()
    assert alice.attributes == {"team": ["blue"], "phone": ["555", "556"]}
    assert acme.password_policy == "length(12) and notUsername(undefined)"


@pytest.mark.services
def test_in_production_an_import_runs_on_a_celery_worker(transactional_db, client, settings, tmp_path):
    """No thread of the web server: the job waits, queued, until a worker takes the task."""
    import redis
    from django.conf import settings as django_settings
    from django.db import connection

    from tests.webhooks.workers import start_worker, stop, wait_until

    settings.IDP_JOBS_IN_PROCESS = False
    redis.Redis.from_url(django_settings.CELERY_BROKER_URL).flushdb()
    client.force_login(make_admin(Realm.objects.get(name="master")))
    job = started_job(client.post(IMPORT, {"file": upload(FGAP.read_bytes())}))
    assert ConsoleJob.objects.get(pk=job.pk).status == ConsoleJob.QUEUED  # nothing ran in this process
    worker = start_worker(connection.settings_dict["NAME"], tmp_path, beat=False)
    try:
        assert wait_until(lambda: ConsoleJob.objects.get(pk=job.pk).status == ConsoleJob.DONE, timeout=60), \
            open(worker.log_path).read()[-3000:]
    finally:
        stop(worker)
    assert User.objects.filter(realm__name="fgap", username="at-user-0").exists()
