"""Reuse of released device buffers, per runtime and keyed by size
(docs/python.md, "Buffer reuse").

A Buffer made by Runtime.alloc that only Python ever referenced gives its
library handle to its runtime's BufferReuse when closed, instead of
releasing it; the next Runtime.alloc of exactly that size on that runtime
takes it back without calling the library. This is as stream-ordered as
the library's pool: the memory goes back only to the runtime that owned
it, whose stream runs the new owner's work after everything the old owner
enqueued there (the library frees a released buffer on that same stream
for the same reason).

Memory is kept only while no other reference to it can exist: Buffer marks
itself shared (never kept) once anything else may hold it or its address
(retain and view, DLPack export, its handle, info and device_pointer, the
CUDA Array Interface, a raw scope's buffer_pointer), and a buffer whose
runtime began a graph capture after it was allocated is released to the
library as before (a graph keeps the buffers it captured).

At most `limit` bytes are kept per runtime; a larger buffer is never kept.
Runtime.trim() and Runtime.close() release what is kept; an allocation the
library refuses with OutOfMemory releases it too and is tried once more.
stats() counts it all (Runtime.reuse_stats()).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Optional

# Every BufferReuse, so that a forked child forgets the parent's handles.
_ALL: "weakref.WeakSet[BufferReuse]" = weakref.WeakSet()


class BufferReuse:
    """Kept buffer handles of one runtime, by size (see the module doc)."""
    __slots__ = ("limit", "epoch", "_lists", "_lock", "_open", "_kept_bytes", "_hits",
                 "_misses", "_returned", "_refused", "_dropped", "__weakref__")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # Even between graph captures of the runtime, odd during one; a
        # buffer is kept only if no capture began since its allocation.
        self.epoch = 0
        self._lists: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._open = limit > 0
        self._kept_bytes = 0  # their bytes
        self._hits = 0  # allocations served from here
        self._misses = 0  # allocations that found none of their size
        self._returned = 0  # closes that kept their handle
        self._refused = 0  # closes of a reusable buffer not kept: over the limit
        self._dropped = 0  # handles released by drain (trim, close, OutOfMemory)
        _ALL.add(self)

    def capture_edge(self) -> None:
        """A capture of the runtime begins or ends (Capture)."""
        with self._lock:
            self.epoch += 1

    # take and give hold the lock without a `with` block (half the cost on
    # this path); try/finally still releases it if an append runs out of
    # memory.
    def take(self, nbytes: int) -> Optional[Any]:
        """A kept handle of exactly `nbytes` bytes, or None."""
        lock = self._lock
        lock.acquire()
        try:
            lst = self._lists.get(nbytes)
            if lst:
                self._kept_bytes -= nbytes
                self._hits += 1
                return lst.pop()
            self._misses += 1
            return None
        finally:
            lock.release()

    def give(self, nbytes: int, handle: Any) -> bool:
        """Keeps `handle` (its buffer closed) if the limit allows; False:
        the caller releases it."""
        lock = self._lock
        lock.acquire()
        try:
            if not self._open or nbytes <= 0 or self._kept_bytes + nbytes > self.limit:
                if self._open:
                    self._refused += 1
                return False
            lst = self._lists.get(nbytes)
            if lst is None:
                lst = self._lists[nbytes] = []
            lst.append(handle)
            self._kept_bytes += nbytes
            self._returned += 1
            return True
        finally:
            lock.release()

    def drain(self, close: bool = False) -> list[Any]:
        """Takes every kept handle (the caller releases them); with `close`,
        keeps nothing from now on."""
        with self._lock:
            out = [h for lst in self._lists.values() for h in lst]
            self._lists = {}
            self._kept_bytes = 0
            self._dropped += len(out)
            if close:
                self._open = False
            return out

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"limit_bytes": self.limit,
                    "kept": sum(len(lst) for lst in self._lists.values()),
                    "kept_bytes": self._kept_bytes, "hits": self._hits,
                    "misses": self._misses, "returned": self._returned,
                    "refused": self._refused, "released": self._dropped}

    def _forget(self) -> None:
        # In a forked child: the handles are the parent's (the library
        # refuses them here); drop them without a call and keep nothing.
        self._lock = threading.Lock()
        self._lists = {}
        self._kept_bytes = 0
        self._open = False


def _after_fork_in_child() -> None:
    for r in list(_ALL):
        r._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
