"""Where a process's memory goes when it serves many realms in turn, in process (decision 0107,
"Where the rest goes"): a client-credentials token in each of the first COUNT realms of
bench/realms/setup.py's database (the warm-up of bench/realms/run.sh, without a server), then the
growth of the process's RSS split into Python's small-object allocator (pymalloc: blocks in use
against blocks freed but held in its arenas) and glibc's heap (larger objects), and what the
process-wide decrypt cache of ``realms.data.crypto`` holds. The process freezes its start-up
objects first, as a Granian worker does (decision 0055), so that the cycle collector runs as often
as in a worker; before the last collection it counts the realm configurations still in memory
against those the cache keeps, and what that collection finds unreachable (cyclic garbage: what
waits for a full collection instead of being freed when the cache drops it). With ``--trace``, the largest
growths by traceback (tracemalloc; it doubles the CPU and inflates RSS, so read its sizes, not
the RSS).

Usage: bench/realms/memory.sh COUNT [--trace]   (runs this with COUNT 1, then COUNT)"""
import base64
import collections
import ctypes
import gc
import os
import re
import sys
import tempfile
import tracemalloc

import django

django.setup()

from django.test import Client  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from idp.heap import freeze_startup_objects  # noqa: E402
from realms.data import crypto, realm_cache  # noqa: E402

SECRET = "bench-secret-0123456789abcdefghijklmnop"  # bench/realms/setup.py's


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def pymalloc():
    """(arenas, MiB in blocks in use, MiB in blocks available) of Python's small-object allocator."""
    # It writes to the C-level stderr (descriptor 2), not to sys.stderr.
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()

    def number(label):
        return int(re.search(rf"# {label}\s*=\s*([\d,]+)", text).group(1).replace(",", ""))
    return (number("arenas allocated current"), number("bytes in allocated blocks") / 2**20,
            number("bytes in available blocks") / 2**20)


def main(count, trace):
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    client = Client(HTTP_HOST="127.0.0.1",
                    HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"app:{SECRET}".encode()).decode())

    def token(n):
        answer = client.post(f"/realms/realm-{n:04d}/protocol/openid-connect/token", {"grant_type": "client_credentials"})
        assert answer.status_code == 200, answer.content[:300]

    get_resolver().url_patterns  # noqa: B018 (as idp.buffered_wsgi.django_application: loaded, then frozen)
    freeze_startup_objects()
    token(0)  # the process's modules and the first realm, as a worker's first request
    gc.collect()
    before = rss()
    if trace:
        tracemalloc.start(25)
        start = tracemalloc.take_snapshot()
    full_collections = gc.get_stats()[2]["collections"]
    for n in range(count):
        token(n)
    full_collections = gc.get_stats()[2]["collections"] - full_collections
    configs = sum(isinstance(o, realm_cache.RealmConfig) for o in gc.get_objects())
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    gc.set_debug(0)
    garbage = collections.Counter(type(o).__qualname__ for o in gc.garbage)
    print(f"{count} realm(s): realm configurations in memory {configs} (kept {len(realm_cache._configs._entries)}), "
          f"{full_collections} full collections meanwhile; "
          f"cyclic garbage {len(gc.garbage)} objects: {', '.join(f'{n} {t}' for t, n in garbage.most_common(8))}")
    gc.garbage.clear()
    gc.collect()
    after = rss()
    heap = libc.mallinfo2()
    arenas, used, available = pymalloc()
    print(f"{count} realm(s): RSS {before:.1f} -> {after:.1f} MiB (+{after - before:.1f}); pymalloc {arenas} arenas, "
          f"{used:.1f} MiB in use, {available:.1f} MiB freed but held; glibc heap {heap.uordblks / 2**20:.1f} MiB "
          f"in use, {heap.fordblks / 2**20:.1f} MiB free; decrypt cache {crypto._decrypt_cached.cache_info()}")
    if trace:
        print(f"traced: {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB live")
        for stat in tracemalloc.take_snapshot().compare_to(start, "traceback")[:15]:
            ours = [f for f in stat.traceback if "site-packages" not in f.filename and "/lib/python" not in f.filename]
            where = ours[-1] if ours else stat.traceback[-1]
            print(f"  +{stat.size_diff / 2**10:8.0f} KiB {stat.count_diff:7d} blocks  {where.filename}:{where.lineno}")


if __name__ == "__main__":
    main(int(sys.argv[1]), "--trace" in sys.argv[2:])
