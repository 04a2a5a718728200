"""``{% identity_providers %}``: the login page's identity-provider buttons and the error a
provider's answer left (shown once), keycloak.v2's ``kc-social-providers`` block."""
from django import template

from ..brokering import broker, login_page
from ..http.messages import Message

register = template.Library()


@register.inclusion_tag("v2/login-social.html", takes_context=True)
def identity_providers(context):
    auth_session = context.get("auth_session")
    error = auth_session.notes.pop(broker.BROKER_ERROR, None) if auth_session is not None else None
    return {**context.flatten(), "social": login_page.buttons(context.get("realm"), context.get("client"), auth_session),
            "broker_error": Message(*error) if error else None}
