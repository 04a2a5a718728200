# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""PROTOTYPE, not the ambassador (decision 0114): the common HTTP/1.1 call of ``callpath.py`` as
typed Cython classes, to count what a compiled call path would cost before rewriting it.

It does the ambassador's work for a call that needs no task (a body-less request, a pooled
connection, no token, no span, one try, a whole answer that needs no retry): the client's request
parsed by httptools into a Call (each header field sorted by the proxy's own table), routing, the
breaker, the balancer, the retry budget's count, the per-try deadline, the pool, the exchange,
the request and the answer written through the tick's corked writes, the route's counters and the
access-log line, byte for byte what the ambassador writes (callpath.py checks it). Anything else
raises NotImplementedError: the retry loop, streaming, HTTP/2 and the rest would be unchanged
Python in a landing, entered from here.

The configuration, the routes and the instances come from the ambassador's own objects (an
``ambassador.server.App``); this module only holds the per-call path as C types.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.errno cimport EAGAIN, EINTR, errno
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec
from posix.unistd cimport write as c_write

import httptools

from ambassador.breaker import CLOSED as _CLOSED
from ambassador.config import IDEMPOTENT_METHODS
from ambassador.downstream import _REQUEST_FIELDS, request_field
from ambassador.downstream import CONNECTION as _R_CONNECTION
from ambassador.downstream import FORWARD as _R_FORWARD
from ambassador.downstream import FORWARDED_HINT as _R_FORWARDED_HINT
from ambassador.downstream import FRAMING as _R_FRAMING
from ambassador.downstream import HINT as _R_HINT
from ambassador.downstream import REPLACED as _R_REPLACED
from ambassador.downstream import _status_line
from ambassador.request import VIA as _VIA
from ambassador.request import _encode_str
from ambassador.telemetry import LATENCY_BUCKETS_NS, _path_json
from ambassador.upstream import _RESPONSE_FIELDS, PLAIN_CONNECTION, response_field
from ambassador.upstream import CONNECTION as _S_CONNECTION
from ambassador.upstream import CONTENT_LENGTH as _S_CONTENT_LENGTH
from ambassador.upstream import FORWARD as _S_FORWARD

cdef int R_FORWARD = _R_FORWARD, R_CONNECTION = _R_CONNECTION, R_REPLACED = _R_REPLACED
cdef int R_HINT = _R_HINT, R_FORWARDED_HINT = _R_FORWARDED_HINT, R_FRAMING = _R_FRAMING
cdef int S_FORWARD = _S_FORWARD, S_CONTENT_LENGTH = _S_CONTENT_LENGTH, S_CONNECTION = _S_CONNECTION
cdef int CLOSED = _CLOSED
cdef bytes VIA = _VIA
cdef dict REQUEST_FIELDS = _REQUEST_FIELDS
cdef dict RESPONSE_FIELDS = _RESPONSE_FIELDS
cdef frozenset PLAIN = PLAIN_CONNECTION
cdef frozenset IDEMPOTENT = IDEMPOTENT_METHODS
cdef int64_t BUCKETS[14]
for _i, _b in enumerate(LATENCY_BUCKETS_NS):
    BUCKETS[_i] = _b
# The access log's line, between its values (ambassador.telemetry.record).
cdef bytes K_TS = b'{"ts":', K_METHOD = b',"method":', K_PATH = b',"path":', K_STATUS = b',"status":'
cdef bytes K_DURATION = b',"duration_ms":', K_COMMA = b',', K_INSTANCE = b',"instance":'
cdef bytes K_TAIL = b',"attempts":1,"retries":0,"error":null,"fallback":null,"trace_id":null}\n'
cdef dict METHODS = {}  # method -> (str, its JSON string as UTF-8)
cdef dict PATHS = {}  # target -> its JSON string as UTF-8 (bounded below)


cdef class CorkedTransport
cdef class Instance
cdef class Upstream
cdef class Route
cdef class Call
cdef class Exchange
cdef class ClientConn
cdef class H1Conn
cdef class Proxy


class Unsupported(NotImplementedError):
    """What the prototype does not do (the ambassador does it off the common path)."""


cdef inline int64_t clock_ns(int clock) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


# ------------------------------------------------------------------------------- corked writes
cdef class Cork:
    """The writes of the loop's current tick, as (transport, bytes or None for a close) pairs laid
    flat in one list; one call_soon per tick writes them (ambassador.corked)."""
    cdef object call_soon, flush_cb
    cdef list pending

    def __init__(self, loop):
        self.call_soon = loop.call_soon
        self.pending = []
        self.flush_cb = self.flush

    cdef inline void add(self, CorkedTransport t, object data) except *:
        if not self.pending:
            self.call_soon(self.flush_cb)
        self.pending.append(t)
        self.pending.append(data)

    def flush(self):
        cdef list pending = self.pending
        cdef Py_ssize_t i, n = len(pending)
        cdef CorkedTransport c
        try:
            for i in range(0, n, 2):
                c = <CorkedTransport>pending[i]
                data = pending[i + 1]
                transport = c.transport
                if transport.is_closing():
                    continue
                if data is None:
                    transport.close()
                else:
                    transport.write(data)
        finally:
            del pending[:]


cdef class CorkedTransport:
    cdef public object transport
    cdef Cork cork
    cdef bint closing

    def __init__(self, transport, Cork cork):
        self.transport = transport
        self.cork = cork

    cdef inline void write(self, bytes data) except *:
        self.cork.add(self, data)

    cdef void close(self) except *:
        if not self.closing:
            self.closing = True
            if self.cork.pending:
                self.cork.add(self, None)
            else:
                self.transport.close()

    cdef bint is_closing(self) except -1:
        return self.closing or self.transport.is_closing()

    cdef void abort(self) except *:
        """Cut now; what was written before goes first (ambassador.corked)."""
        cdef list pending = self.cork.pending
        cdef Py_ssize_t i
        self.closing = True
        for i in range(0, len(pending), 2):
            if pending[i] is self and pending[i + 1] is not None and not self.transport.is_closing():
                self.transport.write(pending[i + 1])
        self.transport.abort()


# ------------------------------------------------------------------------- the access log, in C
cdef class Log:
    """Access-log lines laid into one C buffer, written every 50 ms or past 64 KiB
    (ambassador.telemetry.AccessLog)."""
    cdef int fd
    cdef bint enabled, scheduled
    cdef char* buf
    cdef Py_ssize_t size, cap
    cdef int64_t offset_ns
    cdef object call_later, flush_cb

    def __cinit__(self):
        self.cap = 1 << 17
        self.buf = <char*>malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()

    def __init__(self, fd, loop):
        self.enabled = fd is not None
        self.fd = fd if fd is not None else -1
        self.call_later = loop.call_later
        self.flush_cb = self.flush

    def __dealloc__(self):
        free(self.buf)

    cdef inline void put(self, const char* s, Py_ssize_t n) except *:
        cdef char* grown
        if self.size + n > self.cap:
            while self.size + n > self.cap:
                self.cap *= 2
            grown = <char*>realloc(self.buf, self.cap)
            if grown == NULL:
                raise MemoryError()
            self.buf = grown
        memcpy(self.buf + self.size, s, n)
        self.size += n

    cdef inline void put_bytes(self, bytes b) except *:
        self.put(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))

    cdef inline void put_uint(self, uint64_t v) except *:
        cdef char tmp[24]
        cdef int i = 24
        while True:
            i -= 1
            tmp[i] = <char>(48 + v % 10)
            v //= 10
            if v == 0:
                break
        self.put(tmp + i, 24 - i)

    cdef inline void put_fraction(self, uint64_t v) except *:
        cdef char tmp[4]
        tmp[0] = 46  # '.'
        tmp[1] = <char>(48 + v // 100)
        tmp[2] = <char>(48 + v // 10 % 10)
        tmp[3] = <char>(48 + v % 10)
        self.put(tmp, 4)

    cdef void start_batch(self) except *:
        self.scheduled = True
        self.offset_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC)
        self.call_later(0.05, self.flush_cb)

    def flush(self):
        self.scheduled = False
        self.write_out()

    cdef void write_out(self) except *:
        cdef Py_ssize_t done = 0, n
        if self.fd < 0:
            self.size = 0
            return
        while done < self.size:
            n = c_write(self.fd, self.buf + done, self.size - done)
            if n < 0:
                if errno == EAGAIN or errno == EINTR:
                    continue
                self.size = 0
                raise OSError(errno, "access log write failed")
            done += n
        self.size = 0


# ---------------------------------------------------------------------------- runtime mirrors
cdef class Instance:
    cdef str host
    cdef int port
    cdef bytes request_host, key_json
    cdef int active, failures
    cdef list idle
    cdef bint removed

    def __init__(self, inst):
        self.host = inst.host
        self.port = inst.port
        self.request_host = inst.request_host
        self.key_json = inst.key_json.encode()
        self.idle = []


cdef class Upstream:
    cdef object loop_time
    cdef list instances
    cdef int max_idle, breaker_state, breaker_count, breaker_failures, breaker_window
    cdef bint closed, http2, has_token

    def __init__(self, up):
        self.loop_time = up.loop.time
        self.instances = [Instance(i) for i in up.balancer.instances]
        self.max_idle = up.max_idle
        self.http2 = up.http2
        self.has_token = up.token is not None
        self.breaker_state = up.breaker.state
        self.breaker_window = up.breaker.window


cdef class Route:
    cdef Upstream up
    cdef object methods
    cdef bytes prefix, path, log_names
    cdef tuple headers
    cdef double timeout, per_try
    cdef int retry_max
    cdef bint retry_safe, has_last_good
    cdef bint retry_status[1000]
    cdef uint64_t codes[1000]
    cdef uint64_t buckets[15]
    cdef uint64_t sum_ns

    def __init__(self, route, Upstream up):
        cfg = route.cfg
        self.up = up
        self.methods = route.methods
        self.prefix = route.prefix
        self.path = route.path
        self.headers = route.headers
        self.log_names = route.log_names.encode()
        self.timeout = cfg.timeout
        self.per_try = cfg.per_try_timeout
        self.retry_max = cfg.retry.max
        self.retry_safe = cfg.retry.safe
        self.has_last_good = route.last_good is not None
        for on in cfg.retry.on:
            if isinstance(on, int):
                self.retry_status[on] = True


# --------------------------------------------------------------------------------- the call
cdef class Call:
    cdef ClientConn cc
    cdef bytes method, method_json, url, path
    cdef str method_s, version
    cdef list fields
    cdef dict lc
    cdef bint filter, hints, framing, keep_alive
    cdef object body, error, fallback, span
    cdef double t0, deadline
    cdef int64_t start
    cdef Route route
    cdef Instance inst
    cdef Exchange ex
    cdef int attempts, retries, status, allowed_retries


cdef Call new_call(ClientConn cc, bytes method, bytes url, list fields, dict lc, bint filter_, bint hints,
                   bint framing, str version, bint keep_alive, double t0):
    cdef Call call = Call.__new__(Call)
    cdef const char* u = PyBytes_AS_STRING(url)
    cdef const char* q = <const char*>memchr(u, 63, PyBytes_GET_SIZE(url))  # '?'
    cdef tuple names = METHODS.get(method)
    if names is None:
        s = method.decode("latin-1")
        names = METHODS[method] = (s, _encode_str(s).encode())
    call.cc = cc
    call.method = method
    call.method_s = names[0]
    call.method_json = names[1]
    call.url = url
    call.path = url if q == NULL else url[:q - u]
    call.fields = fields
    call.lc = lc
    call.filter = filter_
    call.hints = hints
    call.framing = framing
    call.version = version
    call.keep_alive = keep_alive
    call.t0 = t0
    call.start = clock_ns(CLOCK_MONOTONIC)
    return call


cdef class Exchange:
    cdef H1Conn conn
    cdef int status
    cdef bytes reason
    cdef list fields, pending
    cdef object length, conn_value
    cdef bint keep_alive, ready, done, body_sent, received, reused
    cdef Call owner

    cdef void release(self) except *:
        cdef H1Conn conn = self.conn
        cdef Upstream up = conn.upstream
        cdef Instance inst = conn.inst
        conn.ex = None
        if self.done and self.keep_alive and self.body_sent and not conn.closed and not up.closed \
                and not inst.removed and len(inst.idle) < up.max_idle:
            conn.idle_since = up.loop_time()
            inst.idle.append(conn)
        else:
            conn.close()


cdef Exchange new_exchange(H1Conn conn, bint reused):
    cdef Exchange ex = Exchange.__new__(Exchange)
    ex.conn = conn
    ex.reason = b""
    ex.fields = []
    ex.pending = []
    ex.keep_alive = True
    ex.reused = reused
    return ex


# ------------------------------------------------------------------------ the client's side
cdef class ClientConn:
    cdef Proxy server
    cdef CorkedTransport transport
    cdef object parser
    cdef list queue
    cdef Call call
    cdef bytes url
    cdef list fields
    cdef dict lc
    cdef bint filter, hints, framing, closed, draining, dispatching

    def __init__(self, Proxy server):
        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.queue = []
        self.url = b""
        self.fields = []
        self.lc = {}

    def connection_made(self, transport):
        self.transport = CorkedTransport(transport, self.server.cork)

    def connection_lost(self, exc):
        self.closed = True  # a call in flight finishes without writing (wrk leaves so at its end)

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            raise Unsupported("a malformed request")
        if self.call is None and self.queue:
            self.next()

    def on_url(self, bytes url):
        self.url = url if not self.url else self.url + url

    def on_header(self, bytes name, bytes value):
        cdef tuple field = REQUEST_FIELDS.get(name)
        if field is None:
            field = request_field(name)
        cdef int action = field[1]
        self.lc[field[0]] = value
        if action == R_FORWARD:
            self.fields += (name, b": ", value, b"\r\n")
        elif action == R_REPLACED:
            self.filter = True
            self.fields += (name, b": ", value, b"\r\n")
        elif action == R_CONNECTION:
            self.filter = True
        elif action == R_HINT:
            self.hints = True
        elif action == R_FORWARDED_HINT:
            self.hints = True
            self.fields += (name, b": ", value, b"\r\n")
        elif action == R_FRAMING:
            self.framing = True

    def on_headers_complete(self):
        p = self.parser
        cdef dict lc = self.lc
        if self.framing:
            te = lc.get(b"transfer-encoding")
            cl = lc.get(b"content-length")
            if te is not None or (cl is not None and cl.strip() != b"0"):
                raise Unsupported("a request body")
        cdef bint keep_alive = p.should_keep_alive()
        version = "1.1" if keep_alive and not (self.filter and b"connection" in lc) else p.get_http_version()
        call = new_call(self, p.get_method(), self.url, self.fields, lc, self.filter, self.hints, self.framing,
                        version, keep_alive, self.server.loop_time())
        self.url = b""
        self.fields = []
        self.lc = {}
        self.filter = self.hints = self.framing = False
        self.queue.append(call)
        if len(self.queue) > 32:
            raise Unsupported("a deep pipeline")

    def on_message_complete(self):
        pass

    cdef void next(self) except *:
        if self.dispatching:
            return
        self.dispatching = True
        try:
            while self.queue and self.call is None and not self.closed:
                self.server.begin(self, <Call>self.queue[0])
        finally:
            self.dispatching = False

    cdef void finish(self, bint keep) except *:
        self.call = None
        del self.queue[0]
        if not keep or self.closed:
            self.closed = True
            self.transport.close()
            return
        if self.queue:
            self.next()
        elif self.draining:
            self.closed = True
            self.transport.close()


# ---------------------------------------------------------------------- the upstream's side
cdef class H1Conn:
    cdef Upstream upstream
    cdef Instance inst
    cdef int generation
    cdef public CorkedTransport transport
    cdef object parser
    cdef Exchange ex
    cdef bint closed, reused, head_only, skip_interim
    cdef double idle_since
    cdef Cork cork

    def __init__(self, Proxy proxy, Upstream upstream, Instance inst, int generation):
        self.upstream = upstream
        self.inst = inst
        self.generation = generation
        self.cork = proxy.cork
        self.parser = httptools.HttpResponseParser(self)

    def connection_made(self, transport):
        self.transport = CorkedTransport(transport, self.cork)

    def connection_lost(self, exc):
        self.closed = True
        if self in self.inst.idle:
            self.inst.idle.remove(self)
        if self.ex is not None and not self.ex.done:
            raise Unsupported("an upstream reset")

    def data_received(self, data):
        cdef Exchange ex = self.ex
        cdef Call owner
        if ex is None:
            raise Unsupported("bytes nobody asked for")
        ex.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            raise Unsupported("a malformed answer")
        if ex.ready:
            owner = ex.owner
            if owner is not None:
                ex.owner = None
                owner.cc.server.head_arrived(owner)

    def on_status(self, bytes reason):
        self.ex.reason = reason

    def on_header(self, bytes name, bytes value):
        action = RESPONSE_FIELDS.get(name)
        if action is None:
            action = response_field(name)
        cdef int a = action
        if a == S_FORWARD:
            self.ex.fields += (name, b": ", value, b"\r\n")
        elif a == S_CONTENT_LENGTH:
            self.ex.length = value
        elif a == S_CONNECTION and value not in PLAIN:
            self.ex.conn_value = value

    def on_headers_complete(self):
        cdef Exchange ex = self.ex
        cdef int status = self.parser.get_status_code()
        if status < 200:
            raise Unsupported("an interim answer")
        ex.status = status
        ex.keep_alive = self.parser.should_keep_alive()
        ex.ready = True
        if self.head_only:
            raise Unsupported("a HEAD request")

    def on_body(self, bytes body):
        self.ex.pending.append(body)

    def on_message_complete(self):
        cdef Exchange ex = self.ex
        if ex is not None and not ex.done:
            ex.done = True

    cdef Exchange send(self, bytes head, bint head_only):
        cdef Exchange ex = new_exchange(self, self.reused)
        self.ex = ex
        self.head_only = head_only
        self.transport.write(head)
        ex.body_sent = True
        return ex

    cdef void close(self) except *:
        if not self.closed:
            self.closed = True
            self.transport.abort()


# ----------------------------------------------------------------------------- the proxy
cdef inline Py_ssize_t fields_size(list fields):
    cdef Py_ssize_t n = 0
    cdef bytes piece
    for piece in fields:
        n += PyBytes_GET_SIZE(piece)
    return n


cdef inline char* put(char* at, bytes b) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    memcpy(at, PyBytes_AS_STRING(b), n)
    return at + n


cdef inline char* put_fields(char* at, list fields) noexcept:
    cdef bytes piece
    for piece in fields:
        at = put(at, piece)
    return at


cdef bytes request_head(Call call, Instance inst):
    """The try's head in one allocation: the request line, Host, the client's fields, Via."""
    cdef Py_ssize_t size = (PyBytes_GET_SIZE(call.method) + 1 + PyBytes_GET_SIZE(call.url)
                            + PyBytes_GET_SIZE(inst.request_host) + fields_size(call.fields)
                            + PyBytes_GET_SIZE(VIA) + 2)
    cdef bytes head = PyBytes_FromStringAndSize(NULL, size)
    cdef char* at = PyBytes_AS_STRING(head)
    at = put(at, call.method)
    at[0] = 32  # ' '
    at = put(at + 1, call.url)
    at = put(at, inst.request_host)
    at = put_fields(at, call.fields)
    at = put(at, VIA)
    at[0] = 13  # CR LF
    at[1] = 10
    return head


cdef bytes whole_answer(bytes status_line, list fields, bint keep, list pending):
    """A whole answer in one allocation: its head, an exact Content-Length and the body."""
    cdef Py_ssize_t body = fields_size(pending), size
    cdef char digits[24]
    cdef int d = 24
    cdef uint64_t v = body
    cdef bytes out
    cdef char* at
    while True:
        d -= 1
        digits[d] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            break
    size = (PyBytes_GET_SIZE(status_line) + fields_size(fields) + 16 + (24 - d) + 2
            + (0 if keep else 19) + 2 + body)
    out = PyBytes_FromStringAndSize(NULL, size)
    at = PyBytes_AS_STRING(out)
    at = put(at, status_line)
    at = put_fields(at, fields)
    memcpy(at, b"Content-Length: ", 16)
    memcpy(at + 16, digits + d, 24 - d)
    at += 16 + 24 - d
    memcpy(at, b"\r\n", 2)
    at += 2
    if not keep:
        memcpy(at, b"Connection: close\r\n", 19)
        at += 19
    memcpy(at, b"\r\n", 2)
    put_fields(at + 2, pending)
    return out


cdef class Proxy:
    cdef object loop, loop_time, call_at, tracing, tick
    cdef double tick_at
    cdef dict waiting
    cdef list routes
    cdef Cork cork
    cdef Log log
    cdef int in_flight, budget_in_flight
    cdef bint draining
    cdef list status_reasons, status_lines

    def __init__(self, app):
        loop = self.loop = app.loop
        self.loop_time = loop.time
        self.call_at = loop.call_at
        self.tracing = app.tracing
        self.tick_at = float("inf")
        self.waiting = {}
        self.cork = Cork(loop)
        self.log = Log(app.access_log.fd, loop)
        ups = {name: Upstream(up) for name, up in app.runtime.upstreams.items()}
        self.routes = [Route(r, ups[r.up.name]) for r in app.runtime.routes]
        self.status_reasons = [None] * 1000
        self.status_lines = [None] * 1000

    def protocol(self):
        return ClientConn(self)

    def upstream_connection(self, int route_index):
        """A connection to the first instance of a route's upstream, to be pooled once made."""
        cdef Route route = self.routes[route_index]
        return H1Conn(self, route.up, route.up.instances[0], 0)

    def pool(self, H1Conn conn):
        conn.inst.idle.append(conn)

    def flush_log(self):
        self.log.write_out()

    cdef Route match(self, Call call):
        cdef Route route
        for route in self.routes:
            if route.methods is not None and call.method not in route.methods:
                continue
            if route.path is not None and call.path != route.path:
                continue
            if route.prefix is not None and (PyBytes_GET_SIZE(call.path) < PyBytes_GET_SIZE(route.prefix) or memcmp(
                    PyBytes_AS_STRING(call.path), PyBytes_AS_STRING(route.prefix), PyBytes_GET_SIZE(route.prefix))):
                continue
            if route.headers:
                raise Unsupported("routes on header values")
            return route
        return None

    cdef void begin(self, ClientConn cc, Call call) except *:
        cdef Route route
        cdef Upstream up
        cdef Instance inst
        cdef H1Conn conn
        self.in_flight += 1
        cc.call = call
        route = call.route = self.match(call)
        if route is None:
            raise Unsupported("no route")
        if self.tracing.active:
            raise Unsupported("spans")
        up = route.up
        call.deadline = call.t0 + route.timeout
        if up.breaker_state != CLOSED:
            raise Unsupported("a breaker not closed")
        if call.hints:
            raise Unsupported("retry hints")
        call.allowed_retries = route.retry_max if route.retry_safe or call.method_s in IDEMPOTENT else 0
        self.budget_in_flight += 1
        if call.filter or call.framing or up.http2 or up.has_token or len(up.instances) != 1:
            raise Unsupported("filtered fields, framing, HTTP/2, a token or several instances")
        inst = call.inst = up.instances[0]
        call.attempts = 1
        inst.active += 1
        conn = self.pooled(up, inst)
        if conn is None:
            self.loop.create_task(self.connect(call, up, inst))
        else:
            self.send(call, conn)

    async def connect(self, Call call, Upstream up, Instance inst):
        """A first call on a new connection: the ambassador's task path, cut to what a benchmark needs."""
        _, conn = await self.loop.create_connection(lambda: H1Conn(self, up, inst, 0), inst.host, inst.port)
        self.send(call, conn)

    cdef void send(self, Call call, H1Conn conn) except *:
        cdef Route route = call.route
        cdef double when
        call.ex = conn.send(request_head(call, call.inst), call.method == b"HEAD")
        call.ex.owner = call
        when = self.loop_time() + route.per_try
        if when > call.deadline:
            when = call.deadline
        self.waiting[call] = when
        if when < self.tick_at:
            if self.tick is not None:
                self.tick.cancel()
            self.tick_at = when
            self.tick = self.call_at(when, self._tick)

    def _tick(self):
        self.tick = None
        self.tick_at = float("inf")
        waiting = self.waiting
        if waiting:
            when = min(waiting.values())
            if when <= self.loop_time() + 0.001:
                raise Unsupported("a per-try timeout")
            self.tick_at = when
            self.tick = self.call_at(when, self._tick)

    cdef H1Conn pooled(self, Upstream up, Instance inst):
        cdef list idle = inst.idle
        cdef H1Conn conn
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.generation == 0 and not conn.transport.is_closing():
                conn.reused = True
                return conn
            conn.close()
        return None

    cdef void head_arrived(self, Call call) except *:
        cdef Exchange ex = call.ex
        cdef Route route = call.route
        cdef Upstream up = route.up
        cdef Instance inst = call.inst
        cdef int status = ex.status
        cdef ClientConn cc
        del self.waiting[call]
        if route.retry_status[status] and call.allowed_retries:
            raise Unsupported("a retry")
        if status == 502 or status == 503 or status == 504:
            raise Unsupported("a failure status")
        inst.failures = 0
        if up.breaker_state == CLOSED and not up.breaker_failures:
            if up.breaker_count < up.breaker_window:
                up.breaker_count += 1
        else:
            raise Unsupported("a breaker with failures")
        self.respond(call, ex)
        inst.active -= 1
        self.budget_in_flight -= 1
        self.in_flight -= 1
        self.record(call)
        cc = call.cc
        cc.finish(call.keep_alive and not cc.draining and not self.draining)

    cdef void respond(self, Call call, Exchange ex) except *:
        cdef ClientConn cc = call.cc
        cdef int status = ex.status
        cdef bint keep = call.keep_alive and not cc.draining and not self.draining
        call.status = status
        if ex.conn_value is not None:
            raise Unsupported("a Connection naming fields")
        if call.method == b"HEAD" or status == 204 or status == 304 or not ex.done:
            raise Unsupported("an answer without a body, or not yet whole")
        if call.route.has_last_good:
            raise Unsupported("a last-good fallback")
        reason = ex.reason
        line = self.status_lines[status]
        if line is None or self.status_reasons[status] != reason:
            line = _status_line(status, reason)
            self.status_lines[status] = line
            self.status_reasons[status] = reason
        if not cc.closed:
            cc.transport.write(whole_answer(line, ex.fields, keep, ex.pending))
        ex.release()

    cdef void record(self, Call call) except *:
        cdef int64_t end = clock_ns(CLOCK_MONOTONIC)
        cdef int64_t elapsed = end - call.start
        cdef Route route = call.route
        cdef int status = call.status, b = 0
        cdef Log log = self.log
        cdef int64_t ms, us
        route.codes[status] += 1
        while b < 14 and BUCKETS[b] < elapsed:
            b += 1
        route.buckets[b] += 1
        route.sum_ns += elapsed
        if not log.enabled:
            return
        if call.error is not None or call.fallback is not None or call.attempts != 1 or call.filter:
            raise Unsupported("the access log's longer line")
        if not log.scheduled:
            log.start_batch()
        ms = (end + log.offset_ns) // 1000000
        us = elapsed // 1000
        path = PATHS.get(call.url)
        if path is None:
            if len(PATHS) > 4096:
                PATHS.clear()
            path = PATHS[call.url] = _path_json(call.url).encode()
        log.put_bytes(K_TS)
        log.put_uint(ms // 1000)
        log.put_fraction(ms % 1000)
        log.put_bytes(K_METHOD)
        log.put_bytes(call.method_json)
        log.put_bytes(K_PATH)
        log.put_bytes(path)
        log.put_bytes(K_STATUS)
        log.put_uint(status)
        log.put_bytes(K_DURATION)
        log.put_uint(us // 1000)
        log.put_fraction(us % 1000)
        log.put_bytes(K_COMMA)
        log.put_bytes(route.log_names)
        log.put_bytes(K_INSTANCE)
        log.put_bytes(call.inst.key_json)
        log.put_bytes(K_TAIL)
        if log.size > 65536:
            log.write_out()
