"""What the benchmarks read from /proc."""
import os
from pathlib import Path


def cpu_seconds(pid, children=False):
    """User + system CPU of a process (and, with ``children``, of its children it has waited for,
    such as PostgreSQL backends that exited)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid):
    """CPU seconds of a process and of its children, live and exited (Granian workers, PostgreSQL
    backends and parallel workers): a child that exits between two readings leaves its CPU in
    its parent's cumulative children's time, so the sum only grows."""
    total = cpu_seconds(pid, children=True)
    for child in Path("/proc").iterdir():
        if child.name.isdigit():
            try:
                stat = (child / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                total += cpu_seconds(int(child.name))
    return total
