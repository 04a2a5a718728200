"""A WSGI application served by idp.buffered_wsgi under Granian in tests/idp/test_buffered_wsgi.py.

/echo answers the environ fields and the body it read; /stream streams two chunks, the second
only once the test has received the first (the file ``<BUFFERED_TEST_DIR>/go`` exists); every
answer's close() is recorded in ``<BUFFERED_TEST_DIR>/closed``."""
import json
import os
import sys
import time
from pathlib import Path

from granian import Granian
from granian.constants import Interfaces

from idp.buffered_wsgi import BufferedWSGI

DIR = Path(os.environ.get("BUFFERED_TEST_DIR", "."))


class Answer:
    def __init__(self, name, chunks, streaming):
        self.name, self.chunks, self.streaming = name, chunks, streaming

    def __iter__(self):
        return iter(self.chunks)

    def close(self):
        with open(DIR / "closed", "a") as f:
            f.write(self.name + "\n")


def stream():
    yield b"first;"
    deadline = time.monotonic() + 10
    while not (DIR / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield b"second"


def echo_app(environ, start_response):
    if environ["PATH_INFO"] == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Answer("stream", stream(), streaming=True)
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    fields = {k: v for k, v in environ.items() if isinstance(v, str) and k.isupper()}
    fields.update({"wsgi.url_scheme": environ["wsgi.url_scheme"], "body": body.decode("latin-1"),
                   "input": type(environ["wsgi.input"]).__name__})
    start_response("200 OK", [("Content-Type", "application/json"), ("X-Multi", "a"), ("X-Multi", "b")])
    return Answer("echo", [json.dumps(fields).encode()], streaming=False)


def application():
    return BufferedWSGI(echo_app, threads=2, body_read_timeout=float(os.environ["BUFFERED_TEST_TIMEOUT"]),
                        max_body_size=int(os.environ["BUFFERED_TEST_MAX"]))


if __name__ == "__main__":
    Granian("tests.idp.buffered_app:application", address="127.0.0.1", port=int(sys.argv[1]),
            interface=Interfaces.ASGINL, websockets=False, workers=1, factory=True).serve()
