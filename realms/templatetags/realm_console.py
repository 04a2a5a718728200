"""The console's realm switcher (in the header of every page), page titles in Keycloak's words
(``realms.admin.navigation.title``), ``|console_time:realm``, the one way a template shows a
time (``realms.admin.names.when``), and the realm list's table."""
from django import template
from django.contrib.admin.templatetags.admin_list import result_headers
from django.urls import NoReverseMatch, reverse

from ..admin import current_realm, names, navigation
from ..admin.switcher import SWITCHER_SIZE, switcher_realms

register = template.Library()


@register.inclusion_tag("admin/realms/realm_switcher.html", takes_context=True)
def realm_switcher(context):
    request = context["request"]
    opts = context.get("opts")
    # After switching, go back to the list the admin was on (an object page belongs to the old realm).
    try:
        back = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist") if opts else request.path
    except NoReverseMatch:
        back = request.path
    current = current_realm(request)
    realms = switcher_realms(request, current)
    return {
        "realms": realms,
        "more": len(realms) >= SWITCHER_SIZE,  # then the realm list reaches the others
        "current": current,
        "next": back,
        "csrf_token": context.get("csrf_token"),
    }


@register.simple_tag(takes_context=True)
def console_title(context):
    return navigation.title(context)


@register.filter
def console_time(value, realm=None):
    return names.when(value, realm)


@register.inclusion_tag("admin/change_list_results.html")
def realm_result_list(cl):
    """Django's ``{% result_list cl %}`` for the realm list, its rows written by
    ``RealmAdmin.result_rows`` (no list-editable forms, so no hidden fields)."""
    headers = list(result_headers(cl))
    return {"cl": cl, "result_headers": headers, "results": cl.model_admin.result_rows(cl),
            "num_sorted_fields": sum(1 for h in headers if h["sortable"] and h["sorted"])}
