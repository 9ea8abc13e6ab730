"""numpy imported without OpenBLAS's threads, for a command that does no linear algebra."""

from __future__ import annotations

import os
import sys


def import_numpy_without_blas_threads() -> None:
    """Import numpy with one OpenBLAS thread: it starts one per core as it loads (~0.05 s of
    CPU on 2 cores) for linear algebra that inspect never does. Only this process's load
    sees the setting (nothing started later inherits it); a user's own setting stays."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401  (OpenBLAS reads the setting now)
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
