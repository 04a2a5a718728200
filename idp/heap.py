"""What a long-lived process does with the objects its start left behind."""
import gc


def freeze_startup_objects():
    """Move every object alive now (Django, the apps, the URL conf: a few hundred thousand, kept
    for the life of the process) out of the cycle collector's sight. A full collection then scans
    only what was made since, instead of stopping every thread for tens of milliseconds
    (docs/decisions/0055-frozen-startup-objects.md)."""
    gc.collect()
    gc.freeze()
