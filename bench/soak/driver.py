"""The soak of issue 34: HAProxy (docs/operations/haproxy.cfg as it is) in front of two production
nodes of one worker each, on a PostgreSQL and a Redis of their own (tests/production/cluster.py
starts them as the tests do). Load is hey, one process per request type, on keep-alive
connections to HAProxy.

1. Throughput of one node (asked directly) and of two (through HAProxy), client credentials and
   refresh each alone, in the same run.
2. The peak: client credentials and refresh together, unlimited, through HAProxy.
3. The soak: the same mix at 70 % of that peak for ``--duration`` seconds; the RSS of each
   node's processes sampled every 10 s; every answer that is not 200 counted as an error.

Prints a report; exits 1 when the soak had an error. Usage: bench/soak/run.sh [--duration 600]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.production.cluster import SECRET, Cluster

CONNECTIONS = 10  # per hey process


def hey(url, body, seconds, rate=None):
    """hey's figures for one run: requests per second and the count of each status (or error)."""
    args = ["hey", "-z", f"{seconds}s", "-c", str(CONNECTIONS), "-m", "POST", "-T",
            "application/x-www-form-urlencoded", "-d", body]
    if rate is not None:
        args += ["-q", f"{rate / CONNECTIONS:.3f}"]
    return subprocess.Popen([*args, url], stdout=subprocess.PIPE, text=True)


def figures(proc):
    out = proc.communicate()[0]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    statuses = {int(code): int(n) for code, n in re.findall(r"\[(\d+)\]\s+(\d+) responses", out)}
    errors = sum(int(n) for n in re.findall(r"\[(\d+)\]\s+[^\n]*?\n", out.partition("Error distribution:")[2]))
    return rps, statuses, errors


def rss_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=600, help="seconds of soak at 70 %% (default 600)")
    parser.add_argument("--measure", type=int, default=10, help="seconds of each throughput cell (default 10)")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="idp-soak-"))
    os.chmod(root, 0o755)
    cluster = Cluster(root)
    try:
        cluster.start()
        refresh_token = cluster.sign_in()["refresh_token"]
        bodies = {"client_credentials": f"grant_type=client_credentials&client_id=app&client_secret={SECRET}",
                  "refresh": f"grant_type=refresh_token&client_id=app&client_secret={SECRET}"
                             f"&refresh_token={refresh_token}"}
        token_path = cluster.oidc.removeprefix(cluster.base) + "/token"
        one_node = f"{cluster.nodes[0].base}{token_path}"
        two_nodes = f"{cluster.base}{token_path}"
        for proc in [hey(two_nodes, body, 3) for body in bodies.values()]:  # warm both nodes up
            figures(proc)
        print(f"machine: {os.cpu_count()} cores (shared), load average before: {os.getloadavg()[0]:.2f}")
        print(f"hey: {CONNECTIONS} connections per process; each node 1 worker (4 threads), not pinned")
        print("\n| grant | one node (direct) req/s | two nodes (HAProxy) req/s | two / one |")
        print("|---|---:|---:|---:|")
        for kind, body in bodies.items():
            one = figures(hey(one_node, body, options.measure))
            two = figures(hey(two_nodes, body, options.measure))
            print(f"| {kind} | {one[0]:,.0f} | {two[0]:,.0f} | {two[0] / one[0]:.2f} |")
        running = {kind: hey(two_nodes, body, options.measure) for kind, body in bodies.items()}
        peak = {kind: figures(proc)[0] for kind, proc in running.items()}
        print("\npeak, both grants together through HAProxy: "
              + ", ".join(f"{kind} {rps:,.0f} req/s" for kind, rps in peak.items()))
        target = {kind: 0.7 * rps for kind, rps in peak.items()}
        pids = {f"{node.name} {'main' if pid == node.proc.pid else 'worker'} {pid}": pid
                for node in cluster.nodes for pid in node.processes()}
        samples = {name: [] for name in pids}
        running = {kind: hey(two_nodes, body, options.duration, rate=target[kind]) for kind, body in bodies.items()}
        started = time.monotonic()
        while any(proc.poll() is None for proc in running.values()):
            for name, pid in pids.items():
                samples[name].append(rss_kib(pid))
            time.sleep(min(10, max(0.1, options.duration + 1 - (time.monotonic() - started))))
        print(f"\nsoak: {options.duration} s at 70 % of the peak; load average after: {os.getloadavg()[0]:.2f}")
        failed = 0
        for kind, proc in running.items():
            rps, statuses, errors = figures(proc)
            bad = sum(n for code, n in statuses.items() if code != 200) + errors
            failed += bad
            print(f"- {kind}: target {target[kind]:,.0f} req/s, served {rps:,.0f} req/s, "
                  f"{sum(statuses.values()):,} answers, {bad} errors {statuses}")
        print("\n| process | RSS first MiB | last | max | samples |")
        print("|---|---:|---:|---:|---:|")
        for name, values in samples.items():
            seen = [v for v in values if v is not None]
            print(f"| {name} | {seen[0] / 1024:.1f} | {seen[-1] / 1024:.1f} | {max(seen) / 1024:.1f} | {len(seen)} |")
        return 1 if failed else 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
