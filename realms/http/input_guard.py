"""Refuse requests carrying a NUL character, before any view reads them.

PostgreSQL cannot store NUL in a text column nor ``\\u0000`` in a jsonb value: a client id, a
redirect URI, a state or a webhook description carrying one made the database raise while the
request was looked up or its event recorded, and the endpoint answered 500 (found by the fuzz
targets in ``tests/fuzz``). No protocol parameter, path or JSON field of this service may contain
one, so the request is refused at the edge with 400 ``invalid_request``, in the OAuth error shape
that every API here uses. Placed before the protocol-endpoint short cut so the token endpoint is
covered; the checks are substring searches over input Django reads anyway.
"""
import re

from django.http import JsonResponse

_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")  # an escaped NUL, not an escaped backslash before "u0000"


def _has_nul(request):
    if "\x00" in request.path_info:
        return True
    query = request.META.get("QUERY_STRING", "")
    if "%00" in query or "\x00" in query:
        return True
    content_type = request.content_type or ""
    if request.method in ("GET", "HEAD", "OPTIONS") or not (
            content_type == "application/x-www-form-urlencoded" or content_type.endswith("json")):
        return False
    body = request.body
    return b"%00" in body or b"\x00" in body or (content_type.endswith("json") and bool(_JSON_NUL.search(body)))


class NulGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _has_nul(request):
            return JsonResponse({"error": "invalid_request", "error_description": "NUL characters are not allowed"},
                                status=400)
        return self.get_response(request)
