"""The current realm of the console: one realm at a time (docs/decisions/0003), chosen from the
header's switcher or with ``?realm__id__exact=`` on any list."""
from django.contrib import admin

from ..administration.admin_permissions import administered_realms, console_admin
from ..http.web import is_cross_site
from ..models import Realm, RealmOwned

REALM_PARAM = "realm__id__exact"
SESSION_KEY = "admin_console_realm_id"
# Keycloak 26's realm selector offers ten realms at a time (and a search); the header and the
# list filters here offer as many, so that no page grows with the number of realms. The realm
# list (searched, paginated) reaches the others.
SWITCHER_SIZE = 10


def current_realm(request):
    """The realm the console works in: ``?realm__id__exact=`` if given (and then remembered),
    else the one remembered in the session, else master."""
    if hasattr(request, "_console_realm"):
        return request._console_realm
    realm = None
    wanted = request.GET.get(REALM_PARAM)
    if wanted:
        realm = _realm(request, wanted)
    if realm is None and request.session.get(SESSION_KEY):
        realm = _realm(request, request.session[SESSION_KEY])
    if realm is None:
        realm = Realm.objects.filter(name="master").first() or Realm.objects.first()
    if not request.user.is_superuser:  # a delegated admin works in the realms they administer only
        allowed = administered_realms(console_admin(request))
        if realm not in allowed:
            realm = allowed[0] if allowed else None
    set_current_realm(request, realm)
    return realm


def _realm(request, pk):
    # The admin's own realm (a master admin's common case) came with the signed-in user's row.
    if str(getattr(request.user, "realm_id", None)) == str(pk):
        return request.user.realm
    return Realm.objects.filter(pk=pk).first()


def set_current_realm(request, realm):
    request._console_realm = realm
    # A link from another site shows that realm once but is not remembered (no cross-site switch).
    if realm is not None and request.session.get(SESSION_KEY) != realm.pk and not is_cross_site(request):
        request.session[SESSION_KEY] = realm.pk


def switcher_realms(request, current):
    """What the header's switcher and a list's realm filter offer: the first ``SWITCHER_SIZE``
    realms by name the admin may work in, and the current one."""
    if request.user.is_superuser:
        realms = list(Realm.objects.only("id", "name").order_by("name")[:SWITCHER_SIZE])
    else:
        realms = administered_realms(console_admin(request))[:SWITCHER_SIZE]
    if current is not None and current not in realms:
        realms.append(current)
    return realms


def realm_of(obj):
    if isinstance(obj, Realm):
        return obj
    return obj.realm if isinstance(obj, RealmOwned) and obj.realm_id else None


class RealmFilter(admin.SimpleListFilter):
    """The realm list filter: always exactly one realm (no "All"); defaults to the current one."""

    title = "realm"
    parameter_name = REALM_PARAM

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        self.current = current_realm(request)

    def lookups(self, request, model_admin):
        return [(r.pk, r.name) for r in switcher_realms(request, current_realm(request))]

    def value(self):
        # current_realm has read the requested realm, and kept it only if the admin may work there.
        return self.current.pk if self.current else None

    def choices(self, changelist):
        return list(super().choices(changelist))[1:]  # drop "All": lists never mix realms

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(realm_id=value) if value else queryset.none()
