"""What raised a framework's failure names its cause (issue 45, round ten): under `check --deep` the frames the
failure passed through and the modules its Python took from another copy than the installed one are read with its
words (explain.read_traceback, one knowledge for check and explain): a plugin the framework loads at import (CD421),
another copy of a module (CD419), where what plain check read names a file, folder or variable the failure names, that
finding is the cause, seen; a setting the framework refuses where used is CD411. The stand-in torch runs its first GPU
steps on the fake driver (tests/test_bisect.py) and loads its plugins with torch's own code
(tests/test_python_plugins.py); the real interpreter is the judge, and every plan line is sourced in bash and checked
again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, Machine, codes
from tests.test_bisect import BREAKABLE_TORCH
from tests.test_frameworks import install_torch, python_env, real_python_sees
from tests.test_process_env import check_after, gpu_machine, plan_lines
from tests.test_python_plugins import AUTOLOAD

# round nine's words on an H100 (benchmarks/held_out/round9, dev results): what torch 2.11 and JAX 0.11 said
PLUGIN_RAISES = '''Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/opt/venv/lib/python3.12/site-packages/torch/__init__.py", line 2962, in <module>
    _import_device_backends()
  File "/opt/venv/lib/python3.12/site-packages/torch/__init__.py", line 2958, in _import_device_backends
    raise RuntimeError(
RuntimeError: Failed to load the backend extension: torch_acme. You can disable extension auto-loading with \
TORCH_DEVICE_BACKEND_AUTOLOAD=0.'''
STALE_ML_DTYPES = '''  File "/opt/venv/lib/python3.12/site-packages/jax/_src/dtypes.py", line 48, in <module>
    raise ValueError("JAX requires ml_dtypes version 0.5 or newer; "
ValueError: JAX requires ml_dtypes version 0.5 or newer; installed version is 0.1.0.'''


def test_a_failure_raised_through_the_plugin_loader_is_a_plugins_whatever_it_says() -> None:
    from cudnn_doctor.explain.read_traceback import frames_in, mechanism

    frames = frames_in(PLUGIN_RAISES)
    assert frames[-1].endswith("torch/__init__.py:2958:_import_device_backends"), frames
    code, why = mechanism(PLUGIN_RAISES, frames, {}) or ("", "")
    assert code == "CD421" and "torch.backends" in why
    malformed = ["/usr/lib/python3.12/importlib/metadata/__init__.py:455:entry_points",
                 "/opt/venv/lib/python3.12/site-packages/jax/_src/xla_bridge.py:612:discover_pjrt_plugins",
                 "/usr/lib/python3.12/importlib/metadata/__init__.py:220:_from_text"]
    assert (mechanism("TypeError: Pair.__new__() missing 1 required positional argument: 'value'", malformed, {})
            or ("",))[0] == "CD421"


def test_a_module_from_another_copy_named_by_the_failure_is_the_cause_and_only_then() -> None:
    from cudnn_doctor.explain.read_traceback import frames_in, mechanism

    elsewhere = {"ml_dtypes": "/home/me/libs/__pycache__/ml_dtypes.cpython-312.pyc"}
    assert (mechanism(STALE_ML_DTYPES, frames_in(STALE_ML_DTYPES), elsewhere) or ("",))[0] == "CD419"
    # the same copy elsewhere, a failure that does not name it: not its cause
    assert mechanism("RuntimeError: CUDA driver initialization failed", [], elsewhere) is None
    # a frame inside the other copy's folder names it
    half = {"torch": "/tmp/half/torch/__init__.py"}
    frames = ["<string>:1:<module>", "/tmp/half/torch/__init__.py:48:<module>"]
    assert (mechanism("ModuleNotFoundError: No module named 'torch._utils'", frames, half) or ("",))[0] == "CD419"
    assert mechanism("ModuleNotFoundError: No module named 'torchvision'", [], {"torchaudio": "/x/torchaudio.py"}) is None


def test_the_deep_reading_puts_what_raised_first_and_drops_the_library_class_of_the_words() -> None:
    from cudnn_doctor.doctor.deep_words import codes_of

    said = codes_of({"error": PLUGIN_RAISES.splitlines()[-1], "traceback": [
        "/opt/venv/lib/python3.12/site-packages/torch/__init__.py:2958:_import_device_backends"]})
    assert said[:1] == ("CD421",) and "CD409" not in said, said
    assert codes_of({"error": "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu."})[:1] \
        != ("CD421",)


def _deep_torch(machine: Machine, tmp_path: Path, prelude: str = "") -> Path:
    """torch's stand-in: PRELUDE (what the real torch does first), then its plugins, then its GPU steps."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(prelude + AUTOLOAD + BREAKABLE_TORCH)
    real_python_sees(site, tmp_path)
    python = tmp_path / "venv" / "bin" / "python3"  # the user's PYTHONPATH before site-packages, as in a real venv
    python.write_text(python.read_text().replace(f"PYTHONPATH={site}", f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}"'))
    return site


def _imports(machine: Machine, tmp_path: Path, lines: list[str] = ()) -> subprocess.CompletedProcess:  # type: ignore[assignment]
    return subprocess.run(["bash", "-c", "\n".join([*lines, 'exec "$0" -c "import torch"']),
                           str(tmp_path / "venv" / "bin" / "python3")], env=machine.env, capture_output=True,
                          text=True, timeout=60)


PYTHON_CLASSES = {"CD409", "CD415", "CD419", "CD421"}  # the stand-in has no torch.distributed: NCCL's own check fails


def _errors(report: dict) -> list[dict]:  # type: ignore[type-arg]
    return [f for f in report["findings"] if f["severity"] == "error"]


def test_a_plugin_that_loads_and_raises_is_named_by_its_frames_under_deep_and_cured(machine: Machine,
                                                                                     tmp_path: Path) -> None:
    """Its module is there (plain check's finder sees nothing wrong; only running it shows it raises: --deep). The
    failure's frames pass through torch's plugin loading: CD421, seen, in its words; not CD409."""
    _deep_torch(machine, tmp_path)
    plugins = tmp_path / "plugins"
    info = plugins / "torch_acme-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_acme\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nacme = torch_acme:_autoload\n")
    (plugins / "torch_acme.py").write_text("def _autoload():\n    raise RuntimeError('no acme device')\n")
    machine.env["PYTHONPATH"] = f"{plugins}:{machine.env['PYTHONPATH']}"
    assert "Failed to load the backend extension: acme" in _imports(machine, tmp_path).stderr  # the judge
    assert not _errors(machine.check_json())
    deep = machine.check_json("--deep")
    named = [f for f in _errors(deep) if f["code"] == "CD421"]
    assert named and all(f["evidence"] == "seen" for f in named), deep["findings"]
    assert any("Failed to load the backend extension" in str(f["proof"]) for f in named), named
    cure = deep["process"]["cured_by"]  # PYTHONPATH without the plugin's folder cured it: the class its frames name
    assert cure["kind"] == "pythonpath" and cure["cause"] == "CD421", cure
    assert "CD409" not in codes(deep) and "CD415" not in codes(deep), deep["findings"]
    lines = plan_lines(machine)
    assert lines and _imports(machine, tmp_path, lines).returncode == 0, lines  # sourced: torch imports
    assert not PYTHON_CLASSES & codes(check_after(machine, lines, "--deep"))


def test_a_partial_copy_of_torch_on_pythonpath_is_read_then_seen_as_another_copy(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """A half-removed torch/ on PYTHONPATH: plain check reads it (CD419, a warning); --deep sees the import fail in
    a frame inside that folder: CD419, seen, the folder named; its fix line cures and check is clean after."""
    _deep_torch(machine, tmp_path)
    half = tmp_path / "half"
    (half / "torch").mkdir(parents=True)
    (half / "torch" / "__init__.py").write_text("from torch._utils import classproperty\n")
    machine.env["PYTHONPATH"] = f"{half}:{machine.env['PYTHONPATH']}"
    assert "No module named 'torch._utils'" in _imports(machine, tmp_path).stderr
    plain = machine.check_json()
    [read] = [f for f in plain["findings"] if f["code"] == "CD419"]
    assert read["severity"] == "warning" and read["subject"] == str(half / "torch"), read
    deep = machine.check_json("--deep")
    seen = [f for f in _errors(deep) if f["code"] == "CD419"]
    assert any(f["subject"] == str(half / "torch") and "torch._utils" in str(f["proof"]) for f in seen), seen
    assert deep["process"]["cured_by"]["cause"] == "CD419", deep["process"]["cured_by"]  # named by its frames
    assert "CD409" not in codes(deep) and "CD415" not in codes(deep), deep["findings"]
    lines = plan_lines(machine)
    assert _imports(machine, tmp_path, lines).returncode == 0, lines
    assert not PYTHON_CLASSES & codes(check_after(machine, lines, "--deep"))


def test_a_stale_dependency_named_only_by_its_name_is_another_copy_seen(machine: Machine, tmp_path: Path) -> None:
    """typing_extensions installed, an old one on PYTHONPATH, and a failure that names the module but no file (as JAX
    named ml_dtypes): the module the child imported from elsewhere, named in the words, is the cause: CD419."""
    site = _deep_torch(machine, tmp_path, prelude=(
        "import typing_extensions\nif not hasattr(typing_extensions, 'deprecated'):\n    raise ValueError('torch requires "
        "typing_extensions 4.5 or newer; installed version is ' + typing_extensions.VERSION)\n"))
    (site / "typing_extensions.py").write_text("VERSION = '4.12'\ndef deprecated(*a):\n    pass\n")
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "typing_extensions.py").write_text("VERSION = '3.7'\n")
    machine.env["PYTHONPATH"] = f"{stale}:{machine.env['PYTHONPATH']}"
    deep = machine.check_json("--deep")
    named = [f for f in _errors(deep) if f["code"] == "CD419"]
    assert named and any("3.7" in str(f["proof"]) for f in named), deep["findings"]
    assert "CD409" not in codes(deep) and "CD415" not in codes(deep), deep["findings"]
    lines = plan_lines(machine)
    assert _imports(machine, tmp_path, lines).returncode == 0, lines
    assert not PYTHON_CLASSES & codes(check_after(machine, lines, "--deep"))


def test_entry_points_python_cannot_parse_are_asked_of_python_and_seen_plain(machine: Machine, tmp_path: Path) -> None:
    """A distribution's entry_points.txt with a line that is no `name = value` (UTF-8, naming no group the framework
    reads): importlib.metadata raises for every group as torch loads its plugins. Plain check asks Python (a small
    gate of its own) and says CD421, seen, in Python's words; the plan's line cures."""
    site = _deep_torch(machine, tmp_path)
    broken = tmp_path / "broken"
    info = broken / "oddtool-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oddtool\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\noddtool\n")
    machine.env["PYTHONPATH"] = f"{broken}:{machine.env['PYTHONPATH']}"
    judged = _imports(machine, tmp_path)
    assert judged.returncode != 0 and "TypeError" in judged.stderr, judged.stderr
    report = machine.check_json()
    [said] = [f for f in _errors(report) if f["code"] == "CD421"]
    assert said["evidence"] == "seen" and "TypeError" in said["proof"], said
    lines = plan_lines(machine)
    assert _imports(machine, tmp_path, lines).returncode == 0, lines
    assert "CD421" not in codes(check_after(machine, lines))
    assert site.exists()


def test_a_setting_torch_refuses_at_import_is_that_class(machine: Machine, tmp_path: Path) -> None:
    """TORCH_DISTRIBUTED_DEBUG=1: torch 2.11's import refuses it (ValueError from torch.distributed, which `import
    torch` imports: seen on an H100, the data's source): CD411, the rule (not CD414, a value a framework ignores);
    under --deep, its words name the variable: seen. The plan unsets it; sourced, check is clean of it."""
    _deep_torch(machine, tmp_path, prelude=(
        "import os\nif os.environ.get('TORCH_DISTRIBUTED_DEBUG', 'OFF').upper() not in ('OFF', 'INFO', 'DETAIL'):\n"
        "    raise ValueError('The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.')\n"))
    machine.env["TORCH_DISTRIBUTED_DEBUG"] = "1"
    plain = machine.check_json()
    [read] = [f for f in plain["findings"] if f["subject"] == "TORCH_DISTRIBUTED_DEBUG"]
    assert read["code"] == "CD411" and read["severity"] == "error" and read["evidence"] == "rule", read
    deep = machine.check_json("--deep")
    [seen] = [f for f in deep["findings"] if f["subject"] == "TORCH_DISTRIBUTED_DEBUG"]
    assert seen["code"] == "CD411" and seen["severity"] == "error" and seen["evidence"] == "seen", seen
    lines = plan_lines(machine)
    assert "unset TORCH_DISTRIBUTED_DEBUG" in lines, lines
    assert not [f for f in check_after(machine, lines, "--deep")["findings"] if f["subject"] == "TORCH_DISTRIBUTED_DEBUG"]


@pytest.mark.parametrize("options", ["detect_leaks=0", "protect_shadow_gap=0"])
def test_asan_preloaded_takes_cudnns_runpath_away_seen_with_the_real_wheel(machine: Machine, tmp_path: Path,
                                                                           options: str) -> None:
    """gcc's real libasan preloaded, the real cuDNN 9.19 wheel loaded as torch loads it: ASan's dlopen interceptor
    makes cuDNN's own dlopen of libcudnn_graph.so.9 search without the front library's RUNPATH, and cuDNN ends the
    child ('Invalid handle'), the shadow gap protected or not. Named as what it is (the sub-library not found where the
    loader looks, the preloaded sanitizer its cause), not a broken file; the sanitizer out of LD_PRELOAD cures."""
    from tests.test_loading import torch_with_real_cudnn
    from tests.test_sanitizers import libasan

    asan = libasan()
    if asan is None:
        pytest.skip("gcc's libasan is not installed (.ci/run installs it)")
    torch_with_real_cudnn(machine, tmp_path)
    machine.env.update(LD_PRELOAD=asan, LSAN_OPTIONS="detect_leaks=0", ASAN_OPTIONS=options)
    report = machine.check_json()
    [said] = [f for f in _errors(report) if f["code"] == "CD304"]
    assert said["evidence"] == "seen" and "libcudnn_graph.so.9" in said["detail"] and "RUNPATH" in said["detail"], said
    assert asan in said["proof"] and "CD308" not in codes(report), report["findings"]
    lines = plan_lines(machine)
    assert "unset LD_PRELOAD" in lines, lines
    after = check_after(machine, lines)
    assert not {"CD304", "CD305", "CD308"} & codes(after), after["findings"]


def test_explain_reads_the_same_frames_from_a_pasted_traceback(machine: Machine) -> None:
    """One knowledge, two doors: the traceback pasted to `cudnn-doctor explain` names the plugin class by its frames,
    where the words alone (a TypeError of importlib.metadata) name nothing of the GPU stack."""
    import json

    text = ('Traceback (most recent call last):\n  File "/v/lib/python3.12/site-packages/torch/__init__.py", line 2962, '
            'in <module>\n    _import_device_backends()\n  File "/v/lib/python3.12/site-packages/torch/__init__.py", '
            'line 2945, in _import_device_backends\n    backend_extensions = entry_points(group=group_name)\n  File '
            '"/usr/lib/python3.12/importlib/metadata/__init__.py", line 220, in _from_text\nTypeError: Pair.__new__() '
            "missing 1 required positional argument: 'value'\n")
    done = machine.run("explain", "-", "--json", "--offline-only", input=text)
    [first, *_] = json.loads(done.stdout)["matches"]
    assert first["code"] == "CD421" and "_import_device_backends" in json.dumps(first), first


REAL_JAX_CHILD = '''import json, sys
from cudnn_doctor._deep_child import frames_of, imported_elsewhere
try:
    import jax
    jax.devices()
    print(json.dumps({}))
except BaseException as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}", "traceback": frames_of(error),
                      "elsewhere": imported_elsewhere(sys.argv[1], error)}))
'''


@pytest.mark.parametrize("case", ["entry-points", "stale-ml_dtypes"])
def test_the_real_jax_failing_so_is_read_by_its_frames(tmp_path: Path, case: str) -> None:
    """The real JAX (0.4.38, CPU) fails as round nine's JAX 0.11 did on the H100: importlib.metadata's TypeError on a
    malformed entry_points.txt, raised through its discover_pjrt_plugins (CD421); an old ml_dtypes first on
    PYTHONPATH, whose name its AttributeError says (CD419). What the --deep child records of it (its own functions,
    run after the real failure) names that class, and nothing claims the framework's GPU library."""
    import json
    import sys

    from cudnn_doctor.doctor.deep_words import codes_of
    from tests.real_wheels import real_jax_cpu

    jax_site = real_jax_cpu()
    extra = tmp_path / "extra"
    if case == "entry-points":
        info = extra / "oddtool-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oddtool\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[console_scripts]\noddtool\n")
    else:
        extra.mkdir()
        (extra / "ml_dtypes.py").write_text("__version__ = '0.1.0'\n")
    env = {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "PYTHONPATH": f"{extra}:{jax_site}:{ROOT}"}
    done = subprocess.run([sys.executable, "-c", REAL_JAX_CHILD, str(jax_site)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    deep = json.loads(done.stdout.strip().splitlines()[-1])
    assert deep.get("error"), done.stderr[-800:]
    said = codes_of(deep)
    assert said[:1] == (("CD421",) if case == "entry-points" else ("CD419",)), (said, deep)
    assert "CD409" not in said


def test_a_second_wheel_tree_of_cudnn_on_pythonpath_is_what_torchs_own_search_loads(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """torch finds its cuDNN by searching sys.path for nvidia/cudnn/lib, and a program's PYTHONPATH comes before
    site-packages: a second tree there (cuDNN 9.14, gcc-built) is what torch maps (round nine on an H100: "compiled
    against (9, 19, 0) but found runtime version (9, 14, 0)"). The loading child runs torch's own search with
    PYTHONPATH where a program has it, so plain check names it: CD408, the copy named; the plan's line cures."""
    from tests.fakes.build import fake_cudnn
    from tests.test_check import CUDNN9_SUBLIBS
    from tests.test_loading import torch_with_real_cudnn

    site = torch_with_real_cudnn(machine, tmp_path)
    python = tmp_path / "venv" / "bin" / "python3"  # the user's PYTHONPATH before site-packages, as in a real venv
    python.write_text(python.read_text().replace(f"PYTHONPATH={site}", f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}"'))
    tree = tmp_path / "tree"
    fake_cudnn(tree / "nvidia" / "cudnn" / "lib", version=91400, sublibraries=CUDNN9_SUBLIBS)
    machine.env["PYTHONPATH"] = f"{tree}:{machine.env['PYTHONPATH']}"
    report = machine.check_json()
    [said] = [f for f in _errors(report) if f["code"] == "CD408"]
    assert str(tree / "nvidia" / "cudnn" / "lib") in said["detail"] and "9.14" in said["detail"], said
    [load] = [x for x in report["process"]["loads"] if x["user"] == "torch"]
    assert load["front"].startswith(str(tree)), load  # torch's own code, run with PYTHONPATH as a program has it
    lines = plan_lines(machine)
    assert any(line.startswith(("export PYTHONPATH=", "unset PYTHONPATH")) for line in lines), lines
    after = check_after(machine, lines)
    assert "CD408" not in codes(after), after["findings"]
    torch_after = [x for x in after["process"]["loads"] if x["user"] == "torch"]
    assert not torch_after or torch_after[0]["front"].startswith(str(site)), torch_after


def test_a_copy_built_for_another_python_on_pythonpath_is_that_class_read_then_seen(machine: Machine,
                                                                                    tmp_path: Path) -> None:
    """numpy on PYTHONPATH installed by another Python (`pip install --target` run by 3.99, a home shared with
    another architecture): its compiled module is tagged for that Python, which this one never imports (its own
    importlib.machinery.EXTENSION_SUFFIXES). Plain check: the framework's Python finds that copy and its suffixes fit
    none of the files: CD410 (built against another version), a warning, not CD419's "another copy"; --deep sees the
    import fail inside that folder: CD410, seen; the plan's line cures and check --deep is clean after."""
    site = _deep_torch(machine, tmp_path, prelude="import numpy\n")
    for root, core in ((site, "_umath.py"), (tmp_path / "other", "_umath.cpython-399-x86_64-linux-gnu.so")):
        (root / "numpy" / "_core").mkdir(parents=True)
        (root / "numpy" / "__init__.py").write_text("from numpy._core import multiply\n")
        (root / "numpy" / "_core" / "__init__.py").write_text("from numpy._core._umath import multiply\n")
        (root / "numpy" / "_core" / core).write_bytes(b"multiply = None\n" if core.endswith(".py") else b"\x7fELF")
    machine.env["PYTHONPATH"] = f"{tmp_path / 'other'}:{machine.env['PYTHONPATH']}"
    assert "No module named 'numpy._core._umath'" in _imports(machine, tmp_path).stderr  # the judge
    plain = machine.check_json()
    built = [f for f in plain["findings"] if f["code"] == "CD410"]
    assert built and all(f["severity"] == "warning" and f["subject"] == str(tmp_path / "other" / "numpy")
                         for f in built), plain["findings"]
    assert ".cpython-399-x86_64-linux-gnu.so" in built[0]["detail"] and "CD419" not in codes(plain), built
    deep = machine.check_json("--deep")
    seen = [f for f in _errors(deep) if f["code"] == "CD410"]
    assert seen and all(f["evidence"] == "seen" for f in seen), deep["findings"]
    assert deep["process"]["cured_by"]["cause"] == "CD410", deep["process"]["cured_by"]
    assert not {"CD409", "CD415", "CD419"} & codes(deep), deep["findings"]
    lines = plan_lines(machine)
    assert lines and _imports(machine, tmp_path, lines).returncode == 0, lines
    assert not (PYTHON_CLASSES | {"CD410"}) & codes(check_after(machine, lines, "--deep"))


@pytest.mark.parametrize("words", [
    # a text file named as the standard library's ctypes extension, in the working folder (round seventeen's GPU set)
    "  File \"/usr/lib/python3.12/ctypes/__init__.py\", line 8, in <module>\n"
    "    from _ctypes import Union, Structure, Array\n"
    "ImportError: /work/project/_ctypes.cpython-312-x86_64-linux-gnu.so: invalid ELF header",
    # another machine's build of it on PYTHONPATH
    "ImportError: /opt/vendored/_ssl.cpython-312-aarch64-linux-gnu.so: cannot open shared object file: No such file or "
    "directory",
])
def test_pythons_own_extension_module_from_another_folder_is_another_copy(words: str) -> None:
    """Python's own extension module (sys.stdlib_module_names) refused from a file outside lib-dynload: a copy came
    first on sys.path (the working folder for `python -c`), CD419; --deep said CD415, nothing named (round
    seventeen's published GPU set, not blind)."""
    from cudnn_doctor.explain.read_traceback import mechanism

    found = mechanism(words, [], {})
    assert found is not None and found[0] == "CD419" and "Python's own library" in found[1], found


@pytest.mark.parametrize("words", [
    "ImportError: /usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so: invalid ELF header",
    "ImportError: /venv/lib/python3.12/site-packages/torch/_C.cpython-312-x86_64-linux-gnu.so: undefined symbol: x",
])
def test_the_interpreters_own_copy_or_a_frameworks_module_is_not_that(words: str) -> None:
    from cudnn_doctor.explain.read_traceback import mechanism

    assert mechanism(words, [], {}) is None
