"""``ambassador --config FILE``: validate the configuration, then run the proxy."""
from __future__ import annotations

import argparse
import logging
import sys

from . import configfile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ambassador", description="Loopback outbound proxy.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args.config, args.check, args.log_level)


def add_arguments(parser) -> None:
    parser.add_argument("--config", required=True, help="YAML configuration file")
    parser.add_argument("--check", action="store_true", help="validate the configuration and exit")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(path: str, check: bool = False, log_level: str = "INFO") -> int:
    logging.basicConfig(level=log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        cfg = configfile.load(path)
    except configfile.ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return 2
    if check:
        print(f"{path}: configuration is valid", file=sys.stderr)
        return 0
    from .server import run as serve

    try:
        serve(cfg)
    except OSError as e:
        print(f"{path}: listener: cannot bind: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
