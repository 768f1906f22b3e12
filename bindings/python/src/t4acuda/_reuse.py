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

Threads: a hit takes no lock. The kept handles of a size are a list, and
take() is one list.pop(), a single atomic step, so of threads taking at
once each gets another handle or none. Everything else holds the lock:
keep() (a close), a miss (only to count it), drain(), stats() and the
capture epoch. No counter is written on a hit: hits are derived as
returned - kept - released (each kept handle leaves through a take or a
drain, or is forgotten after a fork), and _kept_bytes is an upper bound
(takes do not lower it) that keep() recounts exactly from the lists before
it would refuse, if a take happened since it last counted, so the limit
holds exactly. drain() swaps in a new dict, then pops each old list until
it is empty: a take racing it gets a handle drain() then does not.
"""

from __future__ import annotations

import os
import threading
from threading import get_ident as _ident
import weakref
from typing import Any, Optional

# Every BufferReuse, so that a forked child forgets the parent's handles.
_ALL: "weakref.WeakSet[BufferReuse]" = weakref.WeakSet()


class BufferReuse:
    """Kept buffer handles of one runtime, by size (see the module doc)."""
    __slots__ = ("limit", "epoch", "_lists", "_lock", "_open", "_kept_bytes", "_taken",
                 "_misses", "_returned", "_refused", "_dropped", "_forgotten",
                 "_owner", "__weakref__")

    def __init__(self, limit: int) -> None:
        # At most INT64_MAX (Runtime checks it), which Runtime.alloc's fast
        # path relies on.
        self.limit = limit
        # Even between graph captures of the runtime, odd during one; a
        # buffer is kept only if no capture began since its allocation.
        self.epoch = 0
        # Kept handles by size. A list is only appended to under the lock,
        # and popped by anyone; the dict only changes under the lock.
        self._lists: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._owner: Optional[int] = None  # the thread holding _lock (see _enter)
        self._open = limit > 0
        # At least the bytes kept (exact after a recount; takes do not lower it).
        self._kept_bytes = 0
        self._taken = False  # a take may have happened since the last recount
        self._misses = 0  # allocations that found none of their size
        self._returned = 0  # closes that kept their handle
        self._refused = 0  # closes of a reusable buffer not kept: over the limit
        self._dropped = 0  # handles released by drain (trim, close, OutOfMemory)
        self._forgotten = 0  # handles dropped in a forked child (the parent's)
        _ALL.add(self)

    def capture_edge(self) -> None:
        """A capture of the runtime begins or ends (Capture)."""
        entered = self._enter()
        try:
            self.epoch += 1
        finally:
            if entered:
                self._exit()

    # Every locked step takes the lock through _enter. A step that finds
    # the lock held by its own thread was entered from inside a locked step
    # of that thread: a finalizer the garbage collector runs on an
    # allocation there (a Buffer's own, or a user's __del__ that closes or
    # allocates one). It must not wait (the lock is not re-entrant: that
    # would hang) and must not change what the step below it is changing;
    # no other thread can be inside, since this thread holds the lock.
    # Waiting for another thread's step is safe, finalizers included: those
    # steps call nothing that waits, and the collector runs in one thread
    # at a time.
    def _enter(self) -> bool:
        """Takes the lock (True), or finds this thread holding it (False:
        do not release it)."""
        lock = self._lock
        if not lock.acquire(False):
            if self._owner == _ident():
                return False
            lock.acquire()
        self._owner = _ident()
        return True

    def _exit(self) -> None:
        self._owner = None
        self._lock.release()

    def take(self, nbytes: int) -> Optional[Any]:
        """A kept handle of exactly `nbytes` bytes, or None. A hit is one
        list.pop() and takes no lock (see the module doc)."""
        lst = self._lists.get(nbytes)
        if lst:
            try:
                h = lst.pop()
            except IndexError:  # another take or a drain had the last one
                pass
            else:
                self._taken = True  # after the pop: a recount begun since sees it
                return h
        entered = self._enter()
        try:
            self._misses += 1  # (entered or not: one store, nothing below reads it)
        finally:
            if entered:
                self._exit()
        return None

    # keep() is _enter/_exit inline (this is the hot path); try/finally
    # still releases the lock if an append runs out of memory. Its common
    # case makes no object the garbage collector tracks (only a collection
    # can run a finalizer inside a locked step: nothing there drops the last
    # reference to an object with one), so it names itself the owner only
    # before it makes one: a new list, or the slow path.
    def keep(self, buf: Any) -> Optional[Any]:
        """Closes `buf`, a Buffer of Runtime.alloc: takes its handle (in the
        same locked step as keeping it, so that of two threads closing it
        one gets the handle) and keeps it if its epoch is current and the
        limit allows. Returns None when it was kept or closed already, else
        the handle, which the caller releases. Entered from inside this
        thread's own locked step (see _enter) it keeps nothing: the handle
        is taken and returned to be released."""
        lock = self._lock
        if not lock.acquire(False):
            if self._owner == _ident():
                h, buf._h = buf._h, None
                return h
            lock.acquire()
        try:
            h = buf._h
            if h is None:
                return None  # closed already
            buf._h = None
            n = buf._desc[0]
            kept = self._kept_bytes + n
            if kept > self.limit or n <= 0 or not self._open \
                    or self.epoch != buf._reuse_epoch:
                self._owner = _ident()
                return self._keep_slow(h, n, buf._reuse_epoch)
            lst = self._lists.get(n)
            if lst is None:
                self._owner = _ident()
                lst = self._lists[n] = []
            lst.append(h)
            self._kept_bytes = kept
            self._returned += 1
            return None
        finally:
            self._owner = None
            lock.release()

    def swap(self, buf: Any) -> Optional[Any]:
        """Takes `buf`'s handle (None: closed already) in one step under the
        lock keep() takes it under, never keeping it (a shared buffer)."""
        entered = self._enter()
        try:
            h, buf._h = buf._h, None
            return h
        finally:
            if entered:
                self._exit()

    def _keep_slow(self, h: Any, n: int, epoch: Optional[int]) -> Optional[Any]:
        """keep() past the common case (the lock held): a buffer of an older
        epoch, a closed reuse, or one the upper bound would refuse."""
        if epoch != self.epoch or not self._open:
            return h  # not counted as refused
        if n > 0 and self._kept_bytes + n > self.limit and self._taken:
            self._recount()
        if n <= 0 or self._kept_bytes + n > self.limit:
            self._refused += 1
            return h
        lst = self._lists.get(n)
        if lst is None:
            lst = self._lists[n] = []
        lst.append(h)
        self._kept_bytes += n
        self._returned += 1
        return None

    def _recount(self) -> None:
        """_kept_bytes exactly, from the lists (the lock held); drops the
        lists that are empty (a take holding one finds it empty, as it
        would have)."""
        self._taken = False  # before counting: a take popping after this sets it again
        total = 0
        empty = []
        for n, lst in self._lists.items():  # only keep() and drain() change the dict
            k = len(lst)
            if k:
                total += n * k
            else:
                empty.append(n)
        for n in empty:
            if not self._lists[n]:  # nothing appends but under the lock
                del self._lists[n]
        self._kept_bytes = total

    def drain(self, close: bool = False) -> list[Any]:
        """Takes every kept handle (the caller releases them); with `close`,
        keeps nothing from now on. Entered from inside this thread's own
        locked step (see _enter) it takes nothing: the next drain does."""
        if not self._enter():
            if close:
                self._open = False
            return []
        try:
            old, self._lists = self._lists, {}
            out: list[Any] = []
            for lst in old.values():
                # Popped one by one, as take() pops: a take racing this gets
                # a handle or IndexError, never one that is also in `out`.
                while True:
                    try:
                        out.append(lst.pop())
                    except IndexError:
                        break
            self._kept_bytes = 0
            self._dropped += len(out)
            if close:
                self._open = False
            return out
        finally:
            self._exit()

    def stats(self) -> dict[str, int]:
        entered = self._enter()  # (not entered: reading only)
        try:
            kept = kept_bytes = 0
            for n, lst in self._lists.items():
                k = len(lst)
                kept += k
                kept_bytes += n * k
            return {"limit_bytes": self.limit, "kept": kept, "kept_bytes": kept_bytes,
                    "hits": self._returned - kept - self._dropped - self._forgotten,
                    "misses": self._misses, "returned": self._returned,
                    "refused": self._refused, "released": self._dropped}
        finally:
            if entered:
                self._exit()

    def _forget(self) -> None:
        # In a forked child (one thread): the handles are the parent's (the
        # library refuses them here); drop them without a call and keep
        # nothing. They count as neither hits nor released.
        self._lock = threading.Lock()
        self._owner = None
        self._forgotten += sum(len(lst) for lst in self._lists.values())
        self._lists = {}
        self._kept_bytes = 0
        self._open = False


def _after_fork_in_child() -> None:
    for r in list(_ALL):
        r._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
