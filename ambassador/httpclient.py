"""A small HTTP/1.1 client for the proxy's own calls (token endpoint); not on the request path."""
from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

from .errors import AmbassadorError


class HTTPError(AmbassadorError):
    pass


async def request(url: str, method: str = "GET", headers: dict | None = None, body: bytes = b"",
                  ssl_context: ssl.SSLContext | None = None, timeout: float = 5.0) -> tuple[int, dict, bytes]:
    async with asyncio.timeout(timeout):
        return await _request(url, method, headers or {}, body, ssl_context)


async def _request(url, method, headers, body, ssl_context):
    u = urlsplit(url)
    secure = u.scheme == "https"
    host = u.hostname or ""
    port = u.port or (443 if secure else 80)
    ctx = None
    if secure:
        ctx = ssl_context or ssl.create_default_context()
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=host if secure else None)
    try:
        target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        authority = u.netloc.rpartition("@")[2]
        lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}", "Connection: close",
                 f"Content-Length: {len(body)}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        status_line = await reader.readline()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise HTTPError(f"malformed status line from {authority}: {status_line[:80]!r}")
        status = int(parts[1])
        resp_headers: dict[str, str] = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            resp_headers[k.strip().lower()] = v.strip()
        if "chunked" in resp_headers.get("transfer-encoding", "").lower():
            data = bytearray()
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    break
                data += await reader.readexactly(size)
                await reader.readexactly(2)
            payload = bytes(data)
        elif "content-length" in resp_headers:
            payload = await reader.readexactly(int(resp_headers["content-length"]))
        else:
            payload = await reader.read()
        return status, resp_headers, payload
    finally:
        writer.close()
