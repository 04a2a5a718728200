"""``{% msg "key" arg ... %}``: a message of the page's realm and locale (``realms.http.messages``)."""
from django import template
from django.utils.html import conditional_escape
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
