"""Round nineteen's reliability classes (issue 43; found by benchmarks/redteam_r23.py over the surfaces added in the
last two rounds, each a test that failed before its fix), and a sample of that red-team in CI."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest

from tests import redteam_sample
from tests.conftest import ROOT, Machine

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, ptys and the loader of Linux")


def _redteam():  # type: ignore[no-untyped-def]
    return redteam_sample.load("redteam_r23")


# --- JAX's persistent cache read back: the work bounded ---------------------------------------------------------------

def test_a_zlib_bomb_in_jaxs_cache_is_inflated_only_within_the_bound(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """An entry of 1 MiB that inflates to 1 GiB of zeros (a whole stream, its checksum right): the reader stops
    inflating at MAX_CACHE_INFLATED for all entries together (before, every byte was inflated: 60 MiB of entries,
    60 GiB inflated, took check past the red-team's 60 s) and says nothing of an entry it did not read to its end."""
    from cudnn_doctor.probes import settings

    (tmp_path / "bomb-cache").write_bytes(_redteam().bomb(1 << 30))
    assert zlib.decompressobj().decompress((tmp_path / "bomb-cache").read_bytes(), 1 << 10)  # a zlib stream
    made: list[int] = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self) -> None:
            self.inner = real()

        def decompress(self, data: bytes, limit: int = 0) -> bytes:
            out = self.inner.decompress(data, limit)
            made.append(len(out))
            return out

        @property
        def unconsumed_tail(self) -> bytes:
            return self.inner.unconsumed_tail

        @property
        def eof(self) -> bool:
            return self.inner.eof

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    assert settings.damaged_cache_entries(str(tmp_path)) is None
    assert sum(made) <= settings.MAX_CACHE_INFLATED + (1 << 20), sum(made)


def test_a_cache_of_millions_of_entries_is_listed_only_so_far(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache folder's names are listed at most MAX_CACHE_LISTED (before: listed whole and sorted, 2,000,000
    entries took 7.5 s and 173 MiB before a single one was read); the entries judged are the first in order of those
    listed, an entry cut short among them named."""
    import os

    from cudnn_doctor.probes import settings

    for n in range(300):
        (tmp_path / f"{n:04d}-cache").write_bytes(b"")
    data = zlib.compress(b"x" * 4096)
    (tmp_path / "0002-cache").write_bytes(data[: len(data) // 2])
    listed: list[str] = []
    real = os.scandir

    class Counted:
        def __init__(self, path: str) -> None:
            self.inner = real(path)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self) -> Counted:
            return self

        def __next__(self) -> os.DirEntry[str]:
            entry = next(self.inner)
            listed.append(entry.name)
            return entry

    monkeypatch.setattr(settings, "MAX_CACHE_LISTED", 50)
    monkeypatch.setattr(os, "scandir", Counted)
    said = settings.damaged_cache_entries(str(tmp_path))
    assert len(listed) <= 51, len(listed)
    assert (said is not None) == ("0002-cache" in listed), (said, sorted(listed)[:5])


def test_a_whole_entry_whose_last_bytes_inflate_past_a_mib_is_not_cut(tmp_path: Path) -> None:
    """Entries whose stream's last input still has output to give (a read of a MiB at a time leaves it inside zlib):
    whole, so not named; the same entries cut in half are."""
    from cudnn_doctor.probes.settings import damaged_cache_entries

    for n, size in enumerate((5 << 20, (1 << 20) + 100, (2 << 20) + 7)):
        data = zlib.compress(b"\0" * size, 9)
        (tmp_path / f"w{n}-cache").write_bytes(data)
    assert damaged_cache_entries(str(tmp_path)) is None
    for entry in tmp_path.iterdir():
        entry.write_bytes(entry.read_bytes()[:-6])
    said = damaged_cache_entries(str(tmp_path))
    assert said is not None and said.startswith("3 of its cache entries"), said


@linux_only
def test_a_settings_file_that_became_a_fifo_after_it_was_asked_of_holds_nothing(tmp_path: Path) -> None:
    """The readers of the files settings name (the errata sheet, XLA's kernel cache and results, JAX's cache entries)
    ask the path's kind, then open it: a path made a FIFO in between (a user's process replacing it), or a kernel file
    that waits for what it gives, held the doctor forever on the open. Now it is opened without blocking and answers
    at once (the race is made here by taking every path for a regular file)."""
    import os

    fifo = tmp_path / "kernel-cache.bin"
    os.mkfifo(fifo)
    program = ("import stat, sys; stat.S_ISREG = lambda mode: True\n"
               "from cudnn_doctor.probes import settings\n"
               f"print(settings._read({str(fifo)!r}, 512))\n")
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-c", program], cwd=str(ROOT), capture_output=True, text=True,
                              timeout=5, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail("the read of a FIFO taken for a file blocked")
    assert done.returncode == 0 and done.stdout.strip() in ("b''", "None"), done


# --- the errata sheet read as the cuDNN frontend's parser reads it ------------------------------------------------

def test_an_errata_sheet_nested_past_pythons_parser_is_read_as_the_frontend_reads_it(tmp_path: Path) -> None:
    """JSON nested 10^5 deep is JSON to nlohmann::json (its parser keeps its own stack); Python's raised RecursionError
    and the whole probe of the process's settings was lost (CD902, 'a bug in cudnn-doctor'). Now what lies deeper
    than the rules is read only for its kind: a rule that is an array is still the frontend's type_error.305."""
    from cudnn_doctor.probes.settings import content_problem

    sheet = tmp_path / "errata.json"
    sheet.write_bytes(b'{"version": 1, "rules": ' + b"[" * 100000 + b"]" * 100000 + b"}")
    said = content_problem(str(sheet), "cudnn_errata")
    assert said is not None and "type_error.305" in said, said
    sheet.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": 1, "knob": ' + b"[" * 100000 +
                      b"]" * 100000 + b'}], "x": ' + b'{"a":' * 100000 + b'"]"' + b"}" * 100000 + b"}")
    assert content_problem(str(sheet), "cudnn_errata") is None
    sheet.write_bytes(b'{"rules": [' + b"[" * 100000 + b"]" * 99999 + b"}")  # not JSON, however deep
    said = content_problem(str(sheet), "cudnn_errata")
    assert said is not None and "not JSON" in said, said


def test_an_errata_sheet_deep_and_never_closed_or_past_the_walk_is_one_answer(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    """Containers opened 10^5 deep and never all closed are no JSON, said so (not the whole text read twice and a
    second RecursionError); a sheet of more brackets than MAX_SHALLOW_TOKENS (16 MB of them took 16 s to walk) is not
    read, and nothing is said of it."""
    from cudnn_doctor.probes import settings

    sheet = tmp_path / "errata.json"
    sheet.write_bytes(b'{"rules": ' + b"[" * 100000 + b"]" * 99000 + b"}")
    said = settings.content_problem(str(sheet), "cudnn_errata")
    assert said is not None and "not JSON" in said, said
    monkeypatch.setattr(settings, "MAX_SHALLOW_TOKENS", 50000)
    sheet.write_bytes(b'{"rules": ' + b"[" * 100000 + b"]" * 100000 + b"}")
    assert settings.content_problem(str(sheet), "cudnn_errata") is None


@pytest.mark.parametrize(("number", "words"), [
    (b"9" * 1_000_000, None),  # an engine of a million digits: strtod's infinity, a number
    (b"-" + b"9" * 5000, None),
    (b"1." + b"5" * 100000 + b"e99999", None),
])
def test_numbers_of_a_million_digits_are_numbers_as_the_frontend_reads_them(tmp_path: Path, number: bytes,
                                                                             words: str | None) -> None:
    """An errata rule's engine of 10^6 digits: nlohmann::json's lexer falls back to strtod past a 64-bit integer (a
    float, infinity); Python's int() refuses past 4,300 digits, so check said 'it is not JSON', a false error about
    a sheet the frontend parses."""
    from cudnn_doctor.probes.settings import content_problem

    sheet = tmp_path / "errata.json"
    sheet.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": ' + number + b', "knob": []}]}')
    assert content_problem(str(sheet), "cudnn_errata") is None
    sheet.write_bytes(b'{"rules": [{"operation": ' + number + b', "engine": 1}]}')
    said = content_problem(str(sheet), "cudnn_errata")
    assert said is not None and "type_error.302" in said and "not JSON" not in said, said


# --- the children's environment: what exec takes ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value"), [
    ("CUDA_CACHE_PATH", "c" * 131000),  # one relative path, 128 KiB less a little
    ("XLA_FLAGS", " ".join(f"--xla_dump_to=d{n}" for n in range(6000))),  # 6,000 relative folders, 113 KB
    ("TMPDIR", "t/" * 65450),
])
def test_a_relative_path_setting_made_absolute_stays_within_what_exec_takes(name: str, value: str) -> None:
    """A path setting whose relative value, joined to the working folder for the children, passes what exec takes for
    one variable (MAX_ARG_STRLEN, 128 KiB): before, every child of the doctor failed to start ('Argument list too
    long': NVML said failing, CD104, cuDNN crashing). Now it is passed as written, as the doctor itself was started
    with it (a path that long names nothing either way: the kernel takes 4,096 bytes a path); a shorter one is still
    made absolute."""
    from cudnn_doctor.knowledge.environment import working_folder_paths
    from cudnn_doctor.variables import MAX_ARG_STRLEN, child_environment, read_paths_from

    read_paths_from(working_folder_paths)  # the data's path settings, as every command's guard gives them
    here = "/" + "w" * 250
    child = child_environment({name: value, "TEST_TMPDIR": "rel/t"}, here=here)
    assert len(name) + 1 + len(child[name].encode()) < MAX_ARG_STRLEN, len(child[name])
    assert child["TEST_TMPDIR"] == f"{here}/rel/t", child["TEST_TMPDIR"]


# --- Python's own compiled module shadowed in a working folder of many files --------------------------------------

@linux_only
def test_a_shadow_among_tens_of_thousands_of_files_is_found() -> None:
    """`_ctypes<suffix>` (a Git LFS pointer: `import torch` ends 'invalid ELF header') in a working folder (or a
    PYTHONPATH folder) of 30,000 other files, listed in the middle (tmpfs lists in the order files were made, or its reverse): before, only the
    first 10,000 names listed were looked at, and the shadow was not named; Python's finder lists the whole folder."""
    import importlib.machinery
    import os
    import shutil
    import tempfile

    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.process_env import _stray_modules, _working_folder_shadows

    if not os.path.isdir("/dev/shm"):
        pytest.skip("no tmpfs at /dev/shm")
    folder = tempfile.mkdtemp(dir="/dev/shm")
    try:
        site = os.path.join(folder, "site", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
        os.makedirs(os.path.join(site, "torch"))
        cwd = os.path.join(folder, "work")
        os.mkdir(cwd)
        for n in range(30000):
            if n == 15000:
                with open(os.path.join(cwd, f"_ctypes{importlib.machinery.EXTENSION_SUFFIXES[0]}"), "w") as f:
                    f.write("version https://git-lfs.github.com/spec/v1\n")
            os.close(os.open(os.path.join(cwd, f"n{n}.txt"), os.O_CREAT | os.O_WRONLY, 0o644))
        torch = Framework("torch", "2.11.0", "13.0", None, None, "dist-info", details={"site_packages": site})
        found = _working_folder_shadows(cwd, [torch])
        assert (cwd, "_ctypes", "torch", "working folder") in found, found
        found = _stray_modules([cwd], torch, site)  # the same folder on PYTHONPATH
        assert (cwd, "_ctypes", "torch", "PYTHONPATH") in found, found
    finally:
        shutil.rmtree(folder)


# --- the first context made again: a child that cannot tell leaves the refusal said --------------------------------

@linux_only
@pytest.mark.integration
@pytest.mark.parametrize("mode", ["segv", "hang"])
def test_a_refused_first_context_stays_said_when_the_child_made_without_the_variable_fails(
        machine: Machine, tmp_path: Path, mode: str) -> None:
    """CUDA refused the first context with a variable no row vouches for (CUDA_FAKE_CONTEXT_LIMIT, the fake driver's);
    the child that makes it again without that variable crashes or hangs (a library preloaded that acts only there).
    Before, no finding said the refusal at all (CD416 was dropped as for a context refused either way): every
    program's first GPU call fails here, and check was silent. Now CD416 stays, a warning (the cause not told), its
    proof naming what the second child did."""
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    machine.env.update({"CUDA_FAKE_CONTEXT_LIMIT": "500", "R23_MODE": mode, "CUDNN_DOCTOR_PROBE_TIMEOUT": "3",
                        "LD_PRELOAD": str(_redteam().redo_library(tmp_path / "hostile"))})
    report = machine.check_json()
    assert not report["process"]["context_without"].startswith("cuDevicePrimaryCtxRetain"), report["process"]
    [made] = [f for f in report["findings"] if f["code"] == "CD416"]
    assert made["severity"] == "warning" and made["subject"] == "CUDA_FAKE_CONTEXT_LIMIT", made
    assert ("SIGSEGV" if mode == "segv" else "did not answer") in made["proof"], made["proof"]
    assert "--deep" in made["proof"], made["proof"]


@linux_only
@pytest.mark.integration
def test_a_context_refused_among_many_cuda_variables_is_told_in_a_few_children(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """CUDA refused the first context with 40 CUDA variables no row vouches for set, one of them the cause: the
    context is made again without each alone only for a few (MAX_CONTEXT_ALONE); past that, the one is found by
    halving, a child a step (before: a child for each, side by side: 2,000 variables took check past a minute).
    The one is still named."""
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    counted = tmp_path / "children"
    machine.env.update({f"CUDA_R23_{n}": "1" for n in range(40)})
    machine.env.update({"CUDA_FAKE_CONTEXT_LIMIT": "500", "R23_MODE": f"count:{counted}",
                        "LD_PRELOAD": str(_redteam().redo_library(tmp_path / "hostile"))})
    report = machine.check_json()
    assert report["process"]["context_blamed"] == ["CUDA_FAKE_CONTEXT_LIMIT"], report["process"]["context_blamed"]
    [made] = [f for f in report["findings"] if f["code"] == "CD416"]
    assert made["subject"] == "CUDA_FAKE_CONTEXT_LIMIT" and made["severity"] == "error", made
    assert len(counted.read_bytes()) < 25, len(counted.read_bytes())  # 41 tries alone + the others before


# --- a sample of the red-team in CI -------------------------------------------------------------------------------------

SAMPLED = ("errata", "XLA path flags", "explain stdin", "JAX cache entries", "first context")  # a second or two a case
SLOW = ("million", "bomb", "120,000", "10^6", "16 MB", "sparse", "/dev/zero", "/dev/urandom", "60 MiB", "10 MB",
        "120 KB", "hang", "flood", "3,000", "2,000",  # left to the whole run: seconds to tens of seconds each
        "not listable")  # run as root without the capabilities that pass over a file's mode (setpriv)


def quick(name: str, case: tuple) -> bool:  # type: ignore[type-arg]
    """The red-team's quick classes (a second or two each)."""
    return case[0] in SAMPLED and not any(word in name for word in SLOW)


@linux_only
@pytest.mark.integration
def test_a_seeded_sample_of_the_red_team_holds() -> None:
    """Three cases of benchmarks/redteam_r23.py (the classes of a second or two each), a seed of their own each day:
    over time the sample covers the table."""
    redteam_sample.assert_holds("redteam_r23", quick, 3)
