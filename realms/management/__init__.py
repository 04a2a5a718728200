"""manage.py commands of realms: bootstrap_admin, import_realm, export_realm (as Keycloak's)."""
