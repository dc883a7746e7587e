"""Locates the project's C cores: built with CMake in a checkout, shipped inside an installed package.

In a checkout (this package's folder sits in a clone of the repository, as with the editable install
``./bootstrap`` makes) the C cores are built on first use in ``<repo>/build``: shared libraries land in
``build/lib``, programs in ``build/bin`` (see the top-level CMakeLists.txt). A package installed from a
wheel (``pip install .``) carries them in ``ftslide/_native/lib`` and ``ftslide/_native/bin`` and is
never built here. ``CHECKOUT`` is the one place that tells the two apart.

Errors and cost: FtslideError (one line) when CMake is missing, the build fails or a library or
program is not there. ``build_native`` costs a configure the first time (seconds) and a no-op
build (well under a second) after (in an installed package, a directory check); ``bind_library``
and ``c_enum`` one ``dlopen`` and one call per name.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from enum import IntEnum
from pathlib import Path
from typing import Callable

from ..errors import FtslideError

__all__ = ["CHECKOUT", "REPO", "INSTALLED_NATIVE", "require_checkout", "build_native", "native_library",
           "native_program", "bind_library", "CEnum", "c_enum"]

_PACKAGE = Path(__file__).resolve().parents[1]


def _checkout_root(package: Path) -> Path | None:
    """The repository ``package`` (the ``ftslide`` folder) sits in, or None for an installed package.

    A checkout is recognised by the top-level CMakeLists.txt beside the package and a component's
    one below it; a wheel installs neither into site-packages.
    """
    root = package.parent
    if (root / "CMakeLists.txt").is_file() and (root / "sliding" / "CMakeLists.txt").is_file():
        return root
    return None


#: The checkout this package runs from, or None when it is installed (from a wheel).
CHECKOUT = _checkout_root(_PACKAGE)
#: Where an installed package keeps its C cores: lib/ and bin/ as in ``<repo>/build``, and under share/
#: the repository files it reads at run time, at their repository paths.
INSTALLED_NATIVE = _PACKAGE / "_native"
#: The repository root; in an installed package, the copy of the repository files it ships
#: (``INSTALLED_NATIVE / "share"``: only what ``ftslide simulate`` compiles), so that a path
#: ``REPO / ...`` outside that set does not exist there.
REPO = CHECKOUT if CHECKOUT is not None else INSTALLED_NATIVE / "share"
#: Where the C cores are: the CMake build tree of the checkout, or the installed package's copy.
BUILD_DIR = CHECKOUT / "build" if CHECKOUT is not None else INSTALLED_NATIVE


def require_checkout(what: str, alternative: str = "") -> Path:
    """The checkout this package runs from; in an installed package, an FtslideError saying that
    ``what`` (e.g. "ftslide demo") needs one, how to get one, and ``alternative`` if given.
    Cost: none."""
    if CHECKOUT is None:
        raise FtslideError(f"{what} needs a checkout of ftslide (an installed package has no Open MPI build, "
                           "example programs or adapters): clone the repository and run './bootstrap setup' "
                           f"in it{alternative}")
    return CHECKOUT


def build_native(quiet: bool = True, target: str | None = None) -> Path:
    """Configure (once) and build ``target`` (default: every C target); return the build directory.

    In an installed package nothing is built: the directory of its C cores (``INSTALLED_NATIVE``,
    laid out like the build directory) is returned.
    Cost: a no-op build takes well under a second once configured.
    """
    if CHECKOUT is None:
        if not (BUILD_DIR / "lib").is_dir():
            raise FtslideError(f"this installed ftslide has no C cores ({BUILD_DIR / 'lib'} is missing): "
                               "reinstall it with 'pip install' from a checkout of ftslide")
        return BUILD_DIR
    cmake = shutil.which("cmake")
    if cmake is None:
        raise FtslideError("cmake is missing: install it with 'apt-get install cmake ninja-build'")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    out = subprocess.DEVNULL if quiet else None
    try:
        if not (BUILD_DIR / "CMakeCache.txt").exists():
            subprocess.run([cmake, "-S", str(REPO), "-B", str(BUILD_DIR), *generator],
                           check=True, stdout=out, stderr=subprocess.STDOUT if quiet else None)
        result = subprocess.run([cmake, "--build", str(BUILD_DIR), *(["--target", target] if target else [])],
                                capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise FtslideError(f"configuring the C cores failed (cmake exit {exc.returncode}): "
                           f"run 'cmake -S {REPO} -B {BUILD_DIR}' to see why") from None
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["?"]
        raise FtslideError(f"building the C cores failed: {tail[0]} (run 'cmake --build {BUILD_DIR}')")
    return BUILD_DIR


# (an installed package has what its wheel build found: ftproto_sim only where SimGrid was there)
_INSTALLED_HINT = ": reinstall ftslide with its build dependencies there (e.g. libsimgrid-dev), or use a checkout"


def native_library(name: str) -> Path:
    """Path of ``lib<name>.so`` from the C build, building that target first if needed (in an
    installed package: from ``INSTALLED_NATIVE / "lib"``)."""
    path = build_native(target=name) / "lib" / f"lib{name}.so"
    if not path.exists():
        raise FtslideError(f"the C build has no library lib{name}.so (looked in {path.parent})"
                           + _INSTALLED_HINT * (CHECKOUT is None))
    return path


def native_program(name: str) -> Path:
    """Path of program ``name`` from the C build, building that target first if needed (in an
    installed package: from ``INSTALLED_NATIVE / "bin"``)."""
    path = build_native(target=name) / "bin" / name
    if not path.exists():
        raise FtslideError(f"the C build has no program {name} (looked in {path.parent})"
                           + _INSTALLED_HINT * (CHECKOUT is None))
    return path


if __name__ == "__main__":
    import sys

    try:
        print(build_native(quiet=False))
    except FtslideError as exc:
        print(f"ftslide: error: {exc}", file=sys.stderr)
        sys.exit(1)


def bind_library(name: str, signatures: dict, structs: dict, binding: str) -> ctypes.CDLL:
    """``lib<name>.so`` with the argument and result types of ``signatures`` (function name ->
    (restype, argtypes)) declared, after checking that each C struct (``slide_struct_size`` id ->
    ctypes class) has the size the binding module ``binding`` expects."""
    lib = ctypes.CDLL(str(native_library(name)))
    for fn_name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, fn_name)
        fn.restype = restype
        fn.argtypes = argtypes
    for which, struct in structs.items():
        if lib.slide_struct_size(which) != ctypes.sizeof(struct):
            raise FtslideError(f"lib{name}.so does not match {binding} ({struct.__name__[2:]} size "
                               "differs): rebuild with 'cmake --build build'")
    return lib


class CEnum(IntEnum):
    """A member of a C enumeration that a binding read from its library (see :func:`c_enum`):
    ``int(member)`` is the C value, ``member.label`` the C name string, ``member.name`` that string
    in upper case."""

    @property
    def label(self) -> str:
        return type(self)._labels[self.value]  # type: ignore[attr-defined, no-any-return]


def c_enum(name: str, name_of: Callable[[int], bytes | None], base: type[CEnum] = CEnum) -> type[CEnum]:
    """The C enumeration whose names ``name_of`` gives (a C function returning the name of value
    0, 1, 2, ... and NULL after the last), as a subclass of ``base`` (a :class:`CEnum` without
    members, which may add properties) called ``name``.

    This is how Python knows the core's methods, statuses and kill points: C spells each name once.
    Cost: one call per member.
    """
    labels: list[str] = []
    while (text := name_of(len(labels))) is not None:
        labels.append(text.decode())
    enum = base(name, [(label.upper(), value) for value, label in enumerate(labels)])  # type: ignore[call-overload]
    enum._labels = labels  # type: ignore[attr-defined]
    return enum
