# The hash of the source this module was built from: setup.py defines it, ambassador.compiled checks it.
cdef extern from *:
    const char* AMBASSADOR_SOURCE_HASH
SOURCE_HASH = AMBASSADOR_SOURCE_HASH.decode("ascii")
