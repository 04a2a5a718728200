"""Where a process's memory goes when it serves many realms in turn, in process (decision 0107,
"Where the rest goes"): a client-credentials token in each of the first COUNT realms of
bench/realms/setup.py's database (the warm-up of bench/realms/run.sh, without a server), then the
growth of the process's RSS split into Python's small-object allocator (pymalloc: blocks in use
against blocks freed but held in its arenas) and glibc's heap (larger objects), and what the
process-wide decrypt cache of ``realms.data.crypto`` holds. With ``--trace``, the largest
growths by traceback (tracemalloc; it doubles the CPU and inflates RSS, so read its sizes, not
the RSS).

Usage: bench/realms/memory.sh COUNT [--trace]   (runs this with COUNT 1, then COUNT)"""
import base64
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

from realms.data import crypto  # noqa: E402

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

    token(0)  # the process's modules and the first realm, as a worker's first request
    gc.collect()
    before = rss()
    if trace:
        tracemalloc.start(25)
        start = tracemalloc.take_snapshot()
    for n in range(count):
        token(n)
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
