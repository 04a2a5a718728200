"""Several fresh processes of driver.py per variant, all alive at once and loaded in turn, batch by
batch: a process's CPU per request against its own other batches (the same process later) and
against the other processes of its variant (another start of the same code).

If the spread between starts were the machine's (a busy neighbour, the host's clock), it would
move every process's batches of one moment together; a property of the process (its hash seed,
where its memory landed) keeps the same process dear or cheap in every round. A variant is a name
and the environment of its processes: ``seed0:PYTHONHASHSEED=0``, ``noaslr:PYTHONHASHSEED=0,ASLR=0``
(``ASLR=0``: started under ``setarch -R``, the same addresses every start), ``STARTS_GC=...`` as
driver.py reads it; ``random`` alone: Python's random hash seed. With ``--neighbour``, every other
round runs beside a process on the drivers' core that walks 8 MiB over and over (each cache line
once a pass): the same requests on a shared core, read against the rounds without it.

Usage: interleave.py [--procs 4] [--rounds 6] [--n 200] [--scenarios refresh_token,client_credentials]
                     [--neighbour] VARIANT...   (env as driver.py; each driver pinned to core 0)"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

NEIGHBOUR = "data = bytearray(8 << 20)\nwhile True:\n    sum(data[::64])"


def start(variant_env):
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    prefix = ["taskset", "-c", "0"]
    for key, value in variant_env.items():
        if key == "ASLR" and value == "0":
            prefix += ["setarch", os.uname().machine, "-R"]
        else:
            env[key] = value
    process = subprocess.Popen(prefix + [sys.executable, "-m", "bench.starts.driver"], env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert json.loads(process.stdout.readline())["ready"]
    return process


def batch(process, scenario, n):
    process.stdin.write(f"{scenario} {n}\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def parse(spec):
    name, _, pairs = spec.partition(":")
    return name, dict(pair.split("=", 1) for pair in pairs.split(",") if pair)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--scenarios", default="refresh_token,client_credentials")
    parser.add_argument("--neighbour", action="store_true")
    parser.add_argument("variants", nargs="+")
    args = parser.parse_args()
    scenarios = args.scenarios.split(",")
    variants = [parse(spec) for spec in args.variants]
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; {args.procs} processes per variant, "
          f"{args.rounds} rounds of {args.n} requests per scenario", flush=True)
    # Variants alternate in the start order and in every round, so that time hits them alike.
    procs = [(name, i, start(env)) for i in range(args.procs) for name, env in variants]
    # With a neighbour, the odd rounds' samples go to the variant's "+neighbour" row.
    rows = [(name + suffix, i) for name, i, _ in procs for suffix in ("", "+neighbour")]
    samples = {row: {s: [] for s in scenarios} for row in rows}
    totals = {(name, i): {"gc": [0, 0, 0], "minflt": 0, "majflt": 0, "nvcsw": 0, "nivcsw": 0} for name, i, _ in procs}
    for round_ in range(args.rounds):
        shared = args.neighbour and round_ % 2 == 1
        neighbour = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", NEIGHBOUR]) if shared else None
        for name, i, process in (procs if round_ % 2 == 0 else procs[::-1]):
            for scenario in scenarios:
                result = batch(process, scenario, args.n)
                samples[name + ("+neighbour" if shared else ""), i][scenario].append(result["cpu_us"])
                total = totals[name, i]
                total["gc"] = [a + b for a, b in zip(total["gc"], result["gc"])]
                for key in ("minflt", "majflt", "nvcsw", "nivcsw"):
                    total[key] += result[key]
        if neighbour:
            neighbour.kill()
            neighbour.wait()
    for _, _, process in procs:
        process.stdin.close()
        process.wait()
    for name in dict.fromkeys(row for row, _ in rows):
        if not samples[name, 0][scenarios[0]]:
            continue
        print(f"variant {name}:")
        for scenario in scenarios:
            medians = []
            for i in range(args.procs):
                values = samples[name, i][scenario]
                medians.append(statistics.median(values))
                total = totals[name.removesuffix("+neighbour"), i]
                print(f"  {scenario:20s} process {i}: median {medians[-1]:7.0f} µs (batches {min(values):.0f}-"
                      f"{max(values):.0f}) | gc {total['gc']} minflt {total['minflt']} majflt {total['majflt']}"
                      f" csw {total['nvcsw']}/{total['nivcsw']}")
            print(f"  {scenario:20s} between processes: max/min of medians {max(medians) / min(medians):.3f},"
                  f" median {statistics.median(medians):.0f} µs")
    print(f"load average after {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
