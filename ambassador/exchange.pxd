cdef class Exchange:
    cdef public object conn  # an H1Conn, or h2conn's H2Conn
    cdef public int status
    cdef public object reason, length, conn_value, head, owner, sink, error, pump
    cdef public list fields, pending
    cdef public bint keep_alive, ready, done, body_sent, received, reused

    cpdef head_done(self)
    cpdef data(self, chunk)
    cpdef complete(self)
    cpdef fail(self, exc)
    cpdef attach(self, sink)
    cpdef release(self)
    cpdef abort(self)
    cpdef pause(self)
    cpdef resume(self)
