"""The console's navigation as Keycloak's (decision 0065): the registered pages grouped in
Keycloak's sections and order ("Manage", "Configure"), under Keycloak's names, then what is this
server's own ("Server": the realms, import and export, webhooks). A page no entry names joins
"Server", so a new page is never lost. Page titles follow the same names: "Users", "Create user",
"User details" instead of Django's "Select user to change" and "Change user"."""
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpResponseRedirect
from django.urls import reverse

from .admin_permissions_page import navigation_entry as admin_permissions_entry
from .switcher import current_realm

# Section -> entries: (model as "app_label.model_name", or "app_label.*" for every page of an
# app, label, query string of the list).
SECTIONS = (
    ("Manage", (
        ("realms.organization", "Organizations", ""),
        ("realms.client", "Clients", ""),
        ("realms.clientscope", "Client scopes", ""),
        ("realms.role", "Realm roles", "kind=realm"),
        ("realms.user", "Users", ""),
        ("realms.group", "Groups", ""),
        ("realms.usersession", "Sessions", ""),
        ("realms.event", "Events", ""),
    )),
    ("Configure", (
        ("realms.realm", "Realm settings", ""),  # the current realm's page, not the list of realms
        ("realms.realmkey", "Keys", ""),
        ("realms.authenticationflow", "Authentication", ""),
        ("realms.requiredactionprovider", "Required actions", ""),
        ("realms.authenticatorconfig", "Step settings", ""),
        ("realms.identityprovider", "Identity providers", ""),
        ("federation.*", None, ""),
    )),
    ("Server", (
        ("realms.realm", "Realms", ""),
        ("realms.consolejob", "Import and export", ""),
        ("webhooks.*", None, ""),
    )),
)
OTHERS = "Server"

# Singular names of the pages' objects where Keycloak's differ from the model's.
SINGULAR = {
    "realms.role": "role", "realms.usersession": "session", "realms.realmkey": "key",
    "realms.requiredactionprovider": "required action", "realms.authenticatorconfig": "step settings",
    "realms.authenticationflow": "flow", "realms.consolejob": "import or export",
    "realms.identityprovider": "identity provider",
}


def key_of(opts):
    return f"{opts.app_label}.{opts.model_name}"


def _plural(key, default):
    for _section, entries in SECTIONS:
        for entry, label, _query in entries:
            if entry == key and label and key != "realms.realm":
                return label
    return default


_django_app_list = admin.site.get_app_list


def app_list(request, app_label=None):
    """``AdminSite.get_app_list``: the index and the sidebar in Keycloak's sections; an app's own
    index (``/<app_label>/``) keeps Django's list of that app."""
    if app_label is not None:
        return _django_app_list(request, app_label)
    pages = {f"{app['app_label']}.{m['object_name'].lower()}": m
             for app in _django_app_list(request) for m in app["models"]}
    placed, sections = set(), []
    for section, entries in SECTIONS:
        models = []
        for entry, label, query in entries:
            app, _dot, name = entry.partition(".")
            keys = sorted(k for k in pages if k.startswith(f"{app}.")) if name == "*" else [entry]
            for key in keys:
                page = pages.get(key)
                if page is None:
                    continue
                placed.add(key)
                models.append(_entry(request, key, page, label, query))
        if section == "Manage":  # Keycloak's "Permissions", while the realm's admin permissions are on
            models.append(admin_permissions_entry(request))
        if section == OTHERS:
            models += [pages[k] for k in sorted(pages) if k not in placed]
        models = [m for m in models if m]
        if models:
            sections.append({"name": section, "app_label": section.lower(), "app_url": "", "has_module_perms": True,
                             "models": models})
    return sections


def _entry(request, key, page, label, query):
    page = {**page, "name": label or page["name"]}
    if key == "realms.realm" and label == "Realm settings":
        realm = current_realm(request)
        if realm is None:
            return None
        page.update(admin_url=reverse("admin:realms_realm_change", args=[realm.pk]), add_url=None)
    elif query and page.get("admin_url"):
        page["admin_url"] = f"{page['admin_url']}?{query}"
    return page


admin.site.get_app_list = app_list


def title(context):
    """The heading of a console page in Keycloak's words: a list is named as its entry in the
    navigation, a new object's form "Create ...", an object's page "... details". Other pages
    (delete, history, tools) keep the title they set."""
    opts, heading = context.get("opts"), context.get("title")
    if opts is None:
        return heading
    key = key_of(opts)
    singular = SINGULAR.get(key, str(opts.verbose_name))
    if context.get("cl") is not None:
        return "Realms" if key == "realms.realm" else _plural(key, str(opts.verbose_name_plural).capitalize())
    if "add" in context and "adminform" in context:
        if context["add"]:
            return f"Create {singular}"
        return "Realm settings" if key == "realms.realm" else f"{singular.capitalize()} details"
    return heading


def default_filter(request, **defaults):
    """A redirect to the list with ``defaults`` as its filter when the request names none of them
    (Keycloak opens the user events, the top-level flows), else None."""
    if any(name in request.GET for name in defaults):
        return None
    return HttpResponseRedirect(f"{request.path}?{urlencode({**request.GET.dict(), **defaults})}")
