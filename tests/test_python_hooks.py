"""Python start-up hooks that load a GPU library before the framework does (issue 45, round eight): a sitecustomize.py
on PYTHONPATH that loads another cuDNN with ctypes runs in every Python program before its first line; the framework's
libraries then ask the loader for libcudnn.so.9 by name and get that copy. Asked of the framework's own Python,
started as a program is (its /proc/self/maps at the program's first line), only where a hook's text names ctypes,
cuDNN, CUDA...; the finding is seen, and fix takes the hook's folder out of PYTHONPATH (sourced in bash, check again
clean)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn
from tests.test_loading import LOADING_TORCH, torch_with_real_cudnn
from tests.test_process_env import check_after, env_lines, finding, plan_lines


def torch_with_its_python(machine: Machine, tmp_path: Path) -> Path:
    """torch 2.11 with the real cuDNN 9.19 wheel, a stand-in __init__.py that loads it as torch does and refuses
    another release at its first convolution as torch does ("cuDNN version incompatibility"); its environment's
    python3 the real interpreter, which sees the user's PYTHONPATH after its own site-packages."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH.replace(
        "def _first_steps(*args, **kwargs):\n",
        "def _first_steps(*args, **kwargs):\n"
        "    if _lib.cudnnGetVersion() != 91900:\n"
        "        raise RuntimeError('cuDNN version incompatibility: PyTorch was compiled against (9, 19, 0) but found '\n"
        "                           'runtime version %d' % _lib.cudnnGetVersion())\n"))
    python = tmp_path / "venv" / "bin" / "python3"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={site}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return site


def hook_folder(tmp_path: Path, text: str, name: str = "site-policy") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(text)
    return folder


@pytest.mark.integration
@pytest.mark.parametrize("name", ["site-policy", "site, policy 'v2'"])  # a folder name with a comma and quotes
def test_a_sitecustomize_that_loads_another_cudnn_is_seen_and_taken_out(machine: Machine, tmp_path: Path,
                                                                        name: str) -> None:
    torch_with_its_python(machine, tmp_path)
    system = fake_cudnn(tmp_path / "system", version=91400)
    hooks = hook_folder(tmp_path, "# make cuDNN available to every program\nimport ctypes\n"
                                  f"ctypes.CDLL({str(system)!r}, mode=ctypes.RTLD_GLOBAL)\n", name)
    machine.env["PYTHONPATH"] = f"{hooks}:{machine.env['PYTHONPATH']}"  # the checkout stays on it: the doctor runs
    report = machine.check_json()
    said = finding(report, "CD317")
    assert said["severity"] == "error" and said["evidence"] == "seen", said
    assert "sitecustomize.py" in said["detail"] and "9.14" in said["detail"] and "/proc/self/maps" in said["proof"]
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["verified"].startswith("verified here"), step  # torch failed with the hook and ran without it
    lines = env_lines(plan)  # the plan's lines, as plan_lines gives them (one `fix` run for both)
    assert any("PYTHONPATH" in line for line in lines), lines
    assert str(hooks) in step["why"], step  # the hook's own folder named and taken out, whatever its name
    assert "CD317" not in codes(check_after(machine, lines))


def test_a_sitecustomize_that_loads_nothing_is_asked_and_no_finding(machine: Machine, tmp_path: Path) -> None:
    """A hook that names CUDA but loads no library: the started Python has none mapped, nothing said."""
    torch_with_its_python(machine, tmp_path)
    machine.env["PYTHONPATH"] = str(hook_folder(tmp_path, "import os\nos.environ.setdefault('CUDA_MODULE_LOADING', "
                                                          "'LAZY')\n"))
    assert "CD317" not in codes(machine.check_json())


def test_a_pth_file_that_loads_another_cudnn_in_site_packages_is_seen(machine: Machine, tmp_path: Path) -> None:
    """A .pth file's import line runs at start too: site-packages/zz_cudnn.pth. No PYTHONPATH folder to take out:
    the error names the hook (fix cannot take a file out of site-packages for you)."""
    site = torch_with_its_python(machine, tmp_path)
    # its site-packages a site folder to the real interpreter (.pth files run only there): its user site
    user = tmp_path / "userbase" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    user.mkdir(parents=True)
    (user / "site-packages").symlink_to(site)
    python = tmp_path / "venv" / "bin" / "python3"
    base = getattr(sys, "_base_executable", sys.executable)  # a venv's interpreter has no user site
    python.write_text(f"#!/bin/sh\nPYTHONUSERBASE={tmp_path / 'userbase'} PYTHONPATH={site} exec {base} \"$@\"\n")
    system = fake_cudnn(tmp_path / "system", version=91400)
    (site / "zz_cudnn.pth").write_text(f"import ctypes; ctypes.CDLL({str(system)!r}, mode=ctypes.RTLD_GLOBAL)\n")
    said = finding(machine.check_json(), "CD317")
    assert said["evidence"] == "seen" and "zz_cudnn.pth" in said["detail"], said


def test_a_sitecustomize_that_loads_another_cuda_library_is_a_warning_with_its_fix(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """A hook that loads a libcublasLt.so.13 of its own where torch's wheels hold theirs: torch's libraries get the
    hook's (the soname is taken); seen in the started Python, a warning --deep proves, and fix's line takes the hook's
    folder out (sourced in bash, check again clean)."""
    from tests.fakes.build import compile_library

    site = torch_with_its_python(machine, tmp_path)
    own = site / "nvidia" / "cu13" / "lib"
    own.mkdir(parents=True)
    wheel = compile_library("fake_cuda_library.c", "libcublasLt.so", soname="libcublasLt.so.13")
    (own / "libcublasLt.so.13").symlink_to(wheel)
    other = tmp_path / "other"
    other.mkdir()
    (other / "libcublasLt.so.13").write_bytes(wheel.read_bytes())
    hooks = hook_folder(tmp_path, f"import ctypes\nctypes.CDLL({str(other / 'libcublasLt.so.13')!r})\n")
    machine.env["PYTHONPATH"] = f"{hooks}:{machine.env['PYTHONPATH']}"
    said = finding(machine.check_json(), "CD203")
    assert said["severity"] == "warning" and said["evidence"] == "seen" and "sitecustomize.py" in said["detail"], said
    lines = plan_lines(machine)
    assert any("PYTHONPATH" in line for line in lines), lines
    assert "CD203" not in codes(check_after(machine, lines))


def test_a_pth_line_is_judged_by_what_it_runs_not_by_the_names_it_imports(tmp_path: Path) -> None:
    # numba-cuda's .pth imports a module that only finds modules: its name holds "cuda", its code loads nothing, and
    # no Python is started for it (it was, in every check of a machine with numba-cuda: 20-50 ms on an H100); a
    # module that calls ctypes.CDLL, imported by a .pth line, is a hook that may load a GPU library
    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.python_start import start_hooks

    site = tmp_path / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (site / "_numba_cuda_redirector.py").write_text("import importlib.abc, sys\nclass Finder(importlib.abc.MetaPathFinder):"
                                                    "\n    pass\nsys.meta_path.append(Finder())\n")
    (site / "_numba_cuda_redirector.pth").write_text("import _numba_cuda_redirector\n")
    torch = Framework("torch", "2.11.0", "13.0", "9.19.0.56", None, "dist-info", str(site / "torch"),
                      details={"site_packages": str(site)})
    assert start_hooks({}, [torch]) == []
    (site / "gpu_preload").mkdir()
    (site / "gpu_preload" / "__init__.py").write_text("import ctypes\nctypes.CDLL('libcudnn.so.9')\n")
    (site / "zz_preload.pth").write_text("import os; import gpu_preload\n")
    assert start_hooks({}, [torch]) == [str(site / "zz_preload.pth")]


@pytest.mark.integration
@pytest.mark.parametrize("no_user_site", [None, "", "1"])
def test_a_usercustomize_in_a_moved_user_base_that_loads_another_cudnn(machine: Machine, tmp_path: Path,
                                                                       no_user_site: str | None) -> None:
    """PYTHONUSERBASE names a folder whose user site holds a usercustomize that loads another cuDNN: Python runs it
    at start (Lib/site.py), unless PYTHONNOUSERSITE is set non-empty (an empty one counts as unset) or the Python is
    a venv's without system site-packages (its user site is never read)."""
    site = torch_with_its_python(machine, tmp_path)
    system = fake_cudnn(tmp_path / "system", version=91400)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    user = tmp_path / "userbase" / "lib" / version / "site-packages"
    user.mkdir(parents=True)
    if version != site.parent.name:  # the stand-in environment's folder is named for another release than ours
        (tmp_path / "userbase" / "lib" / site.parent.name).symlink_to(user.parent)
    (user / "usercustomize.py").write_text(f"import ctypes\nctypes.CDLL({str(system)!r}, mode=ctypes.RTLD_GLOBAL)\n")
    python = tmp_path / "venv" / "bin" / "python3"
    base = getattr(sys, "_base_executable", sys.executable)  # a venv's interpreter reads no user site
    python.write_text(f"#!/bin/sh\nPYTHONPATH={site}${{PYTHONPATH:+:$PYTHONPATH}} exec {base} \"$@\"\n")
    machine.env["PYTHONUSERBASE"] = str(tmp_path / "userbase")
    if no_user_site is not None:
        machine.env["PYTHONNOUSERSITE"] = no_user_site
    report = machine.check_json()
    if no_user_site:
        assert "CD317" not in codes(report)
        return
    said = finding(report, "CD317")
    assert said["evidence"] == "seen" and "usercustomize.py" in said["detail"], said
