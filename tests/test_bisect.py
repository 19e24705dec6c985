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
