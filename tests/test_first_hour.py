"""Issue 36: fixes a user can paste as printed, and a first hour without friction. Each test runs the CLI as a
user does (a subprocess on a pretend machine, or NVIDIA's real wheels where the point is about them) and failed
before its fix."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.install_helpers import make_archive
from tests.test_check import CUDNN8_SUBLIBS, make_toolkit, write_header

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the pretend machines are Linux ones")


def with_driver(machine: Machine, tmp_path: Path, cuda: int = 13000) -> None:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=cuda)
    machine.add_library_path(tmp_path / "driver")


def known_build(machine: Machine, version: str, cuda: str) -> bool:
    """Whether `compat cudnn==VERSION --cuda CUDA` says that build exists (the user's own way to ask)."""
    return machine.run("compat", f"cudnn=={version}", "--cuda", cuda).exit_code == 0


# --- fixes that were wrong ---------------------------------------------------------------------------------------

def test_cd306_of_a_copy_on_ld_library_path_installs_the_toolkits_cuda_major(machine: Machine, tmp_path: Path) -> None:
    """cuDNN 8.9.7 for CUDA 12 on LD_LIBRARY_PATH beside a CUDA 13 toolkit: the plan takes a build for CUDA 13 (the
    toolkit's major), not the copy's own CUDA 12 build again, and the advice names a build that exists."""
    with_driver(machine, tmp_path)
    make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(tmp_path / "cudnn8" / "lib", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    write_header(tmp_path / "cudnn8" / "include", "8.9.7")
    machine.add_library_path(tmp_path / "cudnn8" / "lib")
    report = machine.check_json()
    [cd306] = [f for f in report["findings"] if f["code"] == "CD306"]
    [install] = [a for a in report["plan"]["actions"] if "CD306" in a["resolves"] and a["kind"] == "install"]
    argv = install["argv"]
    version, cuda = argv[argv.index("--version") + 1], argv[argv.index("--cuda") + 1]
    assert cuda == "13" and known_build(machine, version, "13"), argv
    assert "--cuda 13" in cd306["fix"] and "--cuda 12" not in cd306["fix"]


@pytest.mark.integration
def test_cd306_of_a_copy_on_ld_library_path_closed_loop(machine: Machine, tmp_path: Path) -> None:
    """The same machine, the plan applied with NVIDIA's real cuDNN 9.19.0 wheel served by a local mirror: the build for
    the toolkit's CUDA goes into that toolkit, the CUDA 12 copy's folder leaves LD_LIBRARY_PATH, and `check` after it
    has no CD306 and no new error (in place, the old copy in lib/ stayed and its prefix got new headers: CD303)."""
    from tests.test_fix import closed_loop, local_mirror

    with_driver(machine, tmp_path)
    toolkit = make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(tmp_path / "cudnn8" / "lib", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn8" / "lib")
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "9.19.0"))
    args = ("--require", "cudnn==9.19.0")  # the release this test's mirror holds
    _, done = closed_loop(machine, *args)
    [install] = [a for a in done["actions"] if a["kind"] == "install"]
    assert install["argv"][install["argv"].index("--prefix") + 1] == str(toolkit)
    assert done["after"]["codes"] == [], done["after"]


def test_install_closing_hint_names_a_build_that_exists(tmp_path: Path, machine: Machine) -> None:
    """install --from an 8.9.7 CUDA 12 wheel beside a CUDA 13 toolkit: the CD306 line of the plan names a release
    that `compat cudnn==V --cuda 13` says exists (cuDNN 8 has none for CUDA 13)."""
    make_toolkit(machine.root, "13.0.96", 13000)
    wheel = make_archive("wheel", tmp_path, version=8907, cudart=12020, cuda=12)
    result = machine.run("install", "--from", str(wheel), "--prefix", str(tmp_path / "own"), "--dry-run")
    assert result.exit_code == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if "cudnn-doctor install --version" in line]
    words = line.split()
    version = words[words.index("--version") + 1]
    assert words[words.index("--cuda") + 1].strip(".`") == "13" and version != "8.9.7", line
    assert known_build(machine, version, "13"), line


def test_explain_of_tensorflows_version_pair_fills_the_values_and_bounds_the_wheel(machine: Machine) -> None:
    """TensorFlow's "Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4": the cause names the
    versions, and the pip fix carries the bounds TensorFlow needs (same major, at least the compiled one), quoted
    for the shell: a bare `pip install -U nvidia-cudnn-cu12` installs cuDNN 9, a major TensorFlow refuses."""
    message = ("Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4.  CuDNN library needs to have "
               "matching major version and equal or higher minor version.")
    data = machine.run("explain", "--json", "--offline-only", message).json
    [match] = data["matches"]
    assert "8.6.0" in match["cause"] and "8.9.4" in match["cause"], match["cause"]
    assert "runtime_version" not in match["cause"] and "compiled_version" not in match["cause"]
    assert "'nvidia-cudnn-cu12>=8.9.4,<9'" in match["fix"] and "-U nvidia-cudnn" not in match["fix"], match["fix"]
    text = machine.run("explain", "--offline-only", message).stdout
    assert "\n        pip install 'nvidia-cudnn-cu12>=8.9.4,<9'\n" in text, text


def test_a_pinned_cudnn_wheel_beside_torch_is_what_torch_loads_when_its_own_library_cannot_be_read(
        machine: Machine, tmp_path: Path) -> None:
    """The exact cuDNN wheel torch pins, in torch's own environment (what `fix --yes` installs), is what torch loads
    even where torch's libtorch_cuda.so cannot be read: no CD401 "its pip wheel is missing"."""
    from tests.test_frameworks import install_torch, python_env

    with_driver(machine, tmp_path, cuda=12040)
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "lib" / "libtorch_cuda.so").unlink()
    report = machine.check_json()
    [torch] = report["frameworks"]
    assert torch["cudnn_used"] == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"), torch
    assert "CD401" not in codes(report)


def python_with_cpu_torch(tmp_path: Path) -> Path:
    """A venv (its python a link to this interpreter) holding torch 2.13.0+cpu."""
    from tests.test_frameworks import install_torch

    venv = tmp_path / "venv"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    install_torch(site, version="2.13.0+cpu", cuda=None, pin="filelock")
    return venv


def test_fix_of_a_cpu_torch_venv_is_the_pinned_reinstall_from_the_cuda_index_alone(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """fix --python VENV with torch 2.13.0+cpu on a CUDA 13 machine without cuDNN: the one step is the reinstall of
    the CUDA build, pinned, from PyTorch's index of that CUDA (a plain torch==2.13.0 matches the +cpu wheel of the
    index the user has set); it brings its cuDNN wheel, so no system cuDNN is installed beside it (CD301 with it)."""
    with_driver(machine, tmp_path)
    make_toolkit(machine.root, "13.0.96", 13000)
    venv = python_with_cpu_torch(tmp_path)
    result = machine.run("fix", "--json", "--python", str(venv))
    plan = result.json
    assert [a["kind"] for a in plan["actions"]] == ["pip"], plan["actions"]
    [action] = plan["actions"]
    assert set(action["resolves"]) == {"CD406", "CD301"}
    argv = action["argv"]
    assert "torch==2.13.0+cu130" in argv and argv[argv.index("--index-url") + 1] == "https://download.pytorch.org/whl/cu130"


def test_check_of_a_framework_agrees_with_compat_on_the_cuda_here(machine: Machine, tmp_path: Path) -> None:
    """check --framework tensorflow==2.15.0 on a machine whose only CUDA is 13: compat says incompatible, and so does
    check (CD410), with one treatment for it and the cuDNN it misses: TensorFlow's and-cuda wheels."""
    from tests.test_check import CUDNN9_SUBLIBS

    with_driver(machine, tmp_path)
    make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(tmp_path / "c9" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "c9" / "lib")
    assert machine.run("compat", "tensorflow==2.15.0", "--cuda", "13.0").exit_code == 1
    report = machine.check_json("--framework", "tensorflow==2.15.0")
    [cd410] = [f for f in report["findings"] if f["code"] == "CD410"]
    assert "CUDA 12.2" in cd410["detail"] and "13.0.96" in cd410["detail"]
    assert "pip install 'tensorflow[and-cuda]==2.15.0'" in cd410["fix"]
    # the same machine with a CUDA 12 toolkit as well: nothing to say about CUDA
    make_toolkit(machine.root, "12.2.140", 12020)
    assert "CD410" not in codes(machine.check_json("--framework", "tensorflow==2.15.0"))


# --- the first hour --------------------------------------------------------------------------------------------

def test_explain_dash_in_a_terminal_prompts_and_ends_at_one_ctrl_d(machine: Machine) -> None:
    """`explain -` with a terminal on its standard input: a prompt says what it waits for, and one Ctrl-D (on a line of
    its own) ends the input, where it needed two."""
    import os
    import pty
    import time

    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "explain", "--offline-only", "-"], stdin=child,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=machine.env, cwd=machine.cwd)
    os.close(child)
    try:
        time.sleep(0.5)
        os.write(main, b"Could not load dynamic library 'libcudnn.so.8'\n")
        time.sleep(0.3)
        os.write(main, b"\x04")  # Ctrl-D, once
        out, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    assert process.returncode == 0, err
    assert b"Ctrl-D" in err and b"Paste" in err
    assert b"CD301" in out


def test_check_in_a_folder_of_projects_reads_them_and_names_each_in_one_grouped_finding(machine: Machine,
                                                                                           tmp_path: Path) -> None:
    """`check` run at the top of a repository whose DL4J projects are in subfolders reads them as `--project .` does
    (README and --help say the working folder is read so; a folder that is no repository, /tmp or the home folder,
    is not searched); the identical CD405 of each is printed once, naming every project."""
    from tests.test_readme_examples import ROOT

    make_toolkit(machine.root, "13.0.96", 13000)
    machine.cwd = tmp_path / "repo"
    for index in (1, 2, 3):
        shutil.copytree(ROOT / "tests" / "fixtures" / "dl4j" / "m1-cudnn-classifier", machine.cwd / f"svc-{index}")
    assert not any(f["name"] == "dl4j" for f in machine.check_json()["frameworks"])  # not a repository: not read
    (machine.cwd / ".git").mkdir()
    report = machine.check_json()
    assert sum(1 for f in report["findings"] if f["code"] == "CD405") == 3
    text = machine.run("check").stdout
    assert text.count("CD405 DL4J backend has no matching CUDA toolkit") == 1, text
    assert "In 3 places: svc-1/pom.xml, svc-2/pom.xml, svc-3/pom.xml" in text
    for index in (1, 2, 3):
        assert f"expects cuDNN 8.1, svc-{index}/pom.xml" in text


def test_usage_errors_say_what_to_type(machine: Machine, tmp_path: Path) -> None:
    """A bare `cudnn-doctor` is its help and nothing else; an option of a command given before it says where it goes
    (not "no such option --json, did you mean --json?"); --python at a folder that is not there says so."""
    bare = machine.run()
    assert bare.exit_code == 2 and "Usage: cudnn-doctor" in bare.stdout and bare.stderr == "", bare.stderr
    early = machine.run("--json", "check")
    assert early.exit_code == 2
    assert "--json is an option of check" in early.stderr and "cudnn-doctor check --json" in early.stderr
    assert "did you mean" not in early.stderr
    missing = machine.run("check", "--python", ".venv")
    assert missing.exit_code == 2 and "--python .venv: no such folder" in missing.stderr, missing.stderr
    assert "python3 -m venv .venv" in missing.stderr


def test_a_cudnn_8_and_a_cudnn_9_on_the_loader_path_are_no_cd302(machine: Machine, tmp_path: Path) -> None:
    """libcudnn.so.8 and libcudnn.so.9 are different sonames: a program gets the one it asks for, so one copy of each
    is nothing to fix; two of one major still are."""
    from tests.test_check import CUDNN9_SUBLIBS

    fake_cudnn(tmp_path / "eight", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    fake_cudnn(tmp_path / "nine", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "eight")
    machine.add_library_path(tmp_path / "nine")
    assert "CD302" not in codes(machine.check_json())
    fake_cudnn(tmp_path / "nine-old", version=91400, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "nine-old")
    [cd302] = [f for f in machine.check_json()["findings"] if f["code"] == "CD302"]
    assert "9.14.0" in cd302["detail"] and "8.9.7" not in cd302["detail"]


def cd306_machine(machine: Machine, tmp_path: Path) -> None:
    """A CUDA 13 toolkit, and a cuDNN 8.9.7 for CUDA 12 on LD_LIBRARY_PATH (CD306, treated by an install that this
    machine's empty mirror cannot serve)."""
    with_driver(machine, tmp_path)
    make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(tmp_path / "cudnn8" / "lib", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn8" / "lib")
    (tmp_path / "mirror").mkdir()
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(tmp_path / "mirror")


def test_fix_that_fails_says_why_once(machine: Machine, tmp_path: Path) -> None:
    cd306_machine(machine, tmp_path)
    result = machine.run("fix", "--yes")
    assert result.exit_code == 1
    assert result.stdout.count("Plan for") == 1 and result.stdout.count("CD512") == 1, result.stdout
    assert "Stopped: step 1 failed" in result.stdout


def test_fix_asked_on_a_terminal_shows_its_plan_once(machine: Machine, tmp_path: Path) -> None:
    """On a terminal, fix shows the plan and asks; after the yes, what each step came to, not the plan again."""
    import os
    import pty
    import select
    import time

    cd306_machine(machine, tmp_path)
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "fix"], stdin=child, stdout=child, stderr=child,
                               env=machine.env, cwd=machine.cwd, start_new_session=True)
    os.close(child)
    screen, answered, deadline = b"", False, time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
        elif process.poll() is not None:
            break
        if not answered and b"Apply the steps" in screen:
            os.write(main, b"y\n")
            answered = True
    os.close(main)
    process.wait(timeout=10)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode("utf-8", "replace"))
    assert answered, text
    assert text.count("Plan for") == 1 and text.count("CD512") == 1, text
    assert "1. run failed" in text


def test_compat_of_a_series_says_which_release_each_row_is(machine: Machine) -> None:
    result = machine.run("compat", "torch==2.4")
    rows = [line for line in result.stdout.splitlines() if line.startswith("    • ")]
    assert rows and all(re.match(r"    • version 2\.4\.\d+, ", row) for row in rows), result.stdout
    assert any("version 2.4.0," in row for row in rows) and any("version 2.4.1," in row for row in rows)
    one = machine.run("compat", "tensorflow==2.15.0").stdout  # one release: nothing to tell apart
    assert "    • os linux" in one and "version 2.15.0," not in one


def test_fleet_merge_says_a_tie_and_a_report_without_schema_in_words(machine: Machine, tmp_path: Path) -> None:
    import json

    report = machine.check_json()
    for name, driver in (("n1", None), ("n2", "580.1")):
        node = json.loads(json.dumps(report))
        node["host"]["hostname"] = name
        node["driver"]["version"] = driver
        (tmp_path / f"{name}.json").write_text(json.dumps(node))
    (tmp_path / "empty.json").write_text("{}")
    tie = machine.run("fleet", "merge", str(tmp_path / "n1.json"), str(tmp_path / "n2.json")).stdout
    assert "(a tie)" not in tie and "(none)" not in tie and "(absent)" not in tie, tie
    assert "driver.version: no majority" in tie and "1 node(s) have no value" in tie and "• n2: 580.1" in tie
    empty = machine.run("fleet", "merge", str(tmp_path / "n1.json"), str(tmp_path / "empty.json")).stdout
    assert "NoneType" not in empty and "it has no schema field" in empty, empty


def test_install_says_fix_as_check_does_and_its_closing_command_is_whole_at_80_columns(machine: Machine,
                                                                                        tmp_path: Path) -> None:
    from tests.test_cli_terminal import run_in_terminal

    make_toolkit(machine.root, "13.0.96", 13000)
    wheel = make_archive("wheel", tmp_path, version=8907, cudart=12020, cuda=12)
    prefix = tmp_path / "a-rather-long-folder-name-for-cudnn" / "prefix"
    code, screen = run_in_terminal(machine, "install", "--from", str(wheel), "--prefix", str(prefix), "--yes",
                                   columns=80)
    assert code == 0, screen
    lines = screen.splitlines()
    assert "      fix:" not in screen and any(line.startswith("      Fix:") for line in lines), screen
    export = f"export LD_LIBRARY_PATH={prefix / 'lib64'}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    assert len(export) > 80 and all(line.strip() == export for line in lines if export in line)
    assert sum(1 for line in lines if export in line) == 2  # the plan's loader line and the closing one


def test_an_ignored_driver_is_not_shown_healthy(machine: Machine) -> None:
    text = machine.run("check", "--ignore", "CD101").stdout
    assert text.splitlines()[0] == "[-] NVIDIA driver: not found (ignored: CD101)", text
    assert "[✓] NVIDIA driver" not in text


def test_a_time_limit_that_is_not_a_number_is_said_not_ignored(machine: Machine) -> None:
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "abc"
    result = machine.run("check")
    assert result.exit_code == 2 and result.stdout == ""
    assert "CUDNN_DOCTOR_PROBE_TIMEOUT='abc': not a number" in result.stderr, result.stderr
    assert machine.run("check", "--json").json["error"]["message"].startswith("CUDNN_DOCTOR_PROBE_TIMEOUT='abc'")


def test_install_without_a_terminal_refuses_before_reading_the_archive(machine: Machine, tmp_path: Path) -> None:
    """No --yes and no terminal to ask: said at once, before the archive is read (an archive that is not one shows
    it: the refusal comes first), and nothing is made."""
    not_an_archive = tmp_path / "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl"
    not_an_archive.write_bytes(b"not a zip")
    prefix = tmp_path / "prefix"
    result = machine.run("install", "--from", str(not_an_archive), "--prefix", str(prefix))
    assert result.exit_code == 2 and "there is no terminal to ask" in result.stderr, result.stderr
    assert "--yes" in result.stderr and not prefix.exists()


def test_installing_the_same_archive_again_says_it_is_there(machine: Machine, tmp_path: Path) -> None:
    wheel = make_archive("wheel", tmp_path, version=91900, cudart=13010, cuda=13)
    prefix = tmp_path / "prefix"
    assert machine.run("install", "--from", str(wheel), "--prefix", str(prefix), "--yes").exit_code == 0
    manifests = sorted((prefix / ".cudnn-doctor").glob("manifest-*.json"))
    again = machine.run("install", "--from", str(wheel), "--prefix", str(prefix), "--yes")
    assert again.exit_code == 0, again.stderr
    assert "is already installed in" in again.stdout and "nothing was changed" in again.stdout, again.stdout
    assert sorted((prefix / ".cudnn-doctor").glob("manifest-*.json")) == manifests  # no second install recorded
    (prefix / "include" / "cudnn_version.h").write_text("changed\n")  # a file changed since: installed again
    changed = machine.run("install", "--from", str(wheel), "--prefix", str(prefix), "--yes")
    assert changed.exit_code == 0 and "installed cuDNN 9.19.0" in changed.stdout, changed.stdout


# --- what makes users prefer it -----------------------------------------------------------------------------------

def test_the_summary_points_at_fix_yes_with_the_count_it_treats(machine: Machine, tmp_path: Path) -> None:
    cd306_machine(machine, tmp_path)
    lines = machine.run("check", "--search-path", str(tmp_path / "cudnn8" / "lib")).stdout.splitlines()
    assert lines[-3].startswith("! Doctor found 1 warning. (cudnn-doctor explain CODE for more)"), lines[-3:]
    assert lines[-2:] == ["1 can be fixed here:", f"    cudnn-doctor fix --yes --search-path {tmp_path / 'cudnn8' / 'lib'}"]


def test_markdown_report_to_paste_into_an_issue(machine: Machine, tmp_path: Path) -> None:
    import platform

    result = machine.run("check", "--format", "markdown")
    assert result.exit_code == 1  # the check's own exit status: no driver here
    text = result.stdout
    assert text.startswith("### cudnn-doctor check\n\n| | |\n| --- | --- |\n")
    assert f"| Python | {platform.python_version()} (" in text
    glibc = platform.libc_ver()[1]
    assert f"| C library | glibc {glibc} |" in text
    gcc = shutil.which("gcc")
    assert ("| gcc | " in text and f"({gcc}) |" in text) if gcc else "| gcc | not found |" in text
    assert "| NVIDIA driver | not found |" in text
    assert "```text\n$ cudnn-doctor check\n[✗] NVIDIA driver: not found\n" in text and text.rstrip().endswith("```")
    saved = machine.run("check", "--format", "markdown", "-o", str(tmp_path / "report.md"))
    assert saved.stdout == "" and (tmp_path / "report.md").read_text().startswith("### cudnn-doctor check")


def test_cudnn_copies_are_an_aligned_table(machine: Machine, tmp_path: Path) -> None:
    from tests.test_check import CUDNN9_SUBLIBS

    fake_cudnn(tmp_path / "eight", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    fake_cudnn(tmp_path / "nine", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "eight")
    machine.add_library_path(tmp_path / "nine")
    lines = machine.run("check").stdout.splitlines()
    at = lines.index("    version  CUDA  headers  owner  loaded by  library")
    assert set(lines[at + 1:at + 3]) == {f"    8.9.7    12.2  -        env    ld.so      {tmp_path / 'eight' / 'libcudnn.so.8'}",
                                         f"    9.19.0   13.1  -        env    ld.so      {tmp_path / 'nine' / 'libcudnn.so.9'}"}


def test_explain_lists_the_codes_and_the_shell_completes_them(machine: Machine) -> None:
    listed = machine.run("explain", "--list")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert "CD101  error    No NVIDIA driver found" in lines and "CD302  warning  Several cuDNN versions visible to the " \
        "loader" in lines
    cudnn = machine.run("explain", "--list", "cd3").stdout.splitlines()
    assert cudnn and all(line.startswith("CD3") for line in cudnn)
    assert {c["code"] for c in machine.run("explain", "--list", "--json").json["codes"]} >= {"CD101", "CD306", "CD610"}
    completed = machine.complete("cudnn-doctor explain CD30")
    assert completed[:3] == ["CD301", "CD302", "CD303"] and all(c.startswith("CD30") for c in completed), completed


def test_readmes_first_command_works_on_an_externally_managed_python() -> None:
    """Debian's and Ubuntu's own Python refuses `pip install` outside a venv: the first command makes one, and the
    README says how to get venv and pipx there and how long the suite runs."""
    from tests.test_readme import README, code_blocks

    first = code_blocks("bash", README.split("## Set-up", 1)[1])[0]
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && python3 -m pip install .")
    for said in ("externally-managed-environment", "sudo apt install python3-venv", "sudo apt\ninstall pipx"):
        assert said in README, said
    # how long the suite runs, as the last measured run says it (the figure changes each round; its sentence stays)
    assert re.search(r"ran in \d+ minutes \d+ seconds\non a 2-core machine", README), "the suite's time"


def test_help_at_80_columns_splits_no_word(machine: Machine) -> None:
    """`check --help` in an 80-column terminal: every word of it whole (no `ju`/`nit`, no `report…`)."""
    from tests.test_cli_terminal import run_in_terminal

    def words(screen: str) -> list[str]:
        return [w for line in screen.splitlines() for w in line.replace("│", " ").replace("╭", " ").split()
                if not set(w) <= set("─╮╯╰")]

    _, wide = run_in_terminal(machine, "check", "--help", columns=250)
    code, narrow = run_in_terminal(machine, "check", "--help", columns=80)
    assert code == 0 and "…" not in narrow
    known = set(words(wide))
    assert [w for w in words(narrow) if w not in known] == [], narrow


def test_an_info_line_fits_the_terminal_and_is_cut_at_a_word(machine: Machine) -> None:
    from tests.test_cli_terminal import run_in_terminal

    make_toolkit(machine.root, "12.2.140", 12020)
    make_toolkit(machine.root, "13.0.96", 13000)  # two toolkits: CD205, an info finding with long paths
    _, screen = run_in_terminal(machine, "check", columns=80)
    lines = screen.splitlines()
    [at] = [i for i, line in enumerate(lines) if "i CD205" in line]
    line = lines[at]
    assert len(line) <= 80 and line.endswith("…)"), line
    assert lines[at + 1].startswith(("[", "    ")) and not lines[at + 1].startswith("      "), lines[at + 1]
    cut = line.rsplit("…", 1)[0]
    assert cut.endswith("/") or cut[-1].isalnum() and cut.rsplit(" ", 1)[-1] in screen.replace("\n", " ").split()


def test_explain_at_80_columns_keeps_each_command_whole(machine: Machine) -> None:
    from tests.test_cli_terminal import run_in_terminal

    message = "Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4."
    code, screen = run_in_terminal(machine, "explain", "--offline-only", message, columns=80)
    assert code == 0
    lines = [line.strip() for line in screen.splitlines()]
    assert "pip install 'nvidia-cudnn-cu12>=8.9.4,<9'" in lines and "cudnn-doctor install --version 8.9.4" in lines
    assert "`" not in screen


def test_bench_says_fix_as_check_does(machine: Machine) -> None:
    result = machine.run("bench")
    assert result.exit_code == 1 and "CD601" in result.stdout
    assert "    Fix: " in result.stdout and "fix:" not in result.stdout and "`" not in result.stdout, result.stdout
    assert "        cudnn-doctor check\n" in result.stdout
