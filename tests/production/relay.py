"""A loopback TCP relay the tests put between a node and PostgreSQL or Redis, to cut the route.

``blackhole()`` stops forwarding in both directions without closing anything, as a lost route
does: bytes sent are neither answered nor refused, and a new connection is accepted (by the
kernel's backlog, as a relay cannot refuse a handshake) but never reaches the server. ``heal()``
forwards again; what waited goes through, as TCP's retransmissions would deliver it."""
import asyncio
import threading

from tests.idp.test_modes import free_port


class Relay:
    def __init__(self, target_port, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._open = asyncio.Event()
        self._loop.call_soon(self._open.set)
        self._tasks = set()
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True, name="relay")
        self._thread.start()
        assert started.wait(10), "the relay did not start"

    def _serve(self, started):
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", self.port))
        started.set()
        self._loop.run_forever()

    async def _accept(self, client_reader, client_writer):
        self._tasks.add(asyncio.current_task())
        server_writer = None
        try:
            await self._open.wait()
            server_reader, server_writer = await asyncio.open_connection(*self.target)
            await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer))
        except OSError:
            pass
        finally:
            for writer in (client_writer, server_writer):
                if writer is not None:
                    writer.close()
            self._tasks.discard(asyncio.current_task())

    async def _pipe(self, reader, writer):
        try:
            while True:
                await self._open.wait()  # while cut, nothing is read, so nothing is seen: not even a close
                data = await reader.read(65536)
                await self._open.wait()
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    def blackhole(self):
        self._loop.call_soon_threadsafe(self._open.clear)

    def heal(self):
        self._loop.call_soon_threadsafe(self._open.set)

    def close(self):
        async def stop():
            self._server.close()
            while self._tasks:  # a connection let go by the heal may still be starting
                tasks = list(self._tasks)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                self._tasks.difference_update(tasks)
            await asyncio.sleep(0.1)  # the transports' close callbacks

        self.heal()  # a connection waiting on the cut is let go, not left pending
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
