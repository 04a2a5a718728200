"""User federation on the console (Keycloak's User federation pages): LDAP providers with their
settings, actions and synchronization status (``providers``), their mappers (``mappers``), and
Kerberos providers (``kerberos``). ``components`` holds what the three share: a component's
multivalued config edited as form fields, and refusals shown as English text."""
# Django's admin autodiscovery imports ``federation.admin``; importing the modules runs their
# ``@admin.register`` decorators.
from . import kerberos, mappers, providers  # noqa: F401
