cdef class Cork:
    cdef public object loop
    cdef public list pending
    cdef object __weakref__

    cpdef flush(self)


cdef class CorkedTransport:
    cdef public object transport
    cdef public Cork cork
    cdef public list pending
    cdef public bint closing

    cpdef write(self, data)
    cpdef close(self)
    cpdef abort(self)
    cpdef bint is_closing(self) except -1
