"""A minimal asyncio HTTP/1.1 receiver for the benchmark: /ok/... answers 200 at once,
/slow/... never answers (the sender times out). Records the arrival time of every webhook-id
and writes them as JSON to the file given when it gets SIGTERM."""
import asyncio
import json
import signal
import sys
import time

arrivals = {}


class Proto(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while True:
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buf[:head_end].decode("latin-1")
            length = 0
            msg_id = ""
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "webhook-id":
                    msg_id = value.strip()
            if len(self.buf) < head_end + 4 + length:
                return
            path = head.split(" ", 2)[1]
            self.buf = self.buf[head_end + 4 + length:]
            if path.startswith("/slow/"):
                continue  # never answer
            arrivals.setdefault(msg_id, {})[path] = time.time()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


async def main(port, out):
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Proto, "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    server.close()
    with open(out, "w") as f:
        json.dump(arrivals, f)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
