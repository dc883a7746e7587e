"""Examples are tests: every code example of docs/sliding-runtime.md and the usage example of sliding.h
is built the way the doc says, run failure-free, run with a worker node killed in the middle of the run
and run with a spare node killed while it waits; the three runs must end with the same checksum.

What counts as an example:
- the usage example in sliding.h's first comment: the indented code that starts with ``sliding_t *s;``,
  its `` * `` prefix stripped, its ``//`` lines kept as comments; it is a fragment of main, completed by
  the frame ``header``;
- every fenced block of the doc tagged c, cpp, fortran or python. A block is a whole program (C and C++:
  it defines ``main``; Fortran: it has a ``program`` statement; Python: it has ``if __name__ ==
  "__main__":`` or starts with ``#!``) or a fragment that a frame completes: the line before the fence is
  ``<!-- frame: NAME -->``, naming tests/mpi/sliding/frames/NAME.<c|cpp|f90|py>, which holds the program
  around the block with a line ``EXAMPLE`` where the block goes (indented as that line is). A fragment
  without a frame fails its test: add a frame or make it a program.
- sh blocks: their ``eval "$(... ftslide env)"`` lines are run to get SLIDING_CFLAGS and SLIDING_LIBS,
  and their compile lines (``mpicc``, ``mpicxx``, ``mpifort`` with ``$SLIDING_CFLAGS``) build the examples
  of their language, as written, with ``-Wall -Werror`` added after the compiler; any other sh line fails
  ``test_shell_lines_are_build_steps``. Blocks without a language are output, not code.

A program (or its frame) prints one line with ``checksum=VALUE`` at the end of the run (the frames:
``frame: checksum=0x...``, at logical rank 0, once sliding_finish agreed that every worker completed).
The frames give the examples the names sliding.h's example uses (n, tile_bytes or allocate_tile or
tile_array, initialize, step, and rank in Fortran and Python); the C and C++ frames share
frames/stencil_frame.h, which the build folder reaches through a link named frames.
Each example runs on its grid's processes as the example creates it (grid, spares, method and block
from its sliding_create call), through ``mpirun --with-ft ulfm`` with a timeout; kills name a node
(FTSLIDE_KILL="NODE@iter=15": frames run 40 iterations; "NODE@waiting" for a spare), and each must
show its "killed at" line.
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ftslide.sliding import runtime
from ftslide.sliding.core import compute_map, make_layout
from ftslide.toolchain import mpi
from ftslide.toolchain.native import REPO
from mpiharness import MPI_SOURCES

pytestmark = pytest.mark.mpi

DOC = REPO / "docs" / "sliding-runtime.md"
HEADER = REPO / "sliding" / "runtime" / "include" / "sliding.h"
FRAMES = MPI_SOURCES / "sliding" / "frames"
SUFFIXES = {"c": ".c", "cpp": ".cpp", "fortran": ".f90", "python": ".py"}
COMPILERS = {"c": ("mpicc",), "cpp": ("mpicxx", "mpic++"), "fortran": ("mpifort", "mpif90")}
WARNINGS = ("-Wall", "-Werror")  # added after the compiler of the doc's compile line
COMMENT = {"c": "//", "cpp": "//", "fortran": "!", "python": "#"}
WORKER_KILL_ITERATION = 15  # frames run 40 iterations; the header example checkpoints every 10
# The killed-at line, old and new form: "ftslide: rank 4 killed at iter=15" (ftslide_killpoint.h) and
# "ftslide: node 4 killed at iter=15 (world ranks 4; logical ranks 4)" (sliding_kill.c).
KILLED_LINE = re.compile(r"ftslide: (?:node|rank) (\d+) killed at (\S+)")
CHECKSUM_LINE = re.compile(r"\bchecksum=(\S+)")
FRAME_LINE = re.compile(r"<!--\s*frame:\s*([\w-]+)\s*-->")


@dataclass(frozen=True)
class Example:
    where: str      # "docs/sliding-runtime.md:240", the line of the example's first code line
    lang: str       # a key of SUFFIXES
    code: str
    frame: str | None
    first_line: int

    @property
    def title(self) -> str:
        head = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        return f"{self.where} ({self.lang}) `{head}`"

    @property
    def is_program(self) -> bool:
        if self.lang in ("c", "cpp"):
            return re.search(r"\bint\s+main\s*\(", self.code) is not None
        if self.lang == "fortran":
            return re.search(r"^\s*program\s+\w+", self.code, re.IGNORECASE | re.MULTILINE) is not None
        return self.code.startswith("#!") or re.search(r"__name__\s*==\s*['\"]__main__['\"]", self.code) is not None


def header_example(text: str) -> Example:
    """The usage example of sliding.h's first comment, the `` *`` prefix stripped (one line per line)."""
    comment_end = text.index("*/")
    lines = text[:comment_end].splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip(" *") == "sliding_t *s;"), None)
    assert start is not None, f"{HEADER.name}: no usage example (a line `sliding_t *s;`) in its first comment"
    body = []
    for line in lines[start:]:
        if not re.match(r"^ \*   ", line):  # the block is indented beyond the prose; a blank " *" ends it
            break
        body.append(line[len(" *"):])
    indent = len(body[0]) - len(body[0].lstrip())  # a label (failed:) sits left of it
    code = "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip() for line in body) + "\n"
    return Example(f"{HEADER.relative_to(REPO)}:{start + 1}", "c", code, "header", start + 1)


def doc_blocks(text: str) -> list[tuple[str, str, str | None, int]]:
    """(language tag, code, frame named on the line before the fence, line of the first code line) of every
    fenced block, in order."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```\s*([\w+-]*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        frame = FRAME_LINE.fullmatch(before.strip())
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{DOC.name}:{i + 1}: a fenced block that is never closed"
        blocks.append((fence[2].lower(), "\n".join(lines[i + 1:end]) + "\n", frame[1] if frame else None, i + 2))
        i = end + 1
    return blocks


def doc_examples(text: str, where: str = str(DOC.relative_to(REPO))) -> list[Example]:
    aliases = {"c++": "cpp", "f90": "fortran", "py": "python"}
    return [Example(f"{where}:{line}", aliases.get(tag, tag), code, frame, line)
            for tag, code, frame, line in doc_blocks(text) if aliases.get(tag, tag) in SUFFIXES]


def shell_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every command line of the doc's sh blocks."""
    out = []
    for tag, code, _, first in doc_blocks(text):
        if tag in ("sh", "bash", "shell", "console"):
            out += [(first + k, line.strip()) for k, line in enumerate(code.splitlines())
                    if line.strip() and not line.strip().startswith("#")]
    return out


def is_env_line(line: str) -> bool:
    return re.fullmatch(r'eval "\$\((\S*/)?ftslide env\)"(\s+#.*)?', line) is not None


def compile_language(line: str) -> str | None:
    """The language a compile line of the doc builds, None if it is no compile line."""
    words = shlex.split(line, comments=True)
    if not words or "$SLIDING_CFLAGS" not in line:
        return None
    return next((lang for lang, names in COMPILERS.items() if words[0] in names), None)


def all_examples() -> list[Example]:
    return [header_example(HEADER.read_text()), *doc_examples(DOC.read_text())]


def frame_problem(example: Example) -> str | None:
    """Why the example cannot be built as a program, None if it can."""
    if example.frame is None:
        return None if example.is_program else f"{example.title}: not a whole program and no frame: add a " \
            "frame (<!-- frame: NAME --> before the fence, tests/mpi/sliding/frames/NAME) or make it a program"
    path = FRAMES / f"{example.frame}{SUFFIXES[example.lang]}"
    if not path.is_file():
        return f"{example.title}: its frame {path.relative_to(REPO)} does not exist"
    marks = [line for line in path.read_text().splitlines() if line.strip() == "EXAMPLE"]
    if len(marks) != 1:
        return f"{example.title}: its frame {path.relative_to(REPO)} has {len(marks)} EXAMPLE lines, not one"
    return None


def program_text(example: Example) -> str:
    """The example, or its frame with the example in place of the line EXAMPLE (C and C++ with #line
    directives, so that a compiler error names the doc's or the header's line)."""
    if example.frame is None:
        return example.code
    path = FRAMES / f"{example.frame}{SUFFIXES[example.lang]}"
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip() != "EXAMPLE":
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        source = example.where.rsplit(":", 1)[0]
        if example.lang in ("c", "cpp"):
            out.append(f'#line {example.first_line} "{source}"')
        out += [indent + code if code.strip() else "" for code in example.code.splitlines()]
        if example.lang in ("c", "cpp"):
            out.append(f'#line {number + 1} "{path.relative_to(REPO)}"')
    return "\n".join(out) + "\n"


def uncommented(example: Example) -> str:
    marker = COMMENT[example.lang]
    return "\n".join(line.split(marker, 1)[0] for line in example.code.splitlines())


@dataclass(frozen=True)
class JobShape:
    grid: str
    spares: str
    method: str
    ranks_per_node: int

    @property
    def processes(self) -> int:
        return make_layout(self.grid, self.spares).nodes * self.ranks_per_node

    def worker_and_spare(self) -> tuple[int, int]:
        """The node holding logical node rank 1 at the start, and the first node that holds none."""
        layout = make_layout(self.grid, self.spares)
        mapping = compute_map(layout, self.method, [])
        return mapping[1], min(set(range(layout.nodes)) - set(mapping))


def job_shape(example: Example) -> JobShape:
    """Grid, spares, method and K of the example's sliding_create call (comments ignored)."""
    code = uncommented(example)
    create = re.search(r"""(["'])((?:mesh|torus):[0-9x]+)\1\s*,\s*(["'])([^"']+)\3\s*,\s*(["'])(\w+)\5""", code)
    assert create, f"{example.title}: no sliding_create(comm, GRID, SPARES, METHOD, ...) call found"
    block = re.search(r"""(?:\bblock\s*=\s*|SLIDING_INFO_BLOCK\s*,\s*)(["'])([0-9x]+)\1""", code)
    k = math.prod(int(size) for size in block[2].split("x")) if block else 1
    return JobShape(create[2], create[4], create[6], k)


# ---- what the suite can check without MPI ------------------------------------------------------------------

def test_the_header_example_is_extracted_whole():
    example = header_example(HEADER.read_text())
    lines = example.code.splitlines()
    assert lines[0] == "sliding_t *s;" and lines[-1].strip() == "sliding_free(s); MPI_Finalize(); return 1;", \
        example.code
    assert not any(line.lstrip().startswith("*") for line in lines), example.code
    assert any(line.startswith("failed:") for line in lines), example.code  # the label, left of the code


def test_blocks_are_classified():
    """A made-up doc: a framed C fragment, a C program, a Python fragment without a frame, a Fortran program,
    an output block and an sh block; only the four code blocks are examples, and only the unframed fragment
    is a problem."""
    doc = "\n".join([
        "<!-- frame: header -->", "```c", "step(cart, it, u);", "```", "text",
        "```c", "int main(int argc, char **argv) { return 0; }", "```",
        "```python", "cart.Sendrecv(u, 1)", "```",
        "```fortran", "program p", "end program p", "```",
        "```", "$ ftslide demo", "```",
        "```sh", 'eval "$(.venv/bin/ftslide env)"', "mpicc $SLIDING_CFLAGS -o app app.c $SLIDING_LIBS  # c", "```",
    ])
    examples = doc_examples(doc, "made-up.md")
    assert [(e.lang, e.frame, e.is_program, e.first_line) for e in examples] == [
        ("c", "header", False, 3), ("c", None, True, 7), ("python", None, False, 10), ("fortran", None, True, 13)]
    assert [frame_problem(e) is None for e in examples] == [True, True, False, True]
    assert "`cart.Sendrecv(u, 1)`: not a whole program and no frame" in frame_problem(examples[2])
    assert [(is_env_line(line), compile_language(line)) for _, line in shell_lines(doc)] == [(True, None), (False, "c")]


def test_shell_lines_are_build_steps():
    """Every sh line of the doc is an `ftslide env` line or a compile line the examples' builds run; a
    compile line for a language without an example is reported too (it would go untested)."""
    lines = shell_lines(DOC.read_text())
    unknown = [f"{DOC.name}:{n}: {line}" for n, line in lines if not is_env_line(line) and not compile_language(line)]
    assert not unknown, "sh lines the suite does not run (make them build steps or output blocks):\n" + \
        "\n".join(unknown)
    assert any(is_env_line(line) for _, line in lines), "the doc no longer shows eval \"$(ftslide env)\""
    languages = {e.lang for e in all_examples()}
    untested = [f"{DOC.name}:{n}: {line}" for n, line in lines if compile_language(line) not in (None, *languages)]
    assert not untested, "compile lines no example exercises:\n" + "\n".join(untested)


# ---- build and run --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def doc_environment(mpi_prefix) -> dict[str, str]:
    """The environment after the doc's `eval "$(.venv/bin/ftslide env)"` lines, run in the repository."""
    env_lines = [line for _, line in shell_lines(DOC.read_text()) if is_env_line(line)]
    assert env_lines, "the doc shows no eval \"$(ftslide env)\" line"
    script = "set -e\n" + "\n".join(env_lines) + "\nenv -0\n"
    result = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{env_lines}: exit {result.returncode}\n{result.stderr}"
    env = dict(item.split("=", 1) for item in result.stdout.split("\0") if "=" in item)
    assert env.get("SLIDING_CFLAGS") and env.get("SLIDING_LIBS") and env.get("SLIDING_LIBRARY"), env_lines
    assert Path(env["PATH"].split(":")[0]) == mpi_prefix / "bin", env["PATH"]
    return env


def compile_line(lang: str) -> str:
    """The doc's (first) compile line for `lang`."""
    lines = [line for _, line in shell_lines(DOC.read_text()) if compile_language(line) == lang]
    if not lines:
        pytest.fail(f"{DOC.name} shows no compile line for {lang} ({'/'.join(COMPILERS[lang])} $SLIDING_CFLAGS ...)")
    return lines[0]


def build(example: Example, env: dict[str, str], where: Path) -> list[str]:
    """The argv that runs the example: compiled by the doc's compile line of its language in `where`
    (which holds the program under the line's source name, a link to the repository's sliding/ for the
    line's relative paths and one to the frames, for what frames include), or the interpreter and the
    script for Python."""
    where.mkdir(parents=True, exist_ok=True)
    text = program_text(example)
    if example.lang == "python":
        script = where / "example.py"
        script.write_text(text)
        return [sys.executable, str(script)]
    line = compile_line(example.lang)
    words = shlex.split(line, comments=True)
    source = next(w for w in words if w.endswith(SUFFIXES[example.lang]) and not w.startswith("sliding/"))
    output = words[words.index("-o") + 1] if "-o" in words else "a.out"
    (where / source).write_text(text)
    (where / "sliding").symlink_to(REPO / "sliding")
    (where / "frames").symlink_to(FRAMES)  # what C and C++ frames share: #include "frames/stencil_frame.h"
    command = line.replace(words[0], f"{words[0]} {' '.join(WARNINGS)}", 1)
    result = subprocess.run(["bash", "-c", f"set -e\n{command}"], cwd=where, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"{example.title}: `{command}` in {where} failed:\n{result.stdout}{result.stderr}"
    return [str(where / output)]


@dataclass
class ExampleRun:
    command: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def checksums(self) -> list[str]:
        return CHECKSUM_LINE.findall(self.stdout)

    @property
    def killed(self) -> dict[int, str]:
        return {int(m[1]): m[2] for m in KILLED_LINE.finditer(self.stderr)}

    def describe(self) -> str:
        return f"{self.command}\nexit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n" \
               f"{self.stderr[-3000:]}"


def run_example(prefix: Path, argv: list[str], shape: JobShape, env: dict[str, str], kill: str | None) -> ExampleRun:
    options, extra = [], {}
    if argv[0] == sys.executable:
        python = runtime.python_environment(prefix)
        python["SLIDING_LIBRARY"] = env["SLIDING_LIBRARY"]  # the doc's, from ftslide env
        extra.update(python)
        options = [arg for name in python for arg in ("-x", name)]
    if kill:
        extra["FTSLIDE_KILL"] = kill
    args = [*options, "-np", str(shape.processes), *argv]
    command = " ".join(f"{k}={shlex.quote(v)}" for k, v in extra.items()) + " " + \
        shlex.join(mpi.mpirun_argv(prefix, args))
    timeout = 60 + 5 * shape.processes
    try:
        result = mpi.run(prefix, args, timeout=timeout, env=extra, stacks_on_timeout=True)
    except mpi.MpirunTimeout as exc:
        raise AssertionError(f"hang: no end within {timeout} s: {command}\n--- stdout\n{exc.stdout[-3000:]}\n"
                             f"--- stderr\n{exc.stderr[-3000:]}\n{exc.stacks[-6000:]}") from None
    return ExampleRun(command, result.returncode, result.stdout, result.stderr)


def example_ids(examples: list[Example]) -> list[str]:
    """"sliding.h" for the header's, LANG-K for the doc's Kth example in LANG (stable while blocks move)."""
    ids, seen = [], {}
    for example in examples:
        if example.where.startswith(str(HEADER.relative_to(REPO))):
            ids.append("sliding.h")
        else:
            seen[example.lang] = seen.get(example.lang, 0) + 1
            ids.append(f"{example.lang}-{seen[example.lang]}")
    return ids


EXAMPLES = all_examples()


@pytest.mark.parametrize("example", EXAMPLES, ids=example_ids(EXAMPLES))
def test_example_recovers_with_identical_result(mpi_prefix, doc_environment, tmp_path, example):
    problem = frame_problem(example)
    assert problem is None, problem
    shape = job_shape(example)
    argv = build(example, doc_environment, tmp_path / "build")
    worker, spare = shape.worker_and_spare()

    clean = run_example(mpi_prefix, argv, shape, doc_environment, None)
    assert clean.returncode == 0 and len(clean.checksums) == 1, f"{example.title}, failure-free:\n{clean.describe()}"
    assert not clean.killed and "frame: error" not in clean.stdout, clean.describe()

    for node, point in ((worker, f"iter={WORKER_KILL_ITERATION}"), (spare, "waiting")):
        run = run_example(mpi_prefix, argv, shape, doc_environment, f"{node}@{point}")
        what = f"{example.title}, node {node} killed at {point}"
        assert run.killed == {node: point}, f"{what}: no killed-at line for it:\n{run.describe()}"
        assert "frame: error" not in run.stdout, f"{what}:\n{run.describe()}"
        assert run.returncode == 0 and len(run.checksums) == 1, f"{what}:\n{run.describe()}"
        assert run.checksums == clean.checksums, f"{what}: checksum {run.checksums} != failure-free " \
            f"{clean.checksums}:\n{run.describe()}"
