"""The sliding runtime (``sliding/runtime/include/sliding.h``) from Python, over mpi4py communicators.

A ctypes binding of ``libsliding.so``: the same calls as C, the communicators mpi4py's, the
registered buffers numpy arrays taken by reference (no copy)::

    from mpi4py import MPI
    import numpy as np
    import sliding

    s = sliding.Sliding(MPI.COMM_WORLD, "torus:3x2x2", "x:1", "hybrid")  # block=, node_key=, node_coords=
    # or from the command line, [--block AxB ...] GRID SPARES METHOD then the program's own arguments:
    #   s, rest = sliding.Sliding.from_args(MPI.COMM_WORLD, sys.argv)
    u = np.zeros(tile_shape(s.dims))      # the rank grid, known before start: spares size theirs too
    s.register(u)                         # every process, the same sizes; u stays alive and in place
    cart, role, version = s.start()       # spares wait here
    if role != sliding.Role.FINISHED and version < 0:
        initialize(u, cart)
    it = max(version, 0)                  # a promoted spare resumes at `version`
    while role != sliding.Role.FINISHED:
        try:
            while it < n:
                step(cart, it, u)         # uppercase, buffer-based calls on cart, unchecked
                it += 1
                if s.checkpoint_due(it):  # every --checkpoint-every iterations
                    s.checkpoint(it)
            s.finish()                    # every worker completed: spares released
            break
        except MPI.Exception:             # the first failed call, here or (by the revoke) elsewhere
            cart, role, version = s.recover()   # SlidingError (ERR_NO_SPARE ...) if it cannot
            if role != sliding.Role.FINISHED and version < 0:
                initialize(u, cart)       # no checkpoint yet: start over
            it = max(version, 0)          # every worker resumes at `version`
            s.report_recovery("prog", it)  # at logical rank 0: "prog: recovered iteration=..."
    s.free()

This is sliding.h's check-once style in Python's words. The runtime's error handler on the
Cartesian communicator records the first error and revokes it, then returns the error, which mpi4py
raises as ``MPI.Exception``; the revoke makes the other workers' calls on it raise too, and
:meth:`Sliding.checkpoint` and :meth:`Sliding.finish` raise it when a process failed, here or
elsewhere. So one ``except MPI.Exception`` around the whole loop replaces the per-call checks, and
:meth:`Sliding.recover` is the handler. :meth:`Sliding.ok` (C's sliding_ok) is there for code that
catches the exception inside a step and goes on: it says whether to recover.

Callbacks (:meth:`Sliding.on_recovery`): ``fn(s, old_rank, new_rank, cart)`` after every recovery,
``cart`` the new ``MPI.Cartcomm``; an exception it raises, or a result other than None or 0, ends
the run with ``ERR_CALLBACK`` at every process (the SlidingError of the process where it was raised
has it as its ``__cause__``).

Use the uppercase, buffer-based methods of mpi4py on the Cartesian communicator (``Sendrecv``,
``Gather``, ``Allreduce``): its lowercase collectives (``gather``, ``allreduce``) run on a private
duplicate of the communicator, which the runtime's revoke does not reach, so a survivor could wait
in one for ever.

The library is the one at ``$SLIDING_LIBRARY`` (``eval "$(ftslide env)"`` sets it, with the
project's Open MPI, against which mpi4py must be built too). The runtime's names come from it, as C
spells them: :data:`Status` (``Status.ERR_NO_SPARE``), :data:`Role` (``Role.PROMOTED``) and
:data:`Point` (``Point.ITER``; C spells its name ``"iter"``: ``Point.ITER.name.lower()``).

The examples' line protocol is the C runtime's: :meth:`Sliding.report_recovery` prints the
``PROGRAM: recovered ...`` line, :func:`report_error` the ``PROGRAM: error step=...`` one (after
flushing what Python buffered on the same stream, so that the lines keep their order).

Errors: :class:`SlidingError` (one line: the status name and the runtime's message) for a status
other than ``OK``; :class:`ArrayError`, also a ``ValueError``, for an array that cannot be
registered (not C-contiguous, not writeable); ``MPI.Exception`` from :meth:`Sliding.checkpoint`
and :meth:`Sliding.finish` when a process failed (C's MPI error and ``ERR_FAILED``), so that they
are caught with the failed calls on the Cartesian communicator. Each call costs what its C function
costs, plus a ctypes call.
"""

from __future__ import annotations

import ctypes
import os
import sys
from enum import IntEnum
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np
from mpi4py import MPI

__all__ = ["Sliding", "SlidingError", "ArrayError", "RecoveryTimes", "Status", "Role", "Point", "library",
           "report_error"]

LIBRARY_VARIABLE = "SLIDING_LIBRARY"
_comm = ctypes.c_void_p  # Open MPI's MPI_Comm is a pointer; mpi4py gives it as Comm.handle


class RecoveryTimes(ctypes.Structure):
    """sliding_recovery_times: the last successful recovery's steps, in seconds, and bytes moved."""

    _fields_ = [("agree", ctypes.c_double), ("mapping", ctypes.c_double), ("rebuild", ctypes.c_double),
                ("state", ctypes.c_double), ("commit", ctypes.c_double), ("total", ctypes.c_double),
                ("attempts", ctypes.c_int), ("failed_nodes", ctypes.c_int),
                ("moved_bytes", ctypes.c_int64), ("buddy_bytes", ctypes.c_int64),
                ("spawn", ctypes.c_double), ("guests", ctypes.c_int)]


# sliding_recovery_callback: int fn(sliding_t *s, int old_rank, int new_rank, MPI_Comm cart, void *arg)
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, _comm, ctypes.c_void_p)

_SIGNATURES = {
    "sliding_create_options": (ctypes.c_int, [_comm, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "sliding_create_args": (ctypes.c_int, [_comm, ctypes.POINTER(ctypes.c_int),
                                           ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                           ctypes.POINTER(ctypes.c_void_p)]),
    "sliding_register": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "sliding_checkpoint_due": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64]),
    "sliding_report_recovery": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]),
    "sliding_report_error": (None, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]),
    "sliding_start": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_comm), ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_int64)]),
    "sliding_checkpoint": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64]),
    "sliding_recover": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_comm), ctypes.POINTER(ctypes.c_int),
                                       ctypes.POINTER(ctypes.c_int64)]),
    "sliding_on_recovery": (ctypes.c_int, [ctypes.c_void_p, _CALLBACK, ctypes.c_void_p]),
    "sliding_dims": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
    "sliding_coords": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
    "sliding_ok": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_finish": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_finalize": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_free": (None, [ctypes.c_void_p]),
    "sliding_rank": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_node": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_lane": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_ranks": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_ranks_per_node": (ctypes.c_int, [ctypes.c_void_p]),
    "sliding_failed": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))]),
    "sliding_last_recovery": (None, [ctypes.c_void_p, ctypes.POINTER(RecoveryTimes)]),
    "sliding_killpoint": (None, [ctypes.c_void_p, ctypes.c_char_p]),
    "sliding_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_role_name": (ctypes.c_char_p, [ctypes.c_int]),
    "sliding_point_name": (ctypes.c_char_p, [ctypes.c_int]),
}


class SlidingError(Exception):
    """A status of the runtime other than OK: ``status`` (a :data:`Status`) and ``message``, the
    runtime's one line for it; str() is both."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = _enums()["Status"](status)
        self.message = library().sliding_strerror(status).decode() + detail
        super().__init__(f"{self.status.name}: {self.message}")


class ArrayError(SlidingError, ValueError):
    """An array that cannot be registered; the message says what to give instead."""


@lru_cache(maxsize=None)
def library() -> ctypes.CDLL:
    """libsliding.so at $SLIDING_LIBRARY, its functions typed. A missing or unloadable library is a
    one-line RuntimeError naming the fix."""
    path = os.environ.get(LIBRARY_VARIABLE)
    if not path:
        raise RuntimeError(f"{LIBRARY_VARIABLE} is not set: run eval \"$(ftslide env)\" first (it builds "
                           "libsliding.so and names it)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise RuntimeError(f"{LIBRARY_VARIABLE}={path} cannot be loaded ({exc}): run eval \"$(ftslide env)\" "
                           "again") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def _enum(name: str, name_of) -> type[IntEnum]:
    """The C enumeration whose names name_of(0), name_of(1), ... gives (NULL after the last)."""
    names: list[str] = []
    while (text := name_of(len(names))) is not None:
        names.append(text.decode())
    return IntEnum(name, [(label.upper(), value) for value, label in enumerate(names)])


@lru_cache(maxsize=None)
def _enums() -> dict[str, type[IntEnum]]:
    lib = library()
    return {"Status": _enum("Status", lib.sliding_status_name), "Role": _enum("Role", lib.sliding_role_name),
            "Point": _enum("Point", lib.sliding_point_name)}


def __getattr__(name: str) -> type[IntEnum]:
    """``Status``, ``Role`` and ``Point``: read from the library at first use."""
    if name in ("Status", "Role", "Point"):
        return _enums()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check(status: int) -> None:
    if status != 0:
        raise SlidingError(status)


def _cart(handle: ctypes.c_void_p) -> MPI.Cartcomm:
    """The runtime's Cartesian communicator as an mpi4py object (COMM_NULL for none). The runtime
    owns it and frees it at the next recovery: do not Free it."""
    return MPI.Cartcomm.fromhandle(handle.value or MPI._handleof(MPI.COMM_NULL))


class Sliding:
    """One instance of the runtime over ``comm`` (sliding_create_options): a node grid with spares,
    a method, and the info keys as keywords: ``block`` ("2x2x1"), ``node_key`` (an int: same key,
    same node), ``node_coords`` (the path of a node coordinate file), ``redundancy`` ("buddy",
    "parity:G", "rs:G,M"), ``domains`` ("2x2x1": failure domains as boxes of nodes). Collective
    over ``comm``; raises SlidingError with the status every process returns."""

    def __init__(self, comm: MPI.Comm, grid: str, spares: str, method: str, *, block: str | None = None,
                 node_key: int | None = None, node_coords: str | os.PathLike[str] | None = None,
                 redundancy: str | None = None, domains: str | None = None) -> None:
        self._empty()
        key = ctypes.c_int(node_key) if node_key is not None else None
        _check(library().sliding_create_options(
            MPI._handleof(comm), grid.encode(), spares.encode(), method.encode(),
            block.encode() if block is not None else None, ctypes.byref(key) if key is not None else None,
            os.fsencode(node_coords) if node_coords is not None else None,
            redundancy.encode() if redundancy is not None else None,
            domains.encode() if domains is not None else None, ctypes.byref(self._s)))

    def _empty(self) -> None:
        self._arrays: list[np.ndarray] = []  # registered: kept alive as long as the runtime writes into them
        self._callbacks: list[ctypes._CFuncPtr] = []  # the C callbacks the runtime holds: kept alive with it
        self._callback_error: BaseException | None = None  # what a callback raised in the last recovery
        self._s = ctypes.c_void_p()

    @classmethod
    def from_args(cls, comm: MPI.Comm, argv: Sequence[str]) -> tuple[Sliding, list[str]]:
        """sliding_create_args: ``argv`` as ``sys.argv`` (the program's name first), its runtime
        options (``--block AxB[xC]``, ``--emulate-nodes K``, ``--node-coords FILE``,
        ``--checkpoint-every N``, ``--redundancy POLICY``, ``--domains AxB[xC]``) and then GRID
        SPARES METHOD read by the C runtime, which alone
        knows them. Returns the runtime and the arguments after METHOD. Collective over ``comm``;
        SlidingError with the status every process returns: ``ERR_ARG`` when GRID SPARES METHOD are
        missing or an option is unknown or lacks its value, ``ERR_INFO`` for a bad value (a
        ``--checkpoint-every`` below 1), or the constructor's."""
        s = cls.__new__(cls)
        s._empty()
        words = [os.fsencode(word) for word in argv]
        c_argv = (ctypes.c_char_p * (len(words) + 1))(*words, None)
        argc, pointer = ctypes.c_int(len(words)), ctypes.cast(c_argv, ctypes.POINTER(ctypes.c_char_p))
        _check(library().sliding_create_args(MPI._handleof(comm), ctypes.byref(argc), ctypes.byref(pointer),
                                             ctypes.byref(s._s)))
        return s, list(argv[len(words) - argc.value + 1:])  # argc: the program's name and the rest

    def register(self, array: np.ndarray) -> None:
        """Register ``array`` by reference (no copy): checkpoints and recoveries carry its bytes, and
        a recovery writes the checkpoint back into it. It must be a C-contiguous, writeable numpy
        array, kept alive and in place (no resize) while the runtime lives (this object holds a
        reference). Every process registers the same sizes, before :meth:`start`."""
        status = _enums()["Status"]
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise ArrayError(status.ERR_NOT_CONTIGUOUS, f" (got {_describe(array)})")
        if not array.flags.writeable:
            raise ArrayError(status.ERR_READ_ONLY, f" (got {_describe(array)}: array.copy() is writeable)")
        _check(library().sliding_register(self._s, array.ctypes.data, array.nbytes))
        self._arrays.append(array)

    def on_recovery(self, fn: Callable[[Sliding, int, int, MPI.Cartcomm], int | None]) -> None:
        """Call ``fn(self, old_rank, new_rank, cart)`` after every successful recovery, at every
        process that holds a rank, before :meth:`recover` (or, at a promoted spare, :meth:`start`)
        returns: the logical rank held before (-1: it was waiting), the one held now and the new
        Cartesian communicator; the arrays already hold the checkpoint. ``fn`` returns None or 0;
        another result, or an exception, ends the run: :meth:`recover` raises SlidingError
        ``ERR_CALLBACK`` at every process (chained to the exception where there was one). It must
        not ``Free`` cart. Every process, spares too, registers the same number before :meth:`start`."""

        def call(_s, old_rank: int, new_rank: int, cart: int | None, _arg) -> int:
            try:
                result = fn(self, old_rank, new_rank, _cart(_comm(cart)))
                return 0 if result is None or result == 0 else 1
            except BaseException as exc:  # ctypes would print it and return 0: the runtime must see it
                self._callback_error = exc
                return 1

        callback = _CALLBACK(call)
        _check(library().sliding_on_recovery(self._s, callback, None))
        self._callbacks.append(callback)

    def start(self) -> tuple[MPI.Cartcomm, IntEnum, int]:
        """(Cartesian communicator, role, version): workers return at once (Role.INITIAL), spares wait
        until promoted (Role.PROMOTED, the arrays holding checkpoint ``version``, -1 for none) or
        released (Role.FINISHED, with COMM_NULL)."""
        return self._enter(library().sliding_start)

    def checkpoint(self, version: int) -> None:
        """Checkpoint the registered arrays as ``version``; collective over the workers. Raises
        ``MPI.Exception`` when a process failed during it, or a worker's step had failed before it
        (the previous checkpoint stays)."""
        rc = library().sliding_checkpoint(self._s, version)
        if rc != 0:
            raise MPI.Exception(rc)

    def checkpoint_due(self, iteration: int) -> bool:
        """Whether the checkpoint labelled ``iteration`` is due: every N iterations (``--checkpoint-every
        N``, default 5). Local."""
        return bool(library().sliding_checkpoint_due(self._s, iteration))

    def report_recovery(self, program: str, iteration: int) -> None:
        """At logical rank 0, the line ``PROGRAM: recovered iteration=I failed=... attempts=...`` on
        stdout for the last recovery (nothing if none happened yet)."""
        sys.stdout.flush()
        library().sliding_report_recovery(self._s, program.encode(), iteration)

    def ok(self) -> bool:
        """C's sliding_ok: whether this worker's step may go on (no error recorded on the Cartesian
        communicator since it was built, and it is not revoked). False: recover. Local."""
        return bool(library().sliding_ok(self._s))

    def finish(self) -> None:
        """The end of the run, collective over the workers: an agreement that every worker completed
        (its final collectives included). Returns when they all did; the waiting processes are then
        released and no recovery happens any more. Raises ``MPI.Exception`` when one did not (C's
        ``ERR_FAILED``; its error class MPIX_ERR_PROC_FAILED, as :meth:`checkpoint`'s for a failure
        elsewhere), to be caught with the step's: recover and run again from the checkpoint."""
        rc = library().sliding_finish(self._s)
        if rc == _enums()["Status"].ERR_FAILED:
            raise MPI.Exception(MPI.ERR_PROC_FAILED)
        _check(rc)

    def recover(self) -> tuple[MPI.Cartcomm, IntEnum, int]:
        """After an ``MPI.Exception`` on the Cartesian communicator: (the new one, role, version), the
        arrays holding checkpoint ``version`` (-1: none committed, arrays unchanged: initialise them).
        Raises SlidingError (e.g. ``ERR_NO_SPARE``, ``ERR_CALLBACK``), the same at every survivor."""
        return self._enter(library().sliding_recover)

    def _enter(self, call) -> tuple[MPI.Cartcomm, IntEnum, int]:
        cart, role, version = _comm(), ctypes.c_int(), ctypes.c_int64()
        self._callback_error = None
        status = call(self._s, ctypes.byref(cart), ctypes.byref(role), ctypes.byref(version))
        raised, self._callback_error = self._callback_error, None
        if status == _enums()["Status"].ERR_CALLBACK and raised is not None:
            first = (str(raised).splitlines() or [""])[0]
            raise SlidingError(status, f" ({type(raised).__name__} in the callback: {first})") from raised
        _check(status)
        return _cart(cart), _enums()["Role"](role.value), version.value

    def finalize(self) -> None:
        """Every worker at the end: releases the waiting processes."""
        _check(library().sliding_finalize(self._s))

    def free(self) -> None:
        """Free the runtime's communicators and memory (every process); the arrays are released."""
        library().sliding_free(self._s)
        self._s = ctypes.c_void_p()
        self._arrays.clear()
        self._callbacks.clear()

    @property
    def rank(self) -> int:
        """Logical (Cartesian) rank, -1 if none."""
        return library().sliding_rank(self._s)

    @property
    def node(self) -> int:
        """This process's node: its grid node id."""
        return library().sliding_node(self._s)

    @property
    def lane(self) -> int:
        """Its index among its node's processes."""
        return library().sliding_lane(self._s)

    @property
    def ranks(self) -> int:
        """Logical ranks of the rank grid."""
        return library().sliding_ranks(self._s)

    @property
    def ranks_per_node(self) -> int:
        return library().sliding_ranks_per_node(self._s)

    @property
    def dims(self) -> tuple[int, ...]:
        """The rank grid's sizes, one per dimension (2 or 3), before or after :meth:`start`: what
        ``cart.dims`` will be. SlidingError ``ERR_ARG`` after :meth:`free`."""
        ndims, dims = ctypes.c_int(), (ctypes.c_int * 3)()
        _check(library().sliding_dims(self._s, ctypes.byref(ndims), dims))
        return tuple(dims[:ndims.value])

    @property
    def coords(self) -> tuple[int, ...]:
        """This process's tile, its coordinates in the rank grid (``cart.coords`` once it works), or
        -1s if it holds no rank (a spare); before or after :meth:`start`."""
        ndims = len(self.dims)
        coords = (ctypes.c_int * 3)()
        _check(library().sliding_coords(self._s, coords))
        return tuple(coords[:ndims])

    def failed(self) -> list[int]:
        """The agreed failed nodes, in the order they failed."""
        nodes = ctypes.POINTER(ctypes.c_int32)()
        count = library().sliding_failed(self._s, ctypes.byref(nodes))
        return [nodes[i] for i in range(count)]

    def last_recovery(self) -> RecoveryTimes:
        times = RecoveryTimes()
        library().sliding_last_recovery(self._s, ctypes.byref(times))
        return times

    def killpoint(self, point: str) -> None:
        """Fault injection (sliding.h): SIGKILL this node's processes if FTSLIDE_KILL names it at ``point``."""
        library().sliding_killpoint(self._s, point.encode())


def report_error(s: Sliding | None, program: str, step: str, status: int) -> None:
    """``PROGRAM: error step=STEP status=NAME message=...`` on stderr: at every process for a status
    of the runtime ``s`` (the same everywhere), at rank 0 of COMM_WORLD only when ``s`` is None (its
    creation failed: SlidingError.status)."""
    sys.stderr.flush()
    library().sliding_report_error(s._s if s is not None else None, program.encode(), step.encode(), int(status))


def _describe(array: object) -> str:
    if not isinstance(array, np.ndarray):
        return f"a {type(array).__name__}, not a numpy array"
    return f"a {array.dtype} array of shape {array.shape}, strides {array.strides}"
