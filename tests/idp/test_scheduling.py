"""idp.scheduling: request threads ask for a 12 ms CPU slice, keeping their policy and nice value
(docs/decisions/0047-request-thread-slices.md)."""
import os
import platform
import threading

from idp.buffered_wsgi import BufferedWSGI
from idp.scheduling import SLICE_NS, current_slice, request_slice

# The slice request exists from Linux 6.12 on; older kernels ignore it.
SLICES = platform.system() == "Linux" and tuple(int(p) for p in platform.release().split(".")[:2]) >= (6, 12)


def in_thread(action):
    found = []
    thread = threading.Thread(target=lambda: found.append(action()))
    thread.start()
    thread.join()
    return found[0]


def test_the_request_threads_ask_for_the_longer_slice():
    bridge = BufferedWSGI(lambda environ, start_response: [], threads=1, body_read_timeout=1, max_body_size=None)
    try:
        policy, granted = bridge.pool.submit(current_slice).result()
    finally:
        bridge.pool.shutdown()
    assert policy == 0  # SCHED_OTHER, as before
    if SLICES:
        assert granted == SLICE_NS
    assert in_thread(current_slice)[1] != SLICE_NS  # other threads keep the default


def test_the_slice_keeps_the_threads_nice_value_and_policy():
    def niced_then_sliced():
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, 7)  # a worker the operator runs at nice 7
        os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        took = request_slice(5_000_000)
        return took, os.getpriority(os.PRIO_PROCESS, tid), current_slice()

    took, nice, (policy, granted) = in_thread(niced_then_sliced)
    assert took and nice == 7 and policy == os.SCHED_BATCH
    if SLICES:
        assert granted == 5_000_000
