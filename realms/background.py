"""Work that runs after the request that asked for it: in dev mode a thread of the server's own
process (there is no broker to send it to), otherwise a Celery task on a worker. E-mail, the
console's import and export jobs and directory synchronizations start this way."""
import threading

from django.conf import settings
from django.db import connection


def in_process(setting):
    """Whether ``setting`` (``IDP_EMAIL_IN_PROCESS``, ``IDP_JOBS_IN_PROCESS``) asks for a thread;
    unset, in dev mode only."""
    return getattr(settings, setting, settings.IDP_DEV_MODE)


def start(setting, name, work, args, send):
    """``work(*args)`` in a thread called ``name`` where ``setting`` asks for one, else
    ``send(*args)`` (queues the Celery task that does the same work on a worker)."""
    if in_process(setting):
        threading.Thread(target=_closing, args=(work, args), name=name, daemon=True).start()
    else:
        send(*args)


def _closing(work, args):
    try:
        work(*args)
    except Exception:  # noqa: S110 - each work records or logs its own failure; a thread has no caller to tell
        pass
    finally:
        connection.close()  # the thread's own connection must not outlive its work
