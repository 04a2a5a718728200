"""``GET /admin/serverinfo``: what Keycloak's admin clients read first (the server's version and
profile, themes, the providers and protocols it offers). Keycloak answers it to any admin: a
master admin or a caller holding some realm-management role in their own realm; anyone else 403."""
import platform
import time

from rest_framework import exceptions
from rest_framework.response import Response

from .. import features
from ..administration.admin_permissions import administers
from ..brokering.mappers import mapper_types
from ..brokering.providers import provider_types
from ..http import themes
from ..models import Realm
from ..signin import engine
from .views import ApiView

# The Keycloak release whose Admin REST API this one follows; clients branch on it.
KEYCLOAK_VERSION = "26.0.0"
_STARTED = time.time()


def _spi_providers():
    """Keycloak's ``providers`` by SPI: the sign-in steps' and the identity brokering's
    (``identity_provider``, ``social``, ``identity_provider_mapper``), from their registries."""
    spis = {spi: list(names) for spi, names in engine.provider_ids().items()}
    types = provider_types()
    spis["identity_provider"] = [t.provider_id for t in types if not t.social]
    spis["social"] = [t.provider_id for t in types if t.social]
    spis["identity_provider_mapper"] = [m.id for m in mapper_types()]
    return {spi: {"internal": True, "providers": {name: {"order": 0, "operationalInfo": {}} for name in names}}
            for spi, names in spis.items()}


def _brokers(social):
    return [{"id": t.provider_id, "name": t.name} for t in provider_types() if t.social == social]


class ServerInfo(ApiView):
    def get(self, request):
        caller = request.user
        if not any(administers(caller.admin, realm) for realm in Realm.objects.all()):
            raise exceptions.PermissionDenied()
        uptime = int(time.time() - _STARTED)
        return Response({
            "systemInfo": {
                "version": KEYCLOAK_VERSION,
                "serverTime": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "uptime": f"{uptime // 3600} hours, {uptime % 3600 // 60} minutes, {uptime % 60} seconds",
                "uptimeMillis": uptime * 1000,
                "javaVersion": "", "javaVendor": "", "javaVm": "", "javaVmVersion": "", "javaRuntime": "",
                "javaHome": "",
                "osName": platform.system(), "osArchitecture": platform.machine(), "osVersion": platform.release(),
                "fileEncoding": "UTF-8", "userName": "", "userDir": "", "userTimezone": "UTC", "userLocale": "en_US",
            },
            # Keycloak names features by their enum constant (TOKEN_EXCHANGE) here.
            "profileInfo": {"name": "community", "disabledFeatures": _enum(features.disabled()),
                            "previewFeatures": _enum(features.of_kind(features.PREVIEW)),
                            "experimentalFeatures": _enum(features.of_kind(features.EXPERIMENTAL))},
            "features": [{"name": _enum([name])[0], "label": label, "type": kind.upper(),
                          "enabled": features.enabled(name), "dependencies": []}
                         for name, (kind, label) in sorted(features.FEATURES.items())],
            "themes": {kind: [{"name": themes.DEFAULT_THEME, "locales": ["en"]}]
                       for kind in ("login", "account", "email", "admin", "welcome", "common")},
            "providers": _spi_providers(),
            "passwordPolicies": [],
            "protocolMapperTypes": {},
            "builtinProtocolMappers": {},
            "clientInstallations": {},
            "componentTypes": {},
            "identityProviders": _brokers(social=False),
            "clientImporters": [],
            "socialProviders": _brokers(social=True),
            "enums": {"sslRequired": ["all", "external", "none"], "eventType": [], "operationType": [
                "CREATE", "UPDATE", "DELETE", "ACTION"], "resourceType": []},
            "cryptoInfo": {},
        })


def _enum(names):
    return [name.upper().replace("-", "_") for name in names]
