"""What every resource module of the representation shares: the error naming a JSON path, the
value checkers, the helpers over field tables ({JSON key: (model field, checker)}) and the parser
that collects warnings."""
from ..errors import RealmsError


class RepresentationError(RealmsError):
    """An invalid representation; ``str()`` is one line starting with the JSON path."""

    def __init__(self, path, message):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


# ---------------------------------------------------------------------------------------------
# Value checkers: each takes (value, path) and returns the normalised value or raises.


def as_str(v, path):
    """A string; a number or boolean becomes its text, as Keycloak's JSON reader coerces them
    (``kcadm.sh -s username=123`` sends a number)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (str, int, float)):
        return str(v)
    raise RepresentationError(path, "expected a string")


def as_bool(v, path):
    if isinstance(v, bool):
        return v
    # Hand-written files (Keycloak's own testsuite among them) give booleans as strings.
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise RepresentationError(path, "expected a boolean")


def as_int(v, path):
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise RepresentationError(path, "expected an integer")


def as_str_list(v, path):
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise RepresentationError(path, "expected a list of strings")


def as_str_map(v, path):
    """A map of string to string (client attributes, mapper config, smtpServer ...)."""
    if not isinstance(v, dict):
        raise RepresentationError(path, "expected an object of strings")
    return {k: as_str(x, f"{path}.{k}") for k, x in v.items() if x is not None}


def as_multi_map(v, path):
    """A map of string to list of strings (user, group and role attributes)."""
    if not isinstance(v, dict):
        raise RepresentationError(path, "expected an object of string lists")
    out = {}
    for k, x in v.items():
        if isinstance(x, str):
            out[k] = [x]
        else:
            out[k] = as_str_list(x, f"{path}.{k}")
    return out


def as_dict(v, path):
    if isinstance(v, dict):
        return v
    raise RepresentationError(path, "expected an object")


def as_list(v, path):
    if isinstance(v, list):
        return v
    raise RepresentationError(path, "expected a list")


def as_role_map(v, path):
    """{clientId: [role names]}"""
    v = as_dict(v, path)
    return {k: as_str_list(x, f"{path}.{k}") for k, x in v.items()}


def as_composites(v, path):
    v = as_dict(v, path)
    out = {"realm": [], "client": {}}
    for k, x in v.items():
        if k == "realm":
            out["realm"] = as_str_list(x, f"{path}.realm")
        elif k == "client":
            out["client"] = as_role_map(x, f"{path}.client")
        else:
            raise RepresentationError(f"{path}.{k}", "expected only 'realm' and 'client'")
    return out


def at(path, key):
    return f"{path}.{key}" if path else key


class Parser:
    def __init__(self):
        self.warnings = []

    def take(self, obj, path, spec, derived=(), required=()):
        """Check ``obj`` against ``spec`` {key: checker}; return the present, non-null values.

        Keys in ``derived`` are computed by Keycloak from other data and carry nothing of their
        own; any other key is reported as unsupported."""
        if not isinstance(obj, dict):
            raise RepresentationError(path, "expected an object")
        out = {}
        for key, value in obj.items():
            if key in spec:
                if value is not None:
                    out[key] = spec[key](value, at(path, key))
            elif key not in derived and value not in (None, [], {}):
                self.warnings.append(f"{at(path, key)}: not supported, not imported")
        for key in required:
            if not out.get(key):
                raise RepresentationError(at(path, key), "required")
        return out

    def unsupported(self, path, what="not supported, not imported"):
        self.warnings.append(f"{path}: {what}")


# ---------------------------------------------------------------------------------------------
# Field tables: JSON key -> (model field, checker).


def spec_of(table, extra=None):
    spec = {k: checker for k, (_, checker) in table.items()}
    spec.update(extra or {})
    return spec


def model_fields(table, values):
    return {table[k][0]: v for k, v in values.items() if k in table}


def json_fields(obj, table):
    return {k: getattr(obj, f) for k, (f, _) in table.items()}
