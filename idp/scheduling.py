"""A longer CPU slice for the threads that run requests (the slice request of Linux 6.12's EEVDF
scheduler: ``sched_attr.sched_runtime`` for a SCHED_OTHER or SCHED_BATCH thread).

On one core a worker's request threads take turns. With the kernel's default slice (about 1.4 ms
here) a password check, 7 ms of Argon2id over 7 MiB, is cut several times by the other request
threads, and every switch costs both sides their caches. A 12 ms slice lets a check and most
requests finish before another request thread takes the core: 3 to 9 % less CPU per sign-in here
(docs/decisions/0047-request-thread-slices.md). Threads that wake up with a shorter slice, such
as the event loop's, still preempt them. Kernels before 6.12 ignore the request; on other
architectures, or when the call fails, the thread keeps the default."""
import ctypes
import logging
import platform
import struct

log = logging.getLogger(__name__)

SLICE_NS = 12_000_000
# sched_setattr and sched_getattr (not wrapped by this glibc, nor by Python's os module)
_CALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
# struct sched_attr, version 1: size, policy, flags, nice, priority, runtime, deadline, period,
# util_min, util_max
_ATTR = struct.Struct("IIQiIQQQII")
_FAIR = (0, 3)  # SCHED_OTHER, SCHED_BATCH


def _read():
    """(libc, sched_setattr's number, the calling thread's sched_attr fields), or None."""
    numbers = _CALLS.get(platform.machine())
    if numbers is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(numbers[1], 0, buffer, _ATTR.size, 0) != 0:
        return None
    return libc, numbers[0], _ATTR.unpack(buffer.raw)


def current_slice():
    """(policy, slice in ns) of the calling thread as the kernel reports them, or None."""
    found = _read()
    return None if found is None else (found[2][1], found[2][5])


def request_slice(ns=SLICE_NS):
    """Ask for ``ns`` nanoseconds of slice for the calling thread, keeping its policy and nice
    value. Returns whether the kernel took the request."""
    found = _read()
    if found is None:
        return False
    libc, setattr_, (_, policy, _, nice, priority, *_) = found
    if policy not in _FAIR:  # a real-time policy set by the operator: not ours to change
        return False
    wanted = ctypes.create_string_buffer(_ATTR.pack(_ATTR.size, policy, 0, nice, priority, ns, 0, 0, 0, 0))
    if libc.syscall(setattr_, 0, wanted, 0) != 0:
        log.debug("sched_setattr refused a %d ns slice: errno %d", ns, ctypes.get_errno())
        return False
    return True
