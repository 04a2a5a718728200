"""The API's one parser: JSON through ``jsonbody.loads`` (nesting limit), errors as a 400."""
from rest_framework import exceptions, parsers

from .jsonbody import loads


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return loads(stream.read() if stream is not None else b"")
        except (ValueError, UnicodeDecodeError):
            raise exceptions.ParseError() from None
