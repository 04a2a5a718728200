"""Serve a WSGI application on an ASGI server, reading each request body before taking a thread.

Granian's WSGI interface hands the application a request once its head is complete, and the
thread running Django then reads the body: a client that trickles its body holds that thread.
Here the event loop reads the whole body first, within a deadline (408 and the connection
closed) and a size cap (413), and only then runs the unchanged WSGI application in a pool of
threads, streaming its answer back. Django's own ASGI handler is not used: it runs sync views
on one thread per process (docs/decisions/0017-hardening.md). Nor is a2wsgi: its ``wsgi.input``
reads the body from the thread that runs the application, without a deadline."""
import asyncio
import io
import sys
from concurrent.futures import ThreadPoolExecutor

from idp.errors import IdpError

TOO_LARGE = b"Request body too large."


class BufferedWSGI:
    def __init__(self, app, *, threads, body_read_timeout, max_body_size):
        self.app = app
        # Request threads ask for a longer CPU slice: a password check then runs to its end.
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi")
        self.body_read_timeout = body_read_timeout
        self.max_body_size = max_body_size  # None: no cap (Django's meaning of None)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":  # Granian runs without lifespan or websockets (start.py)
            raise ValueError(f"unsupported ASGI scope {scope['type']!r}")
        try:
            async with asyncio.timeout(self.body_read_timeout):
                body = await self.read_body(scope, receive)
        except BodyTooLarge:
            return await refuse(send, 413, TOO_LARGE)
        except TimeoutError:
            return await refuse(send, 408, b"Request body not received in time.")
        except ClientGone:
            return
        loop = asyncio.get_running_loop()
        response = Response(loop, send)
        await loop.run_in_executor(self.pool, self.run_app, environ_for(scope, body), response)
        await response.finish()

    async def read_body(self, scope, receive):
        declared = header(scope, b"content-length")
        if self.max_body_size is not None and declared and declared.isdigit() \
                and int(declared) > self.max_body_size:
            raise BodyTooLarge
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if self.max_body_size is not None and size > self.max_body_size:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def run_app(self, environ, response):
        """In a pool thread: the WSGI call, and the iteration of its answer (which may use the
        database), sending each chunk through the event loop; ``close()`` always called."""
        result = self.app(environ, response.start_response)
        try:
            if getattr(result, "streaming", True) is False or isinstance(result, (list, tuple)):
                # A complete answer (Django's non-streaming HttpResponse): sent by the event
                # loop once this thread is done, with no hop per chunk.
                response.complete(b"".join(result))
            else:
                for chunk in result:
                    response.write(chunk)
        finally:
            if hasattr(result, "close"):
                result.close()


class BodyTooLarge(IdpError):
    pass


class ClientGone(IdpError):
    pass


class Response:
    """The answer as the WSGI application gives it, sent as ASGI messages."""

    def __init__(self, loop, send):
        self.loop, self.send = loop, send
        self.start = None  # the http.response.start message, until sent
        self.started = False
        self.body = b""  # a complete answer's body, sent by finish()

    def start_response(self, status, headers, exc_info=None):
        if exc_info and self.started:
            raise exc_info[1].with_traceback(exc_info[2])
        self.start = {
            "type": "http.response.start", "status": int(status[:3]),
            "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers],
        }
        return self.write

    def complete(self, body):
        self.body = body

    def write(self, chunk):
        """From the application's thread: send a chunk now (a streaming answer)."""
        if chunk:
            asyncio.run_coroutine_threadsafe(self.send_chunk(chunk, more_body=True), self.loop).result()

    async def send_chunk(self, chunk, more_body):
        if not self.started:
            self.started = True
            await self.send(self.start)
        await self.send({"type": "http.response.body", "body": chunk, "more_body": more_body})

    async def finish(self):
        await self.send_chunk(self.body, more_body=False)


async def refuse(send, status, text):
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode()),
        (b"connection", b"close"),  # the rest of the body is not read: the connection cannot be reused
    ]})
    await send({"type": "http.response.body", "body": text})


def header(scope, name):
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def environ_for(scope, body):
    """PEP 3333's environ: strings are the bytes as latin-1; the path percent-decoded."""
    server_name, server_port = scope.get("server") or ("localhost", 80)
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode().decode("latin-1"),
        "PATH_INFO": scope["path"].encode().decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": server_name, "SERVER_PORT": str(server_port),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        # Always the length read, also for a chunked body (Django reads CONTENT_LENGTH bytes).
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0), "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
        "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    if scope.get("client"):
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = scope["client"][0], str(scope["client"][1])
    for name, value in scope["headers"]:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key == "CONTENT_LENGTH":
            continue
        if key != "CONTENT_TYPE":
            key = "HTTP_" + key
        value = value.decode("latin-1")
        if key in environ:  # a repeated header: one value (RFC 9110 5.3; cookies as RFC 6265 5.4)
            value = environ[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        environ[key] = value
    return environ


def capped(app, max_body_size):
    """The same cap for the development server (start_dev), which runs Django under WSGI directly:
    a declared body over ``max_body_size`` gets production's 413 instead of Django's 400 page
    (RequestDataTooBig). That server reads no body without a Content-Length, so none escapes."""
    def application(environ, start_response):
        declared = environ.get("CONTENT_LENGTH") or ""
        if max_body_size is not None and declared.isdigit() and int(declared) > max_body_size:
            start_response("413 Request Entity Too Large", [("Content-Type", "text/plain; charset=utf-8"),
                                                            ("Content-Length", str(len(TOO_LARGE)))])
            return [TOO_LARGE]
        return app(environ, start_response)
    return application


def django_application(threads, body_read_timeout):
    """Granian's target loader in each worker process (start.py)."""
    from django.conf import settings
    from django.urls import get_resolver

    from idp.heap import freeze_startup_objects
    from idp.wsgi import application

    get_resolver().url_patterns  # noqa: B018 (the URL conf and the views it imports: loaded now, then frozen)
    freeze_startup_objects()
    return BufferedWSGI(application, threads=threads, body_read_timeout=body_read_timeout,
                        max_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
