"""``/admin/realms/{realm}/events``, ``/admin-events`` and ``/events/config`` (Keycloak's
RealmAdminResource): the stored user and admin events, newest first, with Keycloak's query
parameters; deleting them; the realm's event settings (RealmEventsConfigRepresentation).
Reading needs ``view-events``, changing ``manage-events``. Empty values are left out of an
event, as Keycloak leaves out nulls."""
import datetime
import re

from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import Event
from ..representation import RepresentationError
from ..representation.fields import Parser, model_fields, spec_of
from ..representation.realm import REALM_FIELDS
from . import errors
from .query import page
from .views import RealmResource

_CONFIG_KEYS = ("eventsEnabled", "eventsExpiration", "eventsListeners", "enabledEventTypes",
                "adminEventsEnabled", "adminEventsDetailsEnabled")
_CONFIG_FIELDS = {k: REALM_FIELDS[k] for k in _CONFIG_KEYS}


def _millis(when):
    return int(when.timestamp() * 1000)


def _present(rep):
    return {k: v for k, v in rep.items() if v not in ("", None, {})}


def user_event_rep(e):
    return _present({"id": e.pk, "time": _millis(e.time), "type": e.type, "realmId": e.realm_id,
                     "clientId": e.client_id, "userId": e.user_id, "sessionId": e.session_id,
                     "ipAddress": e.ip_address, "error": e.error, "details": e.details})


def admin_event_rep(e):
    details = dict(e.details)
    auth_realm = details.pop("authRealmId", "")
    return _present({
        "id": e.pk, "time": _millis(e.time), "realmId": e.realm_id,
        "authDetails": _present({"realmId": auth_realm, "clientId": e.client_id, "userId": e.user_id,
                                 "ipAddress": e.ip_address}),
        "operationType": e.type, "resourceType": e.resource_type, "resourcePath": e.resource_path,
        "representation": e.representation, "error": e.error, "details": details})


def _date(request, name, label):
    """``yyyy-MM-dd`` (``dateTo``: through the end of that day) or milliseconds since the epoch."""
    value = request.query_params.get(name)
    if not value:
        return None
    if value.isdigit():
        return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.UTC)
    try:
        day = datetime.datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=datetime.UTC)
    except ValueError:
        raise errors.Invalid(f"Invalid value for '{label}', expected format is yyyy-MM-dd") from None
    return day + datetime.timedelta(days=1) - datetime.timedelta(microseconds=1) if name == "dateTo" else day


def _filter(request, events, exact):
    """``exact``: {query parameter: model field}; list parameters may repeat."""
    for param, field in exact.items():
        values = request.query_params.getlist(param)
        values = [v for v in values if v]
        if values:
            events = events.filter(**{f"{field}__in": values})
    start, end = _date(request, "dateFrom", "Date(From)"), _date(request, "dateTo", "Date(To)")
    if start:
        events = events.filter(time__gte=start)
    if end:
        events = events.filter(time__lte=end)
    return events


class Events(RealmResource):
    required_role = {"GET": "view-events", "DELETE": "manage-events"}
    kind = Event.USER

    def events(self):
        return Event.objects.filter(realm=self.realm, kind=self.kind)

    def get(self, request, realm):
        events = _filter(request, self.events(), {"type": "type", "client": "client_id", "user": "user_id",
                                                  "ipAddress": "ip_address"})
        return Response([user_event_rep(e) for e in page(request, events)])

    def delete(self, request, realm):
        self.events().delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class AdminEvents(Events):
    kind = Event.ADMIN

    def get(self, request, realm):
        events = _filter(request, self.events(), {
            "operationTypes": "type", "resourceTypes": "resource_type", "authRealm": "details__authRealmId",
            "authClient": "client_id", "authUser": "user_id", "authIpAddress": "ip_address"})
        resource_path = request.query_params.get("resourcePath")
        if resource_path:  # "*" matches any characters, as in Keycloak
            pattern = ".*".join(re.escape(part) for part in resource_path.split("*"))
            events = events.filter(resource_path__regex=f"^{pattern}$")
        return Response([admin_event_rep(e) for e in page(request, events)])


class EventsConfig(RealmResource):
    required_role = {"GET": "view-events", "PUT": "manage-events"}

    def get(self, request, realm):
        return Response({k: getattr(self.realm, f) for k, (f, _) in _CONFIG_FIELDS.items()})

    def put(self, request, realm):
        """The keys given are changed (as Keycloak's updateRealmEventsConfig)."""
        try:
            values = Parser().take(request.data, "", spec_of(_CONFIG_FIELDS))
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        for name, value in model_fields(_CONFIG_FIELDS, values).items():
            setattr(self.realm, name, value)
        with transaction.atomic():
            self.realm.save()
            admin_events.record(self.realm, "UPDATE", "REALM", "events/config", auth=self.auth_details(),
                                representation=lambda: self.get(request, realm).data)
        return Response(status=status.HTTP_204_NO_CONTENT)
