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


# a torch whose first GPU steps fail while TORCH_BREAK is set, as a variable a framework reads at start can make them
BREAKABLE_TORCH = '''
import os
__version__ = "2.11.0+cu130"
class version:
    cuda = "13.0"
class backends:
    class cudnn:
        version = staticmethod(lambda: 91900)
class cuda:
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 1)
    synchronize = staticmethod(lambda: None)
def randn(*shape, **kwargs):
    if os.environ.get("TORCH_BREAK"):
        raise RuntimeError("cuDNN error: CUDNN_STATUS_SUBLIBRARY_UNAVAILABLE")
class nn:
    class functional:
        conv2d = staticmethod(lambda *args, **kwargs: None)
    class LSTM:
        def __init__(self, *args, **kwargs):
            pass
        def cuda(self):
            return self
        def __call__(self, *args):
            return None
'''


def test_a_line_the_bisection_found_cites_what_it_saw_not_the_loader(machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A variable whose unsetting cures torch is fix's verified line, and check --deep's plan's: its source is the
    experiment (a child without that one variable), not ld.so's search order, which has nothing to do with it."""
    from cudnn_doctor.plan.process_env import CURE_SOURCES
    from tests.test_frameworks import install_torch, python_env, real_python_sees
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(BREAKABLE_TORCH)
    real_python_sees(site, tmp_path)
    machine.env["TORCH_BREAK"] = "1"
    for args in (("fix", "--json"), ("check", "--deep", "--json")):
        data = machine.run(*args).json
        actions = data["actions"] if "actions" in data else data["plan"]["actions"]
        [step] = [a for a in actions if a["kind"] == "env"]
        assert step["env"]["bash"] == ["unset TORCH_BREAK"], step
        assert step["source"] == CURE_SOURCES["variable"], step


def _fifo_driver_folder(machine, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """A folder first on LD_LIBRARY_PATH whose libcuda.so.1 and libnvidia-ml.so.1 are FIFOs."""
    import os

    hostile = tmp_path / "fifos"
    hostile.mkdir()
    for name in ("libcuda.so.1", "libnvidia-ml.so.1"):
        os.mkfifo(hostile / name)
    machine.add_library_path(hostile)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "1"
    return hostile


def test_a_fifo_named_like_the_driver_first_on_the_path_is_said_not_a_reboot(machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """ld.so opens a FIFO named libcuda.so.1 and waits for a writer for ever: the probes hang, as every program does.
    That is the FIFO's doing, said with it (CD110, CD118) and treated by taking its folder off the path, not NVML's
    'reboot' (CD104)."""
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    hostile = _fifo_driver_folder(machine, tmp_path)
    report = machine.check_json()
    found = {f["code"]: f for f in report["findings"]}
    assert "CD104" not in found, found.get("CD104")
    assert "is a FIFO" in found["CD110"]["detail"] and found["CD110"]["evidence"] == "seen", found["CD110"]
    assert "FIFO" in found["CD118"]["detail"], found["CD118"]
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(hostile) not in line for line in lines), lines


def test_fix_keeps_its_own_lines_beside_the_part_that_cures(machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two causes at once: a variable breaks torch's work, and FIFOs named like the driver are first on the path
    (which torch's stand-in never loads). The variable's unsetting cures torch; the plan's line for the FIFOs is kept
    beside it, both verified together, where it was dropped for 'not curing' torch."""
    from tests.test_frameworks import install_torch, python_env, real_python_sees
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    hostile = _fifo_driver_folder(machine, tmp_path)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(BREAKABLE_TORCH)
    real_python_sees(site, tmp_path)
    machine.env["TORCH_BREAK"] = "1"
    plan = machine.run("fix", "--json").json
    steps = [a for a in plan["actions"] if a["kind"] == "env"]
    lines = [line for a in steps for line in a["env"]["bash"]]
    assert "unset TORCH_BREAK" in lines, lines
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(hostile) not in line for line in lines), lines
    assert all(a["verified"].startswith("verified here") for a in steps), steps
    text = machine.run("fix").stdout
    assert "(resolves )" not in text, text


def test_where_python_never_started_what_acts_before_the_framework_is_tried_first() -> None:
    """A child whose Python never came up (a sitecustomize or a preloaded library hangs) can be cured only by what
    acts before the framework: PYTHONPATH and LD_PRELOAD are tried before the variables, each variant costing the
    start timeout."""
    env = {"CUDA_CACHE_DISABLE": "1", "PYTHONPATH": "/p", "LD_PRELOAD": "/x/libfoo.so", "TF_X": "1"}
    tried: list[str] = []

    def run(frameworks, changed, limits, timeout):  # type: ignore[no-untyped-def]
        tried.append(sorted(set(env) - set(changed))[0] if set(env) - set(changed) else "")
        return {f.name: {"error": "torch's Python did not start within 15 s: ..."} for f in frameworks}

    curing([_framework("torch")], env, run, said_before=["torch's Python did not start within 15 s: its start-up"])
    assert tried[:2] == ["LD_PRELOAD", "PYTHONPATH"], tried
    tried.clear()
    curing([_framework("torch")], env, run, said_before=["RuntimeError: cuDNN error"])
    assert tried.index("CUDA_CACHE_DISABLE") < tried.index("PYTHONPATH") or tried[0] == "LD_PRELOAD", tried


def test_a_framework_whose_python_start_up_hangs_is_cut_off_at_the_start_timeout(machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A sitecustomize in the framework's environment that hangs: --deep's child says nothing on its answer channel,
    and is cut off at the start timeout (here the import timeout, 1 s), said as a start-up that hangs, not after the
    import's whole 180 s."""
    import time

    from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees

    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (site / "sitecustomize.py").write_text("import os, time\nif os.environ.get('CUDNN_DOCTOR_ANSWER_FD'):\n"
                                           "    time.sleep(600)\n")
    real_python_sees(site, tmp_path)
    machine.env["CUDNN_DOCTOR_DEEP_TIMEOUT"] = "1"
    started = time.monotonic()
    [torch] = machine.check_json("--deep")["frameworks"]
    assert "Python did not start within 1 s" in torch["details"]["deep"]["error"], torch["details"]["deep"]
    assert time.monotonic() - started < 60


def test_fix_verifies_its_own_line_every_time_while_other_batches_end(machine_process, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A folder first on LD_LIBRARY_PATH breaks torch, and the plan's own line takes it out: verified with the plan's
    line on every run. The doctor's command is the subreaper of what it starts; a batch that ended looked for orphans
    while another batch's child had just started and was not yet known as a child, took it for one and killed it
    (SIGKILL, 'torch crashed'): the plan's line then read as 'not curing', three runs in five."""
    from tests.test_frameworks import install_torch, python_env, real_python_sees
    from tests.test_process_env import gpu_machine

    machine = machine_process
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(BREAKABLE_TORCH.replace(
        'os.environ.get("TORCH_BREAK")', '"shadow" in os.environ.get("LD_LIBRARY_PATH", "")'))
    real_python_sees(site, tmp_path)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "libcublas.so.13").write_bytes(b"")
    machine.add_library_path(shadow)
    for _ in range(3):
        plan = machine.run("fix", "--json").json
        [step] = [a for a in plan["actions"] if a["kind"] == "env"]
        assert step["verified"].startswith("verified here: PyTorch failed without the plan's lines"), step


def test_one_variable_changed_by_the_plan_and_the_cure_is_one_line(tmp_path: Path) -> None:
    """The plan takes one folder out of PATH (its old ptxas) and the part that cures takes the folders of CUDA
    compilers out: each line writes the variable's whole new value, so they are one step whose line takes all of
    them out (two lines: the second put back what the first took out)."""
    from cudnn_doctor.doctor.verify import verify_plan
    from cudnn_doctor.model import Finding, Host, Report, Tool
    from cudnn_doctor.plan.actions import ENV, Action, EnvChange, Plan
    from cudnn_doctor.plan.shell import env_lines, folders_of

    a, b, c = (str(tmp_path / name) for name in "abc")
    for folder, tool in ((a, "ptxas"), (b, "nvcc")):
        Path(folder).mkdir()
        (Path(folder) / tool).write_bytes(b"")
    env = {"PATH": f"{a}:{b}:{c}"}
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None,
                      {"site_packages": str(tmp_path), "deep": {"error": "RuntimeError: cuDNN error"}})
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "h"), frameworks=[torch],
                    findings=[Finding("CD206", "error", "t", "d", "f")], variable_folders={"PATH": [a, b, c]})
    plan = Plan(("torch",), (Action(ENV, ("CD206",), "a out", "s", env=(EnvChange("PATH", "remove", a),)),))

    def run(frameworks, changed, limits=(), timeout=None):  # type: ignore[no-untyped-def]
        cured = b not in changed.get("PATH", "").split(":")
        return {f.name: {} if cured else {"error": "RuntimeError: cuDNN error"} for f in frameworks}

    verified = verify_plan(report, plan, env, run)
    [step] = [action for action in verified.actions if action.kind == ENV]
    assert env_lines(step.env, folders_of(report)) == [f"export PATH={c}"], step
    assert step.verified and step.verified.startswith("verified here") and "CD206" in step.resolves, step


def test_a_preload_renamed_is_classed_by_the_soname_the_loader_answers_for(tmp_path: Path) -> None:
    """A stub NVML or an old cuDNN sub-library copied under another file name still satisfies its SONAME once
    preloaded: the cure that unsets LD_PRELOAD is classed by what the file is (CD118, CD317), not by its name."""
    from fakes.build import compile_library

    from cudnn_doctor.doctor.bisect import cure_for
    from cudnn_doctor.model import Host, Report, Tool
    from cudnn_doctor.rules.process_env import _cure_code

    nvml = compile_library("fake_nvml.c", "libnvidia-ml.so", soname="libnvidia-ml.so.1")
    renamed = tmp_path / "libmonitor-helper.so"
    renamed.write_bytes(nvml.read_bytes())
    graph = tmp_path / "libgraph-old.so"
    graph.write_bytes(compile_library("fake_cudnn.c", "libcudnn_graph.so", soname="libcudnn_graph.so.9").read_bytes())
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None,
                      {"site_packages": str(tmp_path), "deep": {"error": "RuntimeError: no GPU"}})
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "h"), frameworks=[torch])

    def run(frameworks, changed, limits=(), timeout=None):  # type: ignore[no-untyped-def]
        return {f.name: {} if "LD_PRELOAD" not in changed else {"error": "RuntimeError: no GPU"} for f in frameworks}

    for preloaded, code in ((renamed, "CD118"), (graph, "CD317")):
        cure = cure_for(report, {"LD_PRELOAD": str(preloaded)}, run)
        assert cure is not None and cure.kind == "preload", cure
        assert preloaded.name in cure.libraries and _cure_code(cure) == code, cure
    # a bare name or a file that is no ELF is classed by its name, as before
    cure = cure_for(report, {"LD_PRELOAD": "libnothing.so"}, run)
    assert cure is not None and cure.libraries == ("libnothing.so",) and _cure_code(cure) == "CD409"
