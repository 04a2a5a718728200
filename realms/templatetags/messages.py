"""``{% msg "key" arg ... %}``: a message of the page's realm and locale (``realms.http.messages``);
``{% display_name name %}``: a name written ``${key}`` as its message; ``{% moment seconds %}``: a
time the Account REST API gives in epoch seconds, as people read it in the page's locale."""
from datetime import UTC, datetime

from django import template
from django.utils import dateformat, timezone, translation
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from ..http import messages

register = template.Library()


@register.simple_tag(takes_context=True)
def msg(context, key, *args):
    if isinstance(key, messages.Message):
        key, args = key.key, key.args + args
    return messages.text(context.get("realm"), context.get("lang") or messages.FALLBACK_LOCALE, key, *args,
                         theme=context.get("theme"))


@register.simple_tag(takes_context=True)
def msg_html(context, key, *args):
    """A message that is itself markup (``termsText``, e-mail bodies): the theme's and the realm
    admin's text is trusted as Keycloak's kcSanitize trusts it; the arguments are escaped."""
    lang = context.get("lang") or messages.FALLBACK_LOCALE
    return mark_safe(messages.text(context.get("realm"), lang, key, *(conditional_escape(a) for a in args),
                                   theme=context.get("theme")))


@register.simple_tag(takes_context=True)
def display_name(context, name):
    return messages.display(context.get("realm"), context.get("lang") or messages.FALLBACK_LOCALE, name,
                            theme=context.get("theme"))


@register.simple_tag(takes_context=True)
def moment(context, seconds):
    """``<time>`` reading "28 Nov 2026, 09:14 UTC" (the month's name in the page's language; the
    server's time zone, named), its ``datetime`` the exact instant."""
    instant = datetime.fromtimestamp(int(seconds), tz=UTC)
    with translation.override(context.get("lang") or messages.FALLBACK_LOCALE):
        shown = dateformat.format(timezone.localtime(instant), "j M Y, H:i T")
    return format_html('<time datetime="{}">{}</time>', instant.isoformat(), shown)
