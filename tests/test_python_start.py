"""The frameworks' Python started in this environment (probes/python_start.py): where a Python variable it reads at
start stops it, plain check sees it stop, names the variable without which it starts (each unset alone in a child),
and fix's line unsets it; where it starts, nothing is said. The real interpreter is the judge."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Machine
from tests.test_frameworks import install_torch, python_env, real_python_sees


def _torch(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    real_python_sees(site, tmp_path)


def test_a_python_variable_that_stops_the_interpreter_is_seen_and_named(machine: Machine, tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    machine.env.update({"PYTHONHASHSEED": "not-a-number", "PYTHONWARNINGS": "default", "PYTHONUTF8": "1"})
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD411" and f["subject"] == "PYTHONHASHSEED"]
    assert said["severity"] == "error" and said["evidence"] == "seen", said
    assert "PYTHONHASHSEED" in said["proof"] and "unset" in said["proof"], said
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "unset PYTHONHASHSEED" in lines, plan["actions"]
    done = subprocess.run(["bash", "-c", "\n".join(lines) + "\nexec \"$0\" -c 'print(1)'",
                           str(tmp_path / "venv" / "bin" / "python3")],
                          env=machine.env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "1", done.stderr  # the line sourced, the interpreter starts


def test_python_variables_it_starts_with_are_no_finding(machine: Machine, tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    machine.env.update({"PYTHONHASHSEED": "0", "PYTHONWARNINGS": "ignore::DeprecationWarning", "PYTHONUTF8": "1"})
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["code"] == "CD411"], json.dumps(report["findings"])[:2000]



def test_the_variables_tried_are_those_python_and_the_loader_read_at_start() -> None:
    from cudnn_doctor.probes.python_start import StartQuestion

    env = {"PYTHONHOME": "/x", "PYTHONPATH": "/p", "LD_ASSUME_KERNEL": "2.4", "LD_LIBRARY_PATH": "/l",
           "GLIBC_TUNABLES": "glibc.malloc.check=3", "MALLOC_ARENA_MAX": "2", "PYTHONUNBUFFERED": "1", "HOME": "/h"}
    assert StartQuestion([], env).names == ["GLIBC_TUNABLES", "LD_ASSUME_KERNEL", "MALLOC_ARENA_MAX", "PYTHONHOME"]


def test_a_module_in_the_working_folder_that_shadows_what_torch_imports_is_a_warning(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    (Path(machine.cwd) / "numpy.py").write_text("raise ImportError('my numpy')\n")
    (Path(machine.cwd) / "test.py").write_text("print('my tests')\n")  # nothing torch imports at start
    report = machine.check_json()
    shadows = [f for f in report["findings"] if f["code"] == "CD419"]
    assert [f["subject"] for f in shadows] == [str(Path(machine.cwd) / "numpy")], shadows
    assert shadows[0]["severity"] == "warning" and "working folder" in shadows[0]["detail"], shadows[0]
    done = subprocess.run([str(tmp_path / "venv" / "bin" / "python3"), "-c", "import numpy"], cwd=machine.cwd,
                          env=machine.env, capture_output=True, text=True, timeout=60)
    assert "my numpy" in done.stderr  # what the warning says, as Python does it


def _real_venv_torch(machine: Machine, tmp_path: Path) -> Path:
    """A real venv (python -m venv, no pip) on PATH with torch's files installed in its site-packages: its python3
    calls that folder its own only as long as it finds its pyvenv.cfg beside the executable it is named as."""
    import sys

    from tests.test_frameworks import install_torch

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = tmp_path / "venv" / "lib" / version / "site-packages"
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text("")
    machine.env["PATH"] = f"{tmp_path / 'venv' / 'bin'}:{machine.env['PATH']}"
    return site


def test_pythonexecutable_outside_the_venv_takes_its_site_packages_away_seen_and_unset(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    # python/cpython Modules/getpath.py: PYTHONEXECUTABLE is sys.executable and where venvs are searched; named as
    # a Python outside the venv, the venv's python3 starts as that one, without the venv's site-packages
    import sys

    _real_venv_torch(machine, tmp_path)
    other = Path(sys.base_prefix) / "bin" / "python3"
    machine.env["PYTHONEXECUTABLE"] = str(other)
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD411" and f["subject"] == "PYTHONEXECUTABLE"]
    assert said["severity"] == "error" and said["evidence"] == "seen", said
    assert "unset" in said["proof"] and "import torch" in said["proof"], said
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "unset PYTHONEXECUTABLE" in lines, plan["actions"]
    done = subprocess.run(["bash", "-c", "\n".join(lines) + "\nexec \"$0\" -c 'import torch; print(torch.__file__)'",
                           str(tmp_path / "venv" / "bin" / "python3")],
                          env=machine.env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().startswith(str(tmp_path / "venv")), done.stderr  # sourced: the venv's torch again


def test_pythonexecutable_naming_the_venvs_own_python_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    _real_venv_torch(machine, tmp_path)
    machine.env["PYTHONEXECUTABLE"] = str(tmp_path / "venv" / "bin" / "python3")
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["code"] in ("CD411", "CD409", "CD419")], report["findings"]


def test_the_user_site_read_is_the_one_the_real_python_reads(tmp_path: Path) -> None:
    # Lib/site.py is the judge: the user site where ENABLE_USER_SITE, none in a venv without system site-packages
    # or with PYTHONNOUSERSITE non-empty (an empty one counts as unset)
    import os
    import sys

    from cudnn_doctor.probes.python_start import user_site

    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for system_site in ("false", "true"):
        venv = tmp_path / f"venv-{system_site}"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)]
                       + (["--system-site-packages"] if system_site == "true" else []), check=True, timeout=120)
        site = str(venv / "lib" / version / "site-packages")
        for extra in ({}, {"PYTHONNOUSERSITE": ""}, {"PYTHONNOUSERSITE": "1"}, {"PYTHONUSERBASE": str(tmp_path / "u")},
                      {"PYTHONUSERBASE": ""}):
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home"), **extra}
            real = subprocess.run([str(venv / "bin" / "python3"), "-c",
                                   "import site; print(site.getusersitepackages() if site.ENABLE_USER_SITE else '')"],
                                  env=env, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
            assert user_site(env, site) == real, (system_site, extra)


def test_start_up_settings_python_and_the_loader_accept_are_no_finding(machine: Machine, tmp_path: Path) -> None:
    # each asked of the real interpreter and the real loader in a child: the legacy loader variables glibc 2.3x
    # ignores or takes, the newer Python variables at values every release takes (or ignores, before 3.13), a
    # folder of libraries on PYTHONPATH (Python imports no .so that is not a module), and no HOME, USER, LOGNAME
    # or XDG folders (site then asks the password database)
    from tests.test_frameworks import fake_cudnn

    _torch(machine, tmp_path)
    system = tmp_path / "system-cudnn"
    fake_cudnn(system, version=91400)
    before = {(f["code"], f["severity"], f["subject"]) for f in machine.check_json()["findings"]}
    for name in ("HOME", "USER", "LOGNAME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        machine.env.pop(name, None)
    machine.env.update({"LD_ASSUME_KERNEL": "2.4.1", "LD_DYNAMIC_WEAK": "1", "LD_HWCAP_MASK": "0",
                        "PYTHON_GIL": "1", "PYTHON_CPU_COUNT": "default", "PYTHON_FROZEN_MODULES": "on",
                        "PYTHONNOUSERSITE": "", "PYTHONPATH": str(system)})
    report = machine.check_json()
    said = [f for f in report["findings"] if (f["code"], f["severity"], f["subject"]) not in before]
    assert not said, json.dumps(said)[:3000]  # what the machine itself has (no driver here) and nothing more


def test_the_doctor_placed_outside_its_own_venv_says_which_variable_in_one_line(tmp_path: Path) -> None:
    # the doctor is a Python program too: PYTHONEXECUTABLE naming another Python starts its venv's interpreter as
    # that one, and a dependency of its own (rich, for the text report) is not found: one line naming the variable,
    # exit 2, never an internal error
    import os
    import sys

    import pytest

    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests' Python is no venv: nothing of its own to lose")
    root = Path(__file__).resolve().parents[1]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(root),
           "PYTHONEXECUTABLE": str(Path(sys.base_prefix) / "bin" / "python3")}
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check"], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    if done.returncode in (0, 1):
        pytest.skip("every dependency of the doctor is in the base Python too")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert "PYTHONEXECUTABLE" in done.stderr and "unset PYTHONEXECUTABLE" in done.stderr, done.stderr


def test_python_s_own_compiled_module_shadowed_in_the_working_folder_is_a_warning(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """A text file named `_ctypes<this Python's suffix>` in the working folder (round seventeen's published GPU set:
    `import torch` then ends with "invalid ELF header"): the finder takes the working folder before lib-dynload, so
    plain check names it (CD419, read: a warning --deep proves) and fix's PYTHONSAFEPATH=1 cures it, the real
    interpreter the judge both ways. A copy tagged for another Python is passed over by the finder: nothing said."""
    import importlib.machinery
    import sys

    _real_venv_torch(machine, tmp_path)
    python = str(tmp_path / "venv" / "bin" / "python3")
    other = f".cpython-3{sys.version_info[1] - 1}-x86_64-linux-gnu.so"
    (Path(machine.cwd) / f"_json{other}").write_text("version https://git-lfs.github.com/spec/v1\n")
    assert not [f for f in machine.check_json()["findings"] if f["code"] == "CD419"]
    (Path(machine.cwd) / f"_ctypes{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_text(
        "version https://git-lfs.github.com/spec/v1\n")
    broken = subprocess.run([python, "-c", "import ctypes"], cwd=machine.cwd, env=machine.env, capture_output=True,
                            text=True, timeout=60)
    assert "invalid ELF header" in broken.stderr or "file too short" in broken.stderr, broken.stderr
    shadows = [f for f in machine.check_json()["findings"] if f["code"] == "CD419"]
    assert [f["subject"] for f in shadows] == [str(Path(machine.cwd) / "_ctypes")], shadows
    assert shadows[0]["severity"] == "warning" and shadows[0]["evidence"] == "read", shadows[0]
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "export PYTHONSAFEPATH=1" in lines, plan["actions"]
    cured = subprocess.run(["bash", "-c", "\n".join(lines) + "\nexec \"$0\" -c 'import ctypes; print(1)'", python],
                           cwd=machine.cwd, env=machine.env, capture_output=True, text=True, timeout=60)
    assert cured.stdout.strip() == "1", cured.stderr


def test_the_doctor_starts_in_a_folder_whose_modules_hide_the_standard_library_and_names_them(machine: Machine,
                                                                                                tmp_path: Path) -> None:
    """A user reading site-packages/torch starts programs there: its __future__.py comes first on sys.path for
    `python -m` and `python -c`, the doctor's own included; the doctor starts anyway and names what programs meet."""
    _torch(machine, tmp_path)
    (Path(machine.cwd) / "__future__.py").write_text("raise ImportError('torch/__future__.py stand-in')\n")
    (Path(machine.cwd) / "numpy.py").write_text("raise ImportError('my numpy')\n")
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], cwd=machine.cwd, env=machine.env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    shadows = {f["subject"] for f in report["findings"] if f["code"] == "CD419"}
    assert str(Path(machine.cwd) / "numpy") in shadows, report["findings"]
