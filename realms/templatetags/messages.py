"""``{% msg "key" arg ... %}``: a message of the page's realm and locale (``realms.messages``)."""
from django import template

from .. import messages

register = template.Library()


@register.simple_tag(takes_context=True)
def msg(context, key, *args):
    if isinstance(key, messages.Message):
        key, args = key.key, key.args + args
    return messages.text(context.get("realm"), context.get("lang") or messages.FALLBACK_LOCALE, key, *args,
                         theme=context.get("theme"))
