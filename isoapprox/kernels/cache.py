"""numba's cache, safe when several processes compile at once.

numba saves a compiled kernel by reading the kernel's cache index, adding an
entry that names a new data file, and replacing the index and the data file
(each atomically, the pair not): two processes saving two signatures of one
kernel at the same moment can both pick the same data file name, and the
index left behind can name the other signature's machine code, a crash or a
wrong result in a later run.  isoapprox compiles in several processes at once
(the toy's warm-up, the worker processes of ``--jobs``, the test suite under
pytest-xdist), so every save of a process that imports :mod:`isoapprox.kernels`
holds an exclusive lock of its cache folder (``.isoapprox-save.lock``) from
the index read to the data write.  Loads take no lock: they read files that a
save replaces atomically.
"""

from __future__ import annotations

import os
from typing import Any

from numba.core.caching import IndexDataCacheFile

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, the toy compiles in one process
    fcntl = None

__all__ = ["LOCKED", "lock_cache_saves"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

#: whether this process's numba cache saves hold the folder lock (False where
#: files cannot be locked, or numba's cache class is not the one expected)
LOCKED = False


def lock_cache_saves() -> bool:
    """Make every numba cache save in this process hold its folder's lock (once);
    whether they do."""
    global LOCKED
    if LOCKED:
        return True
    if fcntl is None:  # pragma: no cover - not POSIX
        return False
    save = getattr(IndexDataCacheFile, "save", None)
    if save is None or not hasattr(IndexDataCacheFile, "_load_index"):  # pragma: no cover
        return False

    def locked_save(self: Any, key: Any, data: Any) -> None:
        # no symlink followed, not inherited by the processes this one starts
        fd = os.open(os.path.join(self._cache_path, ".isoapprox-save.lock"),
                     os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            save(self, key, data)
        finally:
            os.close(fd)  # releases the lock

    IndexDataCacheFile.save = locked_save
    LOCKED = True
    return True
