"""idp.buffered_wsgi under a real Granian (ASGI): each rule of the adapter that serves Django in
production (docs/decisions/0017-hardening.md): the body is read before the application runs,
within a deadline (408, connection closed) and a size cap (413); chunked bodies; the WSGI
environ; streaming answers; close() called."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest
import requests

from .test_modes import ROOT, free_port, stop

TIMEOUT, MAX = 2, 1000


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("buffered")
    port = free_port()
    env = dict(os.environ, BUFFERED_TEST_DIR=str(work), BUFFERED_TEST_TIMEOUT=str(TIMEOUT),
               BUFFERED_TEST_MAX=str(MAX), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "tests.idp.buffered_app", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, proc.stdout.read()
        try:
            requests.get(f"{base}/echo", timeout=2)
            break
        except requests.ConnectionError:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.2)
    yield base, port, work
    stop(proc)


def closed(work):
    path = work / "closed"
    return path.read_text().split() if path.exists() else []


def test_environ_fields(server):
    base, port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"POST /echo/caf%C3%A9?q=%C3%A9&x=1 HTTP/1.1\r\nHost: idp.example:8443\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n"
                     b"X-Dup: a\r\nX-Dup: b\r\nCookie: c=1\r\nCookie: d=2\r\nConnection: close\r\n\r\na=b")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"x-multi: a" in head.lower() and b"x-multi: b" in head.lower()  # repeated answer headers kept
    environ = json.loads(body)
    client_port = environ.pop("REMOTE_PORT")
    assert client_port.isdigit()
    assert environ == {
        "REQUEST_METHOD": "POST", "SCRIPT_NAME": "",
        "PATH_INFO": "/echo/café".encode().decode("latin-1"),  # percent-decoded bytes as latin-1
        "QUERY_STRING": "q=%C3%A9&x=1", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(port),
        "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": "3",
        "HTTP_HOST": "idp.example:8443", "HTTP_X_DUP": "a,b", "HTTP_COOKIE": "c=1; d=2",
        "HTTP_CONNECTION": "close", "wsgi.url_scheme": "http", "body": "a=b", "input": "BytesIO",
    }


def test_chunked_request_body_is_read_whole(server):
    base, _, _ = server
    answer = requests.post(f"{base}/echo", data=iter([b"a=1&", b"b=2&", b"c=3"]), timeout=5)
    environ = answer.json()
    assert environ["HTTP_TRANSFER_ENCODING"] == "chunked"
    assert environ["body"] == "a=1&b=2&c=3" and environ["CONTENT_LENGTH"] == "11"


def test_body_over_the_cap_is_refused_413(server):
    base, port, _ = server
    assert requests.post(f"{base}/echo", data=b"x" * MAX, timeout=5).status_code == 200
    assert requests.post(f"{base}/echo", data=b"x" * (MAX + 1), timeout=5).status_code == 413
    # Chunked: no length declared, refused once more than the cap has arrived.
    assert requests.post(f"{base}/echo", data=iter([b"x" * 600, b"x" * 600]), timeout=5).status_code == 413
    # Declared too large: refused before the body is sent.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")


def test_body_deadline_answers_408_and_closes(server):
    _, port, _ = server
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT + 5) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\na=b&")
        answer = b""
        while chunk := sock.recv(4096):  # ends when the server closes the connection
            answer += chunk
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408") and b"connection: close" in answer.lower()
    assert TIMEOUT - 0.5 < elapsed < TIMEOUT + 2


def test_streamed_answer_arrives_chunk_by_chunk_and_is_closed(server):
    base, _, work = server
    with requests.get(f"{base}/stream", stream=True, timeout=5) as answer:
        chunks = answer.iter_content(chunk_size=None)
        assert next(chunks) == b"first;"  # before the application has produced the second chunk
        (work / "go").touch()
        assert b"".join(chunks) == b"second"
    deadline = time.monotonic() + 5
    while "stream" not in closed(work) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "stream" in closed(work)


def test_complete_answer_is_closed(server):
    base, _, work = server
    before = closed(work).count("echo")
    assert requests.get(f"{base}/echo", timeout=5).status_code == 200
    assert closed(work).count("echo") == before + 1
