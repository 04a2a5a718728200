"""Key-sharding listener: an unmodified Redis or memcached client sees one server; each command goes
to one of several instances chosen by a consistent hash of its key."""
from __future__ import annotations

import asyncio
import bisect
import hashlib
import logging

from .exchange import ConnectFailure
from .streams import StreamListener

log = logging.getLogger("ambassador.sharding")

VNODES = 160


class Ring:
    """Ketama-style ring: adding or removing one of N instances moves about 1/N of the keys."""

    def __init__(self, instances):
        points = []
        for inst in instances:
            for i in range(VNODES // 4):
                d = hashlib.md5(f"{inst.key}-{i}".encode()).digest()
                for j in range(4):
                    points.append((int.from_bytes(d[j * 4:j * 4 + 4], "little"), inst))
        points.sort(key=lambda p: p[0])
        self.hashes = [p[0] for p in points]
        self.nodes = [p[1] for p in points]
        self.ident = tuple(i.key for i in instances)

    def lookup(self, key: bytes):
        h = int.from_bytes(hashlib.md5(key).digest()[:4], "little")
        i = bisect.bisect(self.hashes, h)
        return self.nodes[i % len(self.nodes)]


class ShardConn:
    """One pipelined connection to an instance. Requests are written synchronously, in command
    order (buffered until the connection is up), and a single task reads the replies back in the
    same order."""

    def __init__(self, opener, hello: list | None = None):
        self.writer = None
        self.buffer: list[bytes] = []
        self.waiting: asyncio.Queue = asyncio.Queue()
        self.broken: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(opener))
        if hello is not None:
            # The client switched protocol (HELLO 3) before this connection existed: say the same
            # HELLO first, so every reply on it comes in the version the client expects.
            self.request(encode_command(hello), _value_reply).add_done_callback(self._hello_done)

    def _hello_done(self, fut: asyncio.Future) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        if isinstance(fut.result(), RedisError):
            self._break(ConnectionError(f"shard refused HELLO: {fut.result().decode(errors='replace')}"))

    def request(self, data: bytes, parse) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        if self.broken is not None:
            fut.set_exception(self.broken)
            return fut
        self.send_only(data)
        self.waiting.put_nowait((fut, parse))
        return fut

    def send_only(self, data: bytes) -> None:
        if self.broken is not None:
            return
        if self.writer is None:
            self.buffer.append(data)
        else:
            self.writer.write(data)

    def _break(self, exc: BaseException) -> None:
        self.broken = exc
        while not self.waiting.empty():
            f, _ = self.waiting.get_nowait()
            if not f.done():
                f.set_exception(exc)
        if self.writer is not None:
            self.writer.close()

    async def _run(self, opener) -> None:
        try:
            reader, self.writer = await opener()
        except ConnectFailure as e:
            self._break(e)
            return
        self.writer.write(b"".join(self.buffer))
        self.buffer.clear()
        while True:
            fut, parse = await self.waiting.get()
            try:
                result = await parse(reader)
            except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                exc = ConnectionError(f"shard connection lost: {e}")
                if not fut.done():
                    fut.set_exception(exc)
                self._break(exc)
                return
            if not fut.done():
                fut.set_result(result)

    def close(self) -> None:
        self.task.cancel()
        if self.writer is not None:
            self.writer.close()


class ShardListener(StreamListener):
    def __init__(self, app, cfg, name):
        super().__init__(app, cfg, name)
        self.ring: Ring | None = None
        self.proto = Redis() if cfg.kind == "redis" else Memcached()

    def ring_for(self, up) -> Ring:
        insts = up.balancer.instances
        ring = self.ring
        if ring is None or ring.ident != tuple(i.key for i in insts):
            ring = self.ring = Ring(insts)
        return ring

    async def serve(self, reader, writer) -> None:
        up = self.upstream
        conns: dict[str, ShardConn] = {}
        out: asyncio.Queue = asyncio.Queue(maxsize=1024)  # bounded: a client far ahead waits
        self.metric.labels(self.name, "ok").inc()

        def shard(inst) -> ShardConn:
            c = conns.get(inst.key)
            if c is None or c.broken is not None:
                c = conns[inst.key] = ShardConn(lambda: self.open(up, inst), ctx.hello)
            return c

        async def write_replies() -> None:
            while True:
                item = await out.get()
                if item is None:
                    return
                try:
                    data = item if isinstance(item, bytes) else await item
                except (ConnectFailure, ConnectionError) as e:
                    data = self.proto.error(str(e))
                if data:
                    writer.write(data)
                    await writer.drain()

        writer_task = asyncio.get_running_loop().create_task(write_replies())
        ctx = Context(self, up, shard)
        try:
            while True:
                cmd = await self.proto.read_command(reader)
                if cmd is None:
                    break
                reply = self.proto.dispatch(cmd, ctx)
                if reply is QUIT:
                    break
                if reply is not None:
                    await out.put(reply)
        finally:
            await out.put(None)
            try:
                async with asyncio.timeout(10):
                    await writer_task
            except (TimeoutError, ConnectionError):
                writer_task.cancel()
            for c in conns.values():
                c.close()


QUIT = object()


class Context:
    """What a protocol needs to send a command: the ring and a connection per instance."""

    def __init__(self, listener: ShardListener, up, shard):
        self.listener = listener
        self.up = up
        self.shard = shard
        self.resp = 2  # the Redis protocol version the client asked for (HELLO)
        self.hello: list | None = None  # that HELLO, replayed on every new shard connection

    def instance(self, key: bytes):
        return self.listener.ring_for(self.up).lookup(key)

    def instances(self):
        return list(self.up.balancer.instances)

    def send(self, key: bytes, data: bytes, parse) -> asyncio.Future:
        return self.shard(self.instance(key)).request(data, parse)

    def send_to(self, inst, data: bytes, parse) -> asyncio.Future:
        return self.shard(inst).request(data, parse)

    def send_only(self, key: bytes, data: bytes) -> None:
        self.shard(self.instance(key)).send_only(data)


# ---------------------------------------------------------------------------------------- Redis
class RedisError(bytes):
    """An error reply ('-ERR ...'); kept apart so merged replies can pass it on."""


def encode_command(args) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


async def read_reply(reader) -> tuple[object, bytes]:
    """(value, raw bytes) of one reply, RESP2 or RESP3. The raw bytes are relayed to the client as
    they came; the value is used only where the proxy merges replies from several shards."""
    line = await reader.readuntil(b"\r\n")
    t = line[:1]
    if t == b"+":
        return line[1:-2], line
    if t == b"-":
        return RedisError(line[1:-2]), line
    if t == b":":
        return int(line[1:-2]), line
    if t == b"$" or t == b"=" or t == b"!":  # bulk string, verbatim string (RESP3), blob error (RESP3)
        n = int(line[1:-2])
        if n < 0:
            return None, line
        data = await reader.readexactly(n + 2)
        value = data[:-2]
        if t == b"!":
            value = RedisError(value)
        elif t == b"=":
            value = value[4:]  # "txt:" or "mkd:" format prefix
        return value, line + data
    if t == b"*" or t == b"~" or t == b">" or t == b"%" or t == b"|":  # array, set, push, map, attribute
        n = int(line[1:-2])
        if n < 0:
            return None, line
        count = 2 * n if t == b"%" or t == b"|" else n
        items, raws = [], [line]
        for _ in range(count):
            v, r = await read_reply(reader)
            items.append(v)
            raws.append(r)
        if t == b"|":
            # Attributes describe the reply that follows them; relay both, use the reply's value.
            v, r = await read_reply(reader)
            raws.append(r)
            return v, b"".join(raws)
        if t == b"%":
            items = list(zip(items[::2], items[1::2]))
        return items, b"".join(raws)
    if t == b"_":  # null (RESP3)
        return None, line
    if t == b"#":  # boolean (RESP3)
        return line[1:-2] == b"t", line
    if t == b",":  # double (RESP3)
        return float(line[1:-2]), line
    if t == b"(":  # big number (RESP3)
        return int(line[1:-2]), line
    raise ValueError(f"unexpected reply type {line[:20]!r}")


async def _raw_reply(reader) -> bytes:
    return (await read_reply(reader))[1]


async def _value_reply(reader):
    return (await read_reply(reader))[0]


class Redis:
    # Commands whose keys are all the arguments after the name.
    MULTI_KEY_SUM = {b"DEL", b"UNLINK", b"EXISTS", b"TOUCH"}
    NO_KEY_LOCAL = {b"PING", b"ECHO", b"QUIT", b"CLIENT", b"SELECT", b"COMMAND", b"READONLY"}
    BROADCAST = {b"FLUSHDB", b"FLUSHALL", b"DBSIZE", b"KEYS"}
    UNSUPPORTED = {b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH", b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE",
                   b"UNSUBSCRIBE", b"PUNSUBSCRIBE", b"MONITOR", b"SCAN", b"RANDOMKEY", b"SWAPDB", b"MOVE", b"MIGRATE",
                   b"WAIT", b"SCRIPT", b"FUNCTION", b"CONFIG", b"SHUTDOWN", b"DEBUG", b"SAVE", b"BGSAVE", b"INFO",
                   b"PUBLISH", b"OBJECT", b"RENAME", b"RENAMENX", b"SMOVE", b"SINTERSTORE", b"SUNIONSTORE",
                   b"SDIFFSTORE", b"ZUNIONSTORE", b"ZINTERSTORE", b"BLMOVE", b"LMOVE", b"RPOPLPUSH", b"BRPOPLPUSH",
                   b"COPY", b"MSETNX", b"BITOP"}

    @staticmethod
    def error(msg: str) -> bytes:
        return b"-ERR ambassador: " + msg.replace("\r", " ").replace("\n", " ").encode() + b"\r\n"

    async def read_command(self, reader):
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.IncompleteReadError:
            return None
        if line[:1] == b"*":
            args = []
            for _ in range(int(line[1:-2])):
                n = int((await reader.readuntil(b"\r\n"))[1:-2])
                args.append((await reader.readexactly(n + 2))[:-2])
            return args
        return line.split()  # inline command (telnet style)

    def dispatch(self, args, ctx: Context):
        if not args:
            return None
        name = args[0].upper()
        if name in self.NO_KEY_LOCAL:
            return self._local(name, args)
        if name == b"HELLO":
            return self._hello(args, ctx)
        if name in self.UNSUPPORTED:
            return self.error(f"{name.decode()} is not supported through the sharding proxy")
        if name in self.BROADCAST:
            return self._broadcast(name, args, ctx)
        if name == b"MGET":
            return self._mget(args, ctx)
        if name == b"MSET":
            return self._mset(args, ctx)
        if name in self.MULTI_KEY_SUM and len(args) > 2:
            return self._sum(name, args, ctx)
        if name in (b"EVAL", b"EVALSHA"):
            if len(args) < 4 or not args[2].isdigit() or int(args[2]) < 1:
                return self.error("EVAL needs at least one key to choose a shard")
            keys = args[3:3 + int(args[2])]
            insts = {ctx.instance(k).key for k in keys}
            if len(insts) > 1:
                return self.error("EVAL keys live on different shards")
            return ctx.send(keys[0], encode_command(args), _raw_reply)
        if len(args) < 2:
            return self.error(f"{name.decode()} has no key to shard on")
        return ctx.send(args[1], encode_command(args), _raw_reply)

    def _local(self, name, args):
        if name == b"PING":
            return b"+PONG\r\n" if len(args) == 1 else b"$%d\r\n%b\r\n" % (len(args[1]), args[1])
        if name == b"ECHO" and len(args) == 2:
            return b"$%d\r\n%b\r\n" % (len(args[1]), args[1])
        if name == b"QUIT":
            return QUIT
        if name == b"SELECT":
            return b"+OK\r\n" if args[1:] == [b"0"] else self.error("only database 0 is available")
        if name == b"COMMAND":
            return b"*0\r\n"
        return b"+OK\r\n"  # CLIENT SETNAME/SETINFO, READONLY: nothing to carry to a shard

    def _hello(self, args, ctx):
        """HELLO goes to every shard, so each backend connection speaks the protocol version the
        client chose; the client gets the first shard's own answer (a real server's HELLO reply).
        Connections opened later replay it first (ShardConn)."""
        if len(args) > 1 and args[1] not in (b"2", b"3"):
            return b"-NOPROTO unsupported protocol version\r\n"
        insts = ctx.instances()
        if not insts:
            return self.error("no instances")
        futs = [ctx.send_to(i, encode_command(args), read_reply) for i in insts]
        if len(args) > 1:
            ctx.resp = int(args[1])
            ctx.hello = list(args)
        return self._combine_hello(futs)

    async def _combine_hello(self, futs):
        replies = [await f for f in futs]
        for value, raw in replies:
            if isinstance(value, RedisError):
                return raw
        return replies[0][1]

    def _broadcast(self, name, args, ctx):
        return self._combine_broadcast(name, [ctx.send_to(i, encode_command(args), _value_reply)
                                              for i in ctx.instances()])

    async def _combine_broadcast(self, name, futs):
        replies = [await f for f in futs]
        for r in replies:
            if isinstance(r, RedisError):
                return b"-" + r + b"\r\n"
        if name == b"DBSIZE":
            return b":%d\r\n" % sum(replies)
        if name == b"KEYS":
            keys = [k for r in replies for k in r]
            return b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%b\r\n" % (len(k), k) for k in keys)
        return b"+OK\r\n"

    def _groups(self, keys, ctx):
        groups: dict = {}
        for pos, key in enumerate(keys):
            inst = ctx.instance(key)
            groups.setdefault(inst.key, (inst, []))[1].append(pos)
        return groups.values()

    def _mget(self, args, ctx):
        keys = args[1:]
        groups = list(self._groups(keys, ctx))
        futs = [ctx.send_to(inst, encode_command([b"MGET"] + [keys[p] for p in pos]), _value_reply)
                for inst, pos in groups]
        return self._combine_mget(len(keys), groups, futs, b"_\r\n" if ctx.resp == 3 else b"$-1\r\n")

    async def _combine_mget(self, n, groups, futs, null: bytes):
        out: list = [None] * n
        replies = [await f for f in futs]
        for (_inst, pos), values in zip(groups, replies):
            if isinstance(values, RedisError):
                return b"-" + values + b"\r\n"
            for p, v in zip(pos, values):
                out[p] = v
        return b"*%d\r\n" % len(out) + b"".join(null if v is None else b"$%d\r\n%b\r\n" % (len(v), v)
                                                  for v in out)

    def _mset(self, args, ctx):
        if len(args) < 3 or len(args) % 2 == 0:
            return self.error("wrong number of arguments for MSET")
        keys = args[1::2]
        return self._combine_ok([
            ctx.send_to(inst, encode_command([b"MSET"] + [x for p in pos for x in (keys[p], args[2 + 2 * p])]),
                        _value_reply) for inst, pos in self._groups(keys, ctx)])

    async def _combine_ok(self, futs):
        for f in futs:
            r = await f
            if isinstance(r, RedisError):
                return b"-" + r + b"\r\n"
        return b"+OK\r\n"

    def _sum(self, name, args, ctx):
        keys = args[1:]
        return self._combine_sum([ctx.send_to(inst, encode_command([name] + [keys[p] for p in pos]), _value_reply)
                                  for inst, pos in self._groups(keys, ctx)])

    async def _combine_sum(self, futs):
        replies = [await f for f in futs]
        for r in replies:
            if isinstance(r, RedisError):
                return b"-" + r + b"\r\n"
        return b":%d\r\n" % sum(replies)


# ------------------------------------------------------------------------------------ memcached
async def _mc_line(reader) -> bytes:
    return await reader.readuntil(b"\r\n")


async def _mc_values(reader) -> bytes:
    """VALUE blocks up to (not including) END."""
    parts = []
    while True:
        line = await reader.readuntil(b"\r\n")
        if line == b"END\r\n":
            return b"".join(parts)
        if not line.startswith(b"VALUE "):
            raise ValueError(f"unexpected memcached reply {line[:40]!r}")
        n = int(line.split()[3])
        parts.append(line + await reader.readexactly(n + 2))


class Memcached:
    STORAGE = {b"set", b"add", b"replace", b"append", b"prepend", b"cas"}
    KEYED = {b"delete", b"incr", b"decr", b"touch"}
    RETRIEVAL = {b"get": 1, b"gets": 1, b"gat": 2, b"gats": 2}

    @staticmethod
    def error(msg: str) -> bytes:
        return b"SERVER_ERROR ambassador: " + msg.replace("\r", " ").replace("\n", " ").encode() + b"\r\n"

    async def read_command(self, reader):
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.IncompleteReadError:
            return None
        parts = line.split()
        if parts and parts[0] in self.STORAGE and len(parts) >= 5:
            data = await reader.readexactly(int(parts[4]) + 2)
            return parts, line + data
        return parts, line

    def dispatch(self, cmd, ctx: Context):
        parts, raw = cmd
        if not parts:
            return b"ERROR\r\n"
        name = parts[0]
        noreply = parts[-1] == b"noreply"
        if name in self.STORAGE or name in self.KEYED:
            if len(parts) < 2:
                return b"ERROR\r\n"
            if noreply:
                ctx.send_only(parts[1], raw)
                return None
            return ctx.send(parts[1], raw, _mc_line)
        if name in self.RETRIEVAL:
            first = self.RETRIEVAL[name]
            keys = parts[first:]
            if not keys:
                return b"ERROR\r\n"
            return self._retrieve(parts[:first], keys, ctx)
        if name == b"version":
            return b"VERSION ambassador\r\n"
        if name == b"quit":
            return QUIT
        if name == b"flush_all":
            return self._flush(raw, noreply, ctx)
        return b"ERROR\r\n"

    def _retrieve(self, head, keys, ctx):
        groups: dict = {}
        for key in keys:
            inst = ctx.instance(key)
            groups.setdefault(inst.key, (inst, []))[1].append(key)
        return self._join([ctx.send_to(inst, b" ".join(head + ks) + b"\r\n", _mc_values)
                           for inst, ks in groups.values()])

    async def _join(self, futs):
        return b"".join([await f for f in futs]) + b"END\r\n"

    def _flush(self, raw, noreply, ctx):
        if noreply:
            for inst in ctx.instances():
                ctx.shard(inst).send_only(raw)
            return None
        return self._combine_flush([ctx.send_to(i, raw, _mc_line) for i in ctx.instances()])

    async def _combine_flush(self, futs):
        replies = [await f for f in futs]
        bad = [r for r in replies if r != b"OK\r\n"]
        return bad[0] if bad else b"OK\r\n"
