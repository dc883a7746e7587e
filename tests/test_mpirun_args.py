"""How ftslide run finds PROGRAM among mpirun's options (no MPI started)."""

from __future__ import annotations

import pytest

from ftslide.errors import FtslideError
from ftslide.toolchain.mpi import split_program


@pytest.mark.parametrize("args,options,program,rest", [
    (["./a.out"], [], "./a.out", []),
    (["-np", "4", "./a.out", "-x", "1"], ["-np", "4"], "./a.out", ["-x", "1"]),
    (["--np=4", "--oversubscribe", "app"], ["--np=4", "--oversubscribe"], "app", []),
    (["--mca", "btl", "tcp,self", "-n", "2", "app", "arg"], ["--mca", "btl", "tcp,self", "-n", "2"], "app", ["arg"]),
    (["-x", "FOO=1", "--map-by", ":OVERSUBSCRIBE", "--tag-output", "app"],
     ["-x", "FOO=1", "--map-by", ":OVERSUBSCRIBE", "--tag-output"], "app", []),
    (["-np", "2", "--", "-weird-name"], ["-np", "2"], "-weird-name", []),
])
def test_split(args, options, program, rest):
    assert split_program(args) == (options, program, rest)


@pytest.mark.parametrize("args,message", [
    ([], "no program"),
    (["-np", "2"], "no program"),
    (["--frobnicate", "app"], "unknown mpirun option '--frobnicate'"),
    (["--mca", "btl"], "needs a value"),
    (["-np"], "needs a value"),
])
def test_errors(args, message):
    with pytest.raises(FtslideError, match=message):
        split_program(args)
