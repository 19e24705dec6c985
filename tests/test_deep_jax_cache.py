"""--deep's JAX reads the persistent cache back as a program started here would hit it (issue 45, round nineteen;
round eighteen's known gap). With JAX_RAISE_PERSISTENT_CACHE_ERRORS on, a cache entry cut short (a copy interrupted,
a full disk) fails the compilation that hits it: JAX 0.11 on an H100 raised 'zlib.error: Error -5 while decompressing
data: incomplete or truncated stream' in round eighteen's published set, while --deep's own convolution, whose key the
cache never held, ran clean. The deep child now reads each entry back through JAX's own reader
(compilation_cache.decompress_executable and extract_executable_and_time), bounded, never writing; JAX's words and the
frames they were raised through (compilation_cache.py) name CD411 through explain's reader. The real jax 0.4.38 (CPU)
writes and reads the cache here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cudnn_doctor.doctor.deep_words import codes_of
from tests.conftest import Machine
from tests.real_wheels import real_jax_cpu
from tests.test_environment_settings import real_jax_site  # noqa: F401 - a fixture
from tests.test_settings_parsers import COMPILE, filled_jax_cache, run_jax_with

ROOT = Path(__file__).resolve().parent.parent
READ_BACK = ("import json\nimport jax\nfrom cudnn_doctor._deep_child import frames_of, read_back_cache\n"
             "jax.devices()\n"
             "try:\n    print(json.dumps({'read': read_back_cache()}))\n"
             "except Exception as e:\n"
             "    print(json.dumps({'error': f'{type(e).__name__}: {e}', 'traceback': frames_of(e)}))\n")



def _deep_child_says(env: dict[str, str]) -> dict:
    said = run_jax_with({**env, "PYTHONPATH": f"{ROOT}:{real_jax_cpu()}"}, READ_BACK)
    return json.loads(said.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_cut_entry_is_read_back_by_jaxs_own_reader_and_named(tmp_path: Path) -> None:
    fill, entries = filled_jax_cache(tmp_path)
    strict = {**fill, "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true"}
    whole = _deep_child_says(strict)
    assert whole == {"read": len(entries)}, whole  # whole entries: each read back, nothing raised
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    times = {p: p.stat().st_mtime_ns for p in entries[0].parent.iterdir()}
    cut = _deep_child_says(strict)
    assert "decompress" in cut["error"], cut
    assert any("jax/_src/compilation_cache.py" in frame for frame in cut["traceback"]), cut["traceback"]
    assert codes_of(cut)[:1] == ("CD411",), cut  # JAX's frames: the cache's error, raised by the switch
    assert {p: p.stat().st_mtime_ns for p in entries[0].parent.iterdir()} == times  # nothing written
    # the program it stands for fails the same way: tests/test_xla_path_flags.py's cut cache (one real compilation's,
    # each entry cut in half, the switch on) runs it (test_cache_entries_cut_short_with_jaxs_errors_fatal_are_named)


def test_without_the_switch_nothing_is_read(tmp_path: Path) -> None:
    """JAX warns and compiles again where its cache errors are not fatal (the switch 'false', or not set): the child
    reads nothing and says so. One cut cache for both values: the child writes nothing (the test above)."""
    fill, entries = filled_jax_cache(tmp_path)
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    for switch in ("false", None):
        env = {**fill, **({"JAX_RAISE_PERSISTENT_CACHE_ERRORS": switch} if switch else {})}
        assert _deep_child_says(env) == {"read": None}, switch
    assert run_jax_with({**fill, "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "false"}, COMPILE).returncode == 0
    # not set: tests/test_xla_path_flags.py's cut cache compiles again (its last line)


def test_check_deep_names_the_cut_cache_with_jaxs_words(machine: Machine, real_jax_site: Path,  # noqa: F811
                                                        tmp_path: Path) -> None:
    """The whole command: --deep's JAX child meets the cut entries before its own work, and the finding about the
    cache (CD411) is an error seen, quoting JAX."""
    python = tmp_path / "venv" / "bin" / "python3"  # the real interpreter, seeing the real jax (and its numpy)
    python.write_text(f"#!/bin/sh\nPYTHONPATH={real_jax_site}:{real_jax_cpu()} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    fill, entries = filled_jax_cache(tmp_path)
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    machine.env.update({**fill, "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true"})
    report = machine.check_json("--deep")
    made = [f for f in report["findings"] if f["code"] == "CD411" and f["severity"] == "error"]
    assert made and made[0]["evidence"] == "seen", [(f["code"], f["severity"], f["detail"][:200])
                                                    for f in report["findings"]]
    assert "decompress" in json.dumps(made[0]), made[0]
