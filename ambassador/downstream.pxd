from .corked cimport CorkedTransport
from .exchange cimport Exchange
from .request cimport Call


cdef class ClientConn:
    cdef public object server, loop, parser, queue, upstream_ex
    cdef public CorkedTransport transport
    cdef public Call call, cur
    cdef public bytes url
    cdef public list fields
    cdef public dict lc
    cdef public bint filter, hints, framing, closed, draining, dispatching, write_paused

    cpdef next(self)
    cpdef finish(self, bint keep)
    cpdef bint keeps_alive(self, Call call) except -1


cpdef respond(Call call, Exchange ex)
