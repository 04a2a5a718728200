"""Keycloak's ``/realms/{realm}/broker/{alias}/token``: an application holding a user's access
token reads the token the identity provider gave that user at their last sign-in (stored when the
provider's ``storeToken`` is on). The token must carry the ``broker`` client's ``read-token``
role; the bearer check is the Admin API's."""
from django.http import HttpResponse
from rest_framework import exceptions
from rest_framework.response import Response

from ..brokering import broker
from ..brokering.providers import BrokerError
from ..models import Realm
from .views import ApiView


class BrokerToken(ApiView):
    def get(self, request, realm, alias):
        realm_obj = Realm.objects.filter(name=realm, enabled=True).first()
        caller = request.user
        if realm_obj is None or caller.realm.pk != realm_obj.pk:
            raise exceptions.AuthenticationFailed()
        roles = ((caller.claims.get("resource_access") or {}).get("broker") or {}).get("roles") or []
        if "read-token" not in roles:
            return Response({"error": "forbidden", "error_description": f"Client [{caller.client_id}] not "
                             f"authorized to retrieve tokens from identity provider [{alias}]."}, status=403)
        try:
            body, content_type = broker.stored_token(realm_obj, alias, caller.user)
        except BrokerError as exc:
            return Response({"errorMessage": exc.detail}, status=404 if exc.error == "not_found" else 400)
        return HttpResponse(body, content_type=content_type)
