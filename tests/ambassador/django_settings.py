"""Minimal Django settings for running ``manage.py ambassador`` in tests: the command needs only
the app registry (no database)."""
SECRET_KEY = "ambassador-tests"
INSTALLED_APPS = ["ambassador.apps.AmbassadorConfig"]
USE_TZ = True
