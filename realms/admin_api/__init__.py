"""The Admin REST API's one base (Keycloak's ``/admin/realms/...``), on Django REST framework.

Every resource is a ``RealmResource`` view: bearer tokens of a realm's issuer checked locally
(``authentication``), the caller's realm-management roles computed from the database on each
call (``permissions``), JSON bodies parsed with a depth limit (``parsers``) and every error in
Keycloak's shape (``errors``). Apps add their routes to ``resources`` from their
``AppConfig.ready()``; ``idp/urls.py`` mounts ``realms.admin_api.urls`` before the console. See
docs/decisions/0015-admin-rest-api-home.md.
"""
