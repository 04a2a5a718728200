cdef class Call:
    cdef public object cc, rt, route, span, trace_pairs, instance, error, fallback, base, inst, ex, token, task
    cdef public object resume, kind, cause, detail, sink, body, lc
    cdef public bytes method, url, path
    cdef public str method_s, method_json, version
    cdef public list fields
    cdef public bint filter, hints, framing, keep_alive, started
    cdef public double t0, deadline
    cdef public long long start
    cdef public int attempts, retries, status, allowed_retries
