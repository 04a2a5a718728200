"""Settings read from the environment take effect: the HSTS header's lifetime and subdomain
switch in production, the debug switch in dev mode, and the request body cap the production
server applies before Django runs; the production server's loader freezes what its start loaded."""
import gc
import importlib

import pytest

from idp import buffered_wsgi


def _read(module, names, monkeypatch, **env):
    """``names`` of the settings module as it reads with ``env`` set (a reload changes the module
    object in place, so the values are taken before it is reloaded back)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        loaded = importlib.reload(importlib.import_module(module))
        return tuple(getattr(loaded, name) for name in names)
    finally:
        monkeypatch.undo()
        importlib.reload(importlib.import_module(module))  # leave the module as the run found it


def test_hsts_lifetime_and_subdomains_follow_the_environment(monkeypatch):
    hsts = ("SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS")
    assert _read("idp.settings.prod", hsts, monkeypatch, IDP_HSTS_SECONDS="600",
                 IDP_HSTS_INCLUDE_SUBDOMAINS="1") == (600, True)
    default = importlib.import_module("idp.settings.prod")
    assert (default.SECURE_HSTS_SECONDS, default.SECURE_HSTS_INCLUDE_SUBDOMAINS) == (31536000, False)


def test_dev_mode_debug_only_when_asked(monkeypatch):
    assert _read("idp.settings.dev", ("DEBUG",), monkeypatch, IDP_DEBUG="1") == (True,)
    assert importlib.import_module("idp.settings.dev").DEBUG is False


@pytest.fixture
def production_app():
    """``make()``: the application as the production server's loader gives it. The loader freezes
    the test process's objects: unfrozen again afterwards, for the tests that follow."""
    gc.unfreeze()  # whatever an earlier test froze
    made = []

    def make():
        made.append(buffered_wsgi.django_application(threads=1, body_read_timeout=5))
        return made[-1]

    yield make
    for app in made:
        app.pool.shutdown(wait=False)
    gc.unfreeze()


def test_production_server_caps_bodies_at_the_setting(settings, production_app):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 12345
    assert production_app().max_body_size == 12345


def test_production_server_freezes_what_its_start_loaded(production_app):
    assert gc.get_freeze_count() == 0
    production_app()
    # Django, the apps and the URL conf's views: out of the cycle collector's sight.
    assert gc.get_freeze_count() > 50_000
