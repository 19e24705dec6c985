"""doctor/bisect.py: the parts of the environment a failing framework is tried without, one at a time."""

from __future__ import annotations

from pathlib import Path

from cudnn_doctor.doctor.bisect import curing, variants
from cudnn_doctor.model import Framework


def _framework(name: str) -> Framework:
    return Framework(name, "1.0", None, None, None, "dist-info", None, {})


def test_each_part_that_is_set_is_one_variant(tmp_path: Path) -> None:
    cuda_libs = tmp_path / "libs"
    cuda_libs.mkdir()
    (cuda_libs / "libcublas.so.13").write_bytes(b"")
    driver = tmp_path / "driver"
    driver.mkdir()
    (driver / "libcuda.so.1").write_bytes(b"")
    (driver / "libcudnn.so.9").write_bytes(b"")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ptxas").write_bytes(b"")
    env = {"LD_PRELOAD": "/x/libfoo.so /y/libcublas.so.13", "LD_LIBRARY_PATH": f"{cuda_libs}:{driver}:/nowhere",
           "PATH": f"{tools}:/usr/bin", "PYTHONPATH": "/p", "XLA_FLAGS": "--x", "CUDA_FORCE_PTX_JIT": "1",
           "CUDA_VISIBLE_DEVICES": "1", "CUDA_HOME": "/usr/local/cuda", "HOME": "/root"}
    found = {v.kind: v for v in variants(env) if v.kind != "limits"}
    assert found["preload"].changes[0].op == "unset"
    assert found["library_path"].removed == (str(cuda_libs), str(driver))  # tried; offered only where it cures
    assert found["path"].removed == (str(tools),)
    assert found["pythonpath"].removed == ("/p",)
    names = [v.variable for v in variants(env) if v.kind == "variable"]
    assert names == ["CUDA_FORCE_PTX_JIT", "XLA_FLAGS"]  # never CUDA_VISIBLE_DEVICES (a scheduler's) or CUDA_HOME


def test_an_empty_library_path_entry_is_the_working_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "libcudnn_graph.so.9").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    [variant] = [v for v in variants({"LD_LIBRARY_PATH": ":/nowhere"}) if v.kind == "library_path"]
    assert variant.removed == (".",)


def test_the_first_part_whose_change_cures_every_failing_framework_is_the_cause() -> None:
    env = {"LD_PRELOAD": "/x/libcublas.so.13", "XLA_FLAGS": "--bad"}
    tried = []

    def run(frameworks, changed, limits, timeout):  # type: ignore[no-untyped-def]
        tried.append(dict(changed))
        ok = "XLA_FLAGS" not in changed
        return {f.name: {} if ok else {"error": "RuntimeError: no"} for f in frameworks}

    variant, said = curing([_framework("jax")], env, run)
    assert variant is not None and variant.variable == "XLA_FLAGS"
    assert "LD_PRELOAD unset" in said and "LD_PRELOAD" not in tried[0]


def test_nothing_cures_and_the_time_is_bounded() -> None:
    env = {"XLA_FLAGS": "--a", "TF_X": "1", "CUDA_Y": "2"}

    def run(frameworks, changed, limits, timeout):  # type: ignore[no-untyped-def]
        return {f.name: {"error": "RuntimeError: still"} for f in frameworks}

    variant, said = curing([_framework("torch")], env, run, budget_s=0.0)
    assert variant is None and any("not tried" in words for words in said.values())


def _failing_while(*culprits: str, every: bool = False):  # type: ignore[no-untyped-def]
    """A run under which the framework fails while any (EVERY: all) of CULPRITS is set; the children it started."""
    started: list[dict[str, str]] = []

    def run(frameworks, changed, limits, timeout):  # type: ignore[no-untyped-def]
        started.append(dict(changed))
        set_ = [name in changed for name in culprits]
        fails = all(set_) if every else any(set_)
        return {f.name: {"error": "RuntimeError: broken by the environment"} if fails else {} for f in frameworks}
    return run, started


NOISE = {f"APP_SETTING_{n:02d}": str(n) for n in range(40)}
SESSION = {"PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0", "SHELL": "/bin/bash", "PWD": "/w"}


def test_any_variable_nobody_wrote_down_is_found_by_halving() -> None:
    # 43 variables the data names no class for; the one that breaks the framework is found with about log2(43)
    # children, and the session's own (PATH, CUDA_VISIBLE_DEVICES, ...) are never unset
    env = {**SESSION, **NOISE, "PYTHONWARNINGS": "error", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "4"}
    run, started = _failing_while("PYTHONWARNINGS")
    variant, _ = curing([_framework("torch")], env, run)
    assert variant is not None and variant.kind == "variable" and variant.variable == "PYTHONWARNINGS"
    assert [(c.variable, c.op) for c in variant.changes] == [("PYTHONWARNINGS", "unset")]
    assert len([child for child in started if child.get("PYTHONWARNINGS") != "error" or len(child) < len(env)]) <= 9
    assert all(child.get(name) == value for child in started for name, value in SESSION.items())


def test_a_cause_of_two_variables_together_is_a_group_seen_to_cure() -> None:
    env = {**SESSION, **NOISE, "AAA_FIRST": "1", "ZZZ_LAST": "3"}
    run, _ = _failing_while("AAA_FIRST", "ZZZ_LAST")  # either breaks it: both must go, and they fall in two halves
    variant, _ = curing([_framework("jax")], env, run)
    assert variant is not None and variant.kind == "variables"
    assert {"AAA_FIRST", "ZZZ_LAST"} <= set(variant.removed)  # never a group that was not seen to cure


def test_where_unsetting_every_variable_cures_nothing_one_child_says_so() -> None:
    env = {**SESSION, **NOISE}
    run, started = _failing_while("PATH")  # a cause the search never takes out
    variant, said = curing([_framework("torch")], env, run)
    assert variant is None and any("variables unset" in words for words in said)
    assert len([child for child in started if "APP_SETTING_00" not in child]) == 1
