from .corked cimport CorkedTransport
from .exchange cimport Exchange


cdef class H1Conn:
    cdef public object upstream, inst, loop, parser, drain
    cdef public CorkedTransport transport
    cdef public Exchange ex
    cdef public int generation
    cdef public bint closed, reused, head_only, skip_interim, write_paused, read_paused
    cdef public double idle_since

    cpdef Exchange send(self, bytes head, body, bint chunked, bint head_only)
    cpdef close(self)
    cpdef pause_reading(self)
    cpdef resume_reading(self)
