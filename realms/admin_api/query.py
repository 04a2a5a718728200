"""What every resource module shares: query parameters as Keycloak's admin resources read them,
the model checks of a body's values, and the ``Location`` of a created resource."""
from django.core.exceptions import ValidationError

from ..http.web import base_url
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


def bounds(request, default_max=100):
    """``first`` and ``max`` as Keycloak applies them: a negative value means its default
    (``default_max`` None: no limit)."""
    first = max(number(request, "first", 0), 0)
    most = number(request, "max", default_max)
    if most is None or most < 0:
        most = default_max
    return first, most


def page(request, queryset, default_max=100):
    first, most = bounds(request, default_max)
    return queryset[first:] if most is None else queryset[first:first + most]


def location(request, path):
    """The absolute URL of ``/admin/realms/<path>`` (the 201's ``Location``)."""
    return f"{base_url(request)}/admin/realms/{path}"


def check_fields(obj, exclude=(), table=None):
    """The model's own checks (lengths, choices, e-mail syntax) as a 400 naming the JSON key
    (``table``: the representation's field table) or else the field."""
    try:
        obj.full_clean(exclude=["realm", *exclude], validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        field_name, messages = next(iter(exc.message_dict.items()))
        key = next((k for k, (f, _) in (table or {}).items() if f == field_name), field_name)
        raise errors.Invalid(f"{key}: {' '.join(messages)}") from None
