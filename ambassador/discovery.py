"""Keeping an upstream's instance list current: static, system resolver, or a DNS server with TTLs."""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import socket
import struct

from .errors import AmbassadorError

log = logging.getLogger("ambassador.discovery")

A, AAAA = 1, 28


class DNSError(AmbassadorError):
    pass


def build_query(qid: int, name: str, qtype: int) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode("idna") for p in name.rstrip(".").split(".") if p)
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack(">HH", qtype, 1)


def _skip_name(data: bytes, pos: int) -> int:
    while True:
        n = data[pos]
        if n == 0:
            return pos + 1
        if n & 0xC0 == 0xC0:
            return pos + 2
        pos += n + 1


def parse_answer(data: bytes, qid: int) -> list[tuple[str, int]]:
    """Addresses and TTLs of the A/AAAA records in a DNS answer."""
    if len(data) < 12:
        raise DNSError("short DNS answer")
    rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
    if rid != qid:
        raise DNSError("DNS answer for another query")
    rcode = flags & 0xF
    if rcode == 3:
        return []
    if rcode:
        raise DNSError(f"DNS error code {rcode}")
    pos = 12
    for _ in range(qd):
        pos = _skip_name(data, pos) + 4
    out = []
    for _ in range(an):
        pos = _skip_name(data, pos)
        rtype, _, ttl, rdlen = struct.unpack(">HHIH", data[pos:pos + 10])
        pos += 10
        rdata = data[pos:pos + rdlen]
        pos += rdlen
        if rtype == A and rdlen == 4:
            out.append((str(ipaddress.IPv4Address(rdata)), ttl))
        elif rtype == AAAA and rdlen == 16:
            out.append((str(ipaddress.IPv6Address(rdata)), ttl))
    return out


class _UDPQuery(asyncio.DatagramProtocol):
    def __init__(self, fut: asyncio.Future):
        self.fut = fut

    def datagram_received(self, data, addr):
        if not self.fut.done():
            self.fut.set_result(data)

    def error_received(self, exc):
        if not self.fut.done():
            self.fut.set_exception(exc)


async def query(nameserver: tuple[str, int], name: str, qtype: int, timeout: float = 2.0) -> list[tuple[str, int]]:
    loop = asyncio.get_running_loop()
    qid = random.getrandbits(16)
    fut = loop.create_future()
    transport, _ = await loop.create_datagram_endpoint(lambda: _UDPQuery(fut), remote_addr=nameserver)
    try:
        transport.sendto(build_query(qid, name, qtype))
        async with asyncio.timeout(timeout):
            return parse_answer(await fut, qid)
    finally:
        transport.close()


async def resolve(dns) -> tuple[list[str], float]:
    """(addresses, seconds until the next lookup) for a DNSConfig."""
    if dns.nameserver is not None:
        answers = []
        for qtype in (A, AAAA):
            answers += await query(dns.nameserver, dns.name, qtype)
        addrs = list(dict.fromkeys(a for a, _ in answers))
        ttl = min((t for _, t in answers), default=dns.refresh)
        return addrs, max(dns.min_ttl, float(ttl))
    # The system resolver does not expose TTLs; re-resolve every ``refresh``.
    infos = await asyncio.get_running_loop().getaddrinfo(dns.name, dns.port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos)), dns.refresh


async def watch(dns, apply, first: asyncio.Future | None = None) -> None:
    """Resolve forever, calling ``apply(addresses)`` on every change. A failed lookup keeps the
    last known list (a resolver hiccup must not empty the upstream) and retries after min_ttl."""
    known: list[str] | None = None
    while True:
        try:
            addrs, wait = await resolve(dns)
            if addrs != known:
                known = addrs
                apply(addrs)
        except (OSError, DNSError, TimeoutError, socket.gaierror) as e:
            log.warning("DNS lookup of %s failed: %s", dns.name, e)
            wait = dns.min_ttl
        if first is not None and not first.done():
            first.set_result(None)
        await asyncio.sleep(wait)
