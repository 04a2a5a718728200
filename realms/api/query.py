"""Query parameters as Keycloak's admin resources read them, and the ``Location`` of a created
resource."""
from ..web import base_url
from . import errors


def flag(request, name, default=None):
    """``true``/``false`` (any case) or ``default`` when absent; anything else is a 400."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise errors.Invalid(f"Invalid value for {name}")


def number(request, name, default):
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise errors.Invalid(f"Invalid value for {name}") from None


def page(request, queryset, default_max=100):
    """``first`` and ``max`` as Keycloak applies them: a negative value means its default."""
    first, most = number(request, "first", 0), number(request, "max", default_max)
    first = max(first, 0)
    return queryset[first:first + most] if most >= 0 else queryset[first:first + default_max]


def location(request, path):
    """The absolute URL of ``/admin/realms/<path>`` (the 201's ``Location``)."""
    return f"{base_url(request)}/admin/realms/{path}"
