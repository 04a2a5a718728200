"""What the console (``realms.admin``) and the Admin REST API (``realms.admin_api``) share: who may
administer what (``admin_permissions``, Keycloak's fine-grained admin permissions), Keycloak's
rules for changing stored flows (``flow_admin``) and the console's sign-in (``console_auth``). Imports the
layers up to ``signin``; the realm representation and the surfaces import it."""
