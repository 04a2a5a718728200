from .request cimport Call


cdef class CallStats:
    cdef unsigned long long codes[1000]
    cdef unsigned long long buckets[15]  # LATENCY_BUCKETS and +Inf
    cdef public unsigned long long sum_ns

    cpdef observe(self, int status, long long elapsed_ns)


cpdef record(app, Call call)
