#!/usr/bin/env python3
"""Serves the typed Cython prototype of the ambassador's call (typed_call.pyx, decision 0114) with an
ambassador configuration file, so that run.py --typed can put it under wrk beside the ambassador
and the bare forwarder. Calls off the prototype's common path (see typed_call.pyx) fail loudly.

    python bench/ambassador/typed_server.py CONFIG
"""
from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from callpath import typed_call  # noqa: E402

from ambassador import configfile  # noqa: E402
from ambassador.server import App  # noqa: E402


async def main(path: str) -> None:
    cfg = configfile.load(path)
    app = App(cfg)  # its metrics, access log and runtime; its listener is the prototype's
    await app.runtime.start()
    proxy = typed_call().Proxy(app)
    server = await app.loop.create_server(proxy.protocol, cfg.listener.address, cfg.listener.port, backlog=1024)
    gc.collect()  # as ambassador.server.serve() does
    gc.freeze()
    gc.set_threshold(20000, 20, 50)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    import uvloop

    uvloop.run(main(sys.argv[1]))
