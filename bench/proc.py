"""What the benchmarks read from /proc."""
import os
from pathlib import Path


def cpu_seconds(pid, children=False):
    """User + system CPU of a process (and, with ``children``, of its children it has waited for,
    such as PostgreSQL backends that exited)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")
