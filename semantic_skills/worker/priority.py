"""Background work in the worker yields the CPU to routing and to the host.

On Linux a thread has its own nice value, so the loader (after its first
open) and the rebuild thread can step back while the request thread and the
host's event loop keep their priority. Elsewhere this does nothing.
"""

from __future__ import annotations

import os
import sys
import threading

BACKGROUND_NICENESS = 10  # added to the thread's nice value; 19 is the lowest priority


def lower_this_threads_priority() -> None:
    """Make the calling thread yield to the process's other threads and processes (Linux only; never raises)."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, nice + BACKGROUND_NICENESS))
    except OSError:
        pass
