"""`check` on WSL 2, in containers and on a Jetson, run as a user would on pretend machines (prefix fixtures built
from gcc fakes): each platform named with its evidence, and findings and fixes that fit it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_libcuda, fake_nvml
from tests.test_frameworks import install_torch, python_env
from tests.test_schemas import validate

WSL_KERNEL = ("Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0, GNU ld "
              "(GNU Binutils) 2.37) #1 SMP Tue Nov 5 00:21:55 UTC 2024\n")
L4T_RELEASE = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 "
               "01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
               "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
APT_DRIVER = re.compile(r"apt(-get)? install nvidia-driver|ubuntu-drivers|\breboot\b|nvidia-ml-py", re.IGNORECASE)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def all_fixes(report: dict) -> str:
    return "\n".join(f["fix"] for f in report["findings"])


# --- WSL 2 -----------------------------------------------------------------------------------------------------------

def wsl_machine(machine: Machine, tmp_path: Path, driver: str = "551.78", cuda: int = 12040) -> Path:
    """A WSL 2 distribution as Windows maps it: WSL's kernel, the Windows driver's libraries in /usr/lib/wsl/lib
    (libcuda.so, .so.1 and .so.1.1 as copies of one file), and the variables WSL sets."""
    write(machine.root / "proc" / "version", WSL_KERNEL)
    wsl = machine.root / "usr" / "lib" / "wsl" / "lib"
    fake_nvml(wsl, driver=driver, cuda=cuda, name="NVIDIA GeForce RTX 4070", compute_capability="8.9")
    built = fake_libcuda(tmp_path / "libcuda-build", driver_cuda=cuda, devices=1, name="NVIDIA GeForce RTX 4070")
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(built, wsl / name)
    (machine.root / "dev").mkdir(exist_ok=True)
    (machine.root / "dev" / "dxg").write_text("")
    machine.env.update(WSL_DISTRO_NAME="Ubuntu-24.04", WSL_INTEROP="/run/WSL/1_interop")
    machine.add_library_path(wsl)  # as the WSL guides have it; WSL's own ld.wsl.conf puts it in the loader's cache
    return wsl


def test_wsl_is_named_with_its_evidence_and_its_driver_is_the_windows_one(machine: Machine, tmp_path: Path) -> None:
    wsl_machine(machine, tmp_path)
    from tests.test_check import make_toolkit

    make_toolkit(machine.root, "12.8.1", 12080)  # newer than the Windows driver's CUDA 12.4
    report = machine.check_json()
    validate(report)
    platform = report["host"]["platform"]
    assert platform["kind"] == "wsl2" and platform["container"] is None
    assert any("microsoft-standard-WSL2" in line for line in platform["evidence"])
    assert "/usr/lib/wsl/lib exists" in platform["evidence"] and "WSL_DISTRO_NAME=Ubuntu-24.04" in platform["evidence"]
    assert report["driver"]["version"] == "551.78" and report["driver"]["cuda_driver_version"] == "12.4"
    [toolkit_finding] = [f for f in report["findings"] if f["code"] == "CD106"]
    # the floor is the Windows driver's (a WSL driver version is the Windows one), the fix is Windows'
    assert "570.65" in toolkit_finding["fix"] and "on Windows (not in WSL)" in toolkit_finding["fix"]
    assert "wsl --shutdown" in toolkit_finding["fix"]
    assert not APT_DRIVER.search(all_fixes(report)), all_fixes(report)
    # the copies the Windows driver ships: what `ldconfig` complains about, said by check too
    [copies] = [f for f in report["findings"] if f["code"] == "CD153"]
    assert "is not a symbolic link" in copies["detail"] and "mklink" in copies["fix"]
    assert set(platform["wsl_copies"]) >= {str(machine.root / "usr/lib/wsl/lib/libcuda.so.1")}
    # CUDA itself is asked there (the Windows driver, through /dev/dxg), for the reason WSL gives: no nvidia-uvm
    # or kernel module is missing there, and none is named as if it were
    asked = report["process"]["asked_because"]
    assert any(reason.startswith("WSL 2 (/dev/dxg)") for reason in asked), asked
    assert not any("nvidia-uvm" in reason or "kernel module" in reason for reason in asked), asked
    assert report["process"]["cuinit"] == 0 and len(report["process"]["visible"]) == 1

    text = machine.run("check")
    assert text.stdout.splitlines()[0].startswith("[✓] Platform: WSL 2 (")
    assert not APT_DRIVER.search(text.stdout)


def test_a_linux_driver_inside_wsl_is_named_and_taken_out_in_a_closed_loop(machine: Machine, tmp_path: Path) -> None:
    """The common LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu puts a Linux driver (installed inside WSL, where it
    finds no kernel module: NVML's 'Driver Not Loaded') before WSL's: named, no apt driver, no reboot; the plan's
    own env line applied, check is clean of it and reads the Windows driver."""
    wsl = wsl_machine(machine, tmp_path, driver="572.61", cuda=12080)
    linux = machine.root / "usr" / "lib" / "x86_64-linux-gnu"
    fake_nvml(linux, driver="580.95.05", cuda=13000, init_error=9)
    machine.env["LD_LIBRARY_PATH"] = f"{linux}:{wsl}"
    report = machine.check_json()
    assert report["host"]["platform"]["shadowing"] == [str(linux / "libnvidia-ml.so.1")]
    [shadow] = [f for f in report["findings"] if f["code"] == "CD152"]
    assert str(linux / "libnvidia-ml.so.1") in shadow["detail"] and "LD_LIBRARY_PATH" in shadow["detail"]
    assert "dpkg -S" in shadow["fix"] and "LD_LIBRARY_PATH" in shadow["fix"]
    assert not APT_DRIVER.search(all_fixes(report)), all_fixes(report)
    # the plan's own line, applied as a shell would: the folder out of LD_LIBRARY_PATH
    fix = machine.run("fix", "--json").json
    [line] = [a for a in fix["actions"] if a["kind"] == "env" and "CD152" in a["resolves"]]
    shell = subprocess.run(["sh", "-c", f"{line['text']}\nprintf %s \"$LD_LIBRARY_PATH\""], capture_output=True,
                           text=True, env=machine.env, check=True)
    machine.env["LD_LIBRARY_PATH"] = shell.stdout
    after = machine.check_json()
    assert not codes(after) & {"CD152", "CD101", "CD104"}
    assert after["driver"]["version"] == "572.61"


# --- containers ------------------------------------------------------------------------------------------------------

def docker_machine(machine: Machine, cgroup: str = "12:devices:/docker/3f1c2a9d0b7e\n0::/\n") -> None:
    """Inside a Docker container of NVIDIA's CUDA image: /.dockerenv, PID 1's control group, the image's variables."""
    write(machine.root / ".dockerenv", "")
    write(machine.root / "proc" / "1" / "cgroup", cgroup)
    write(machine.root / "proc" / "1" / "comm", "python3\n")
    machine.env.update(NVIDIA_VISIBLE_DEVICES="all", NVIDIA_DRIVER_CAPABILITIES="compute,utility",
                       NVIDIA_REQUIRE_CUDA="cuda>=12.8 brand=tesla,driver>=470,driver<471 brand=nvidia,driver>=535,"
                                           "driver<536",
                       CUDA_VERSION="12.8.1", NV_CUDNN_VERSION="9.8.0.87")


def test_a_container_started_without_the_nvidia_runtime_gets_the_flag_not_a_driver(machine: Machine) -> None:
    docker_machine(machine)
    report = machine.check_json()
    validate(report)
    platform = report["host"]["platform"]
    assert (platform["kind"], platform["container"], platform["driver_injected"]) == ("container", "docker", False)
    assert platform["nvidia_env"]["NV_CUDNN_VERSION"] == "9.8.0.87"
    assert "CD101" not in codes(report)
    [hook] = [f for f in report["findings"] if f["code"] == "CD108"]
    assert "NVIDIA_VISIBLE_DEVICES=all" in hook["detail"]
    assert "--gpus all" in hook["fix"] and "runtimeClassName: nvidia" in hook["fix"]
    assert not APT_DRIVER.search(all_fixes(report))


def test_the_image_needs_a_newer_driver_than_the_node_has(machine: Machine, tmp_path: Path) -> None:
    docker_machine(machine)
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040)  # what the runtime mounted: the node's driver
    machine.add_library_path(tmp_path / "driver")
    write(machine.root / "dev" / "nvidiactl", "")
    report = machine.check_json()
    assert report["host"]["platform"]["driver_injected"] is True
    [image] = [f for f in report["findings"] if f["code"] == "CD150"]
    assert "needs CUDA 12.8" in image["detail"] and "550.54.15" in image["detail"] and "CUDA 12.4" in image["detail"]
    assert "570.26" in image["fix"] and "on the host" in image["fix"]
    assert report["summary"]["exit_code"] == 1


def test_container_requirement_variables_in_a_plain_shell_are_nobodys_check(machine: Machine, tmp_path: Path) -> None:
    # outside any container, NVIDIA_REQUIRE_CUDA is read by no runtime: programs here start whatever it says
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040)
    machine.add_library_path(tmp_path / "driver")
    machine.env.update({"NVIDIA_REQUIRE_CUDA": "cuda>=13.2 brand=tesla,driver>=590", "NVIDIA_DISABLE_REQUIRE": "false"})
    report = machine.check_json()
    assert report["host"]["platform"]["kind"] != "container"
    assert not codes(report) & {"CD150", "CD151"}, codes(report)


def test_an_image_within_the_drivers_major_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    docker_machine(machine)
    del machine.env["NVIDIA_REQUIRE_CUDA"]
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040)
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    assert "CD151" in codes(report) and "CD150" not in codes(report)


def test_a_lone_dockerenv_is_no_proof_of_a_container(machine: Machine) -> None:
    """The VM this was tried on has a /.dockerenv and a PID 1 that is no init: neither is a container engine."""
    write(machine.root / ".dockerenv", "")
    write(machine.root / "proc" / "1" / "comm", "process_api\n")
    write(machine.root / "proc" / "self" / "mountinfo", "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n")
    platform = machine.check_json()["host"]["platform"]
    assert platform["kind"] == "linux" and platform["container"] is None
    assert "/.dockerenv exists" in platform["ignored"]


def test_an_overlay_root_with_cgroup_v2_is_a_container(machine: Machine) -> None:
    """cgroup v2 with a cgroup namespace shows PID 1 in '0::/': the overlay root is what tells it."""
    docker_machine(machine, cgroup="0::/\n")
    write(machine.root / "proc" / "self" / "mountinfo",
          "1205 1090 0:64 / / rw,relatime master:9 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB:"
          "/var/lib/docker/overlay2/l/CD,upperdir=/var/lib/docker/overlay2/3f1c/diff\n"
          "1206 1205 0:66 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n")
    platform = machine.check_json()["host"]["platform"]
    assert platform["kind"] == "container" and platform["container"] == "docker"
    assert any(line.startswith("/proc/self/mountinfo: / is overlay") for line in platform["evidence"])


# --- Jetson ----------------------------------------------------------------------------------------------------------

def loader_cache_of(root: Path) -> None:
    """ROOT/etc/ld.so.cache as the system under ROOT has it (`ldconfig -r ROOT`: paths from ROOT's own root)."""
    ldconfig = shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if ldconfig is None:
        pytest.skip("no ldconfig")
    command = [ldconfig, "-r", str(root)]
    if os.geteuid() != 0:  # ldconfig -r chroots: as a user, in a user namespace where we are root
        command = ["unshare", "-r", *command]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"ldconfig -r cannot run here: {done.stderr.strip()}")


def jetson_machine(machine: Machine, tmp_path: Path) -> Path:
    """JetPack 6.2 (L4T R36.4.3): the release file, the board's device tree, the iGPU's libcuda in L4T's nvidia/
    folder listed in the loader's cache, and no NVML (a Jetson has none)."""
    write(machine.root / "etc" / "nv_tegra_release", L4T_RELEASE)
    write(machine.root / "proc" / "device-tree" / "model", "NVIDIA Jetson Orin Nano Engineering Reference Developer "
                                                          "Kit Super\0")
    l4t = machine.root / "usr" / "lib" / "aarch64-linux-gnu" / "nvidia"
    fake_libcuda(l4t, driver_cuda=12060, devices=1, name="Orin", compute_capability="8.7")
    write(machine.root / "etc" / "ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    write(machine.root / "etc" / "ld.so.conf.d" / "nvidia-tegra.conf", "/usr/lib/aarch64-linux-gnu/nvidia\n")
    loader_cache_of(machine.root)
    return l4t


def test_jetson_named_with_l4t_and_jetpack_its_driver_read_through_the_prefixed_cache(machine: Machine,
                                                                                       tmp_path: Path) -> None:
    l4t = jetson_machine(machine, tmp_path)
    report = machine.check_json()
    validate(report)
    platform = report["host"]["platform"]
    assert (platform["kind"], platform["l4t"], platform["jetpack"], platform["sbsa"]) == ("jetson", "36.4.3", "6.2", False)
    assert platform["board"].startswith("NVIDIA Jetson Orin Nano")
    # the cache lists /usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1 from the Jetson's root: used under the prefix
    assert report["driver"]["source"] == "libcuda" and report["driver"]["cuda_driver_version"] == "12.6"
    assert report["driver"]["library"] == str(l4t / "libcuda.so.1")
    assert not codes(report) & {"CD101", "CD105"}  # no NVML is how a Jetson is, not a finding
    [cudnn] = [f for f in report["findings"] if f["code"] == "CD301"]
    assert "sudo apt install nvidia-jetpack" in cudnn["fix"] and "JetPack 6.2" in cudnn["fix"]
    assert "cudnn-doctor install" not in all_fixes(report)  # no SBSA cuDNN archive on a Jetson
    assert not APT_DRIVER.search(all_fixes(report))
    text = machine.run("check")
    assert text.stdout.splitlines()[0].startswith("[✓] Platform: Jetson, L4T R36.4.3 (JetPack 6.2)")


def test_a_server_cudnn_wheel_and_a_cpu_torch_on_a_jetson(machine: Machine, tmp_path: Path) -> None:
    jetson_machine(machine, tmp_path)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.5.1", cuda=None, pin="filelock")  # pypi.org's aarch64 torch: no CUDA
    from tests.fakes.build import fake_cudnn
    from tests.test_frameworks import CUDNN9

    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=90100, sublibraries=CUDNN9, versioned_files=False)
    (site / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()
    report = machine.check_json()
    [sbsa] = [f for f in report["findings"] if f["code"] == "CD154"]
    assert "nvidia-cudnn-cu12" in sbsa["detail"] and "9.3.0" in sbsa["detail"]
    assert "pip uninstall -y nvidia-cudnn-cu12" in sbsa["fix"] and "nvidia-jetpack" in sbsa["fix"]
    # the server cuDNN is never put on the loader's path, nor a server CUDA wheel prescribed
    assert not any(str(site) in a.get("text", "") for a in report["plan"]["actions"] if a["kind"] == "env")
    [toolkit] = [f for f in report["findings"] if f["code"] == "CD201"]
    assert "cuda-toolkit-12-6" in toolkit["fix"] and "nvidia-cuda-runtime" not in toolkit["fix"].split("(nvidia")[0]
    [cpu] = [f for f in report["findings"] if f["code"] == "CD406"]
    assert "--index-url https://pypi.jetson-ai-lab.dev/jp6/cu126 torch" in cpu["fix"]
    assert not APT_DRIVER.search(all_fixes(report))


# --- WSL 2 as a mount namespace: the real root, the real loader, the real ldconfig -------------------------------------

NAMESPACE_SCRIPT = r"""
set -e
mount --bind "$WORK/version" /proc/version
mount -t overlay overlay -o "lowerdir=/usr/lib,upperdir=$WORK/usr-lib,workdir=$WORK/usr-lib-work" /usr/lib
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$WORK/etc,workdir=$WORK/etc-work" /etc
ldconfig 2> "$WORK/ldconfig.err" || true
exec "$PYTHON" -m cudnn_doctor check --json
"""


def test_wsl_in_a_mount_namespace_with_the_real_loader_and_ldconfig(tmp_path: Path) -> None:
    """No prefix: WSL's kernel string bind-mounted on /proc/version, /usr/lib and /etc overlaid with what WSL adds
    (/usr/lib/wsl/lib with the driver's copies, ld.wsl.conf), the real ldconfig run; the doctor, unchanged, finds the
    Windows driver through the real loader's cache and says what ldconfig said. Root only (CI runs as root)."""
    import sys

    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("a mount namespace with overlays needs root and unshare")
    work = tmp_path / "wsl"
    for folder in ("usr-lib/wsl/lib", "usr-lib-work", "etc/ld.so.conf.d", "etc-work"):
        (work / folder).mkdir(parents=True)
    write(work / "version", WSL_KERNEL)
    wsl = work / "usr-lib" / "wsl" / "lib"
    fake_nvml(wsl, driver="572.61", cuda=12080, name="NVIDIA GeForce RTX 4090", compute_capability="8.9")
    built = fake_libcuda(tmp_path / "libcuda-build", driver_cuda=12080, devices=1, name="NVIDIA GeForce RTX 4090")
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(built, wsl / name)
    write(work / "etc" / "ld.so.conf.d" / "ld.wsl.conf", "# This file was automatically generated by WSL.\n"
                                                          "/usr/lib/wsl/lib\n")
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path), "WORK": str(work), "PYTHON": sys.executable,
           "LANG": "C.UTF-8", "WSL_DISTRO_NAME": "Ubuntu", "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    if done.returncode not in (0, 1) and "mount" in done.stderr:
        pytest.skip(f"no overlay mounts here: {done.stderr.strip()[-200:]}")
    import json

    report = json.loads(done.stdout)
    assert "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link" in (work / "ldconfig.err").read_text()
    platform = report["host"]["platform"]
    assert platform["kind"] == "wsl2" and platform["wsl_lib"] == "/usr/lib/wsl/lib"
    assert report["driver"]["version"] == "572.61" and report["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090"
    [copies] = [f for f in report["findings"] if f["code"] == "CD153"]
    assert "'ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link'" in copies["detail"]
    assert not APT_DRIVER.search(all_fixes(report))
    assert not Path("/usr/lib/wsl").exists()  # the host is untouched


# --- a host's container engines: the NVIDIA Container Toolkit, its CDI specs; a container that lost its GPUs -------------

CDI_SPEC = """cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  mounts:
  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
  - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
    containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
"""


def test_a_cdi_spec_made_for_the_driver_before_the_upgrade(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver", driver="570.124.06", cuda=12080)
    machine.add_library_path(tmp_path / "driver")
    for program in ("dockerd", "nvidia-ctk", "nvidia-container-runtime-hook"):
        write(machine.root / "usr" / "bin" / program, "")
    spec = write(machine.root / "etc" / "cdi" / "nvidia.yaml", CDI_SPEC)
    report = machine.check_json()
    platform = report["host"]["platform"]
    assert platform["docker"] is True and platform["cdi_specs"] == {str(spec): "550.54.15"}
    [stale] = [f for f in report["findings"] if f["code"] == "CD157"]
    assert "driver 550.54.15" in stale["detail"] and "570.124.06" in stale["detail"]
    assert f"sudo nvidia-ctk cdi generate --output={spec}" in stale["fix"]
    assert "CD158" not in codes(report)


def test_docker_without_the_container_toolkit_is_said(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver")
    machine.add_library_path(tmp_path / "driver")
    write(machine.root / "usr" / "bin" / "dockerd", "")
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD158"]
    assert "could not select device driver" in said["detail"] and "nvidia-ctk runtime configure" in said["fix"]


def test_a_container_that_lost_its_gpus_after_a_daemon_reload(machine: Machine, tmp_path: Path) -> None:
    """NVML's 'Unknown Error' in a container that had its GPUs: NVIDIA's notice, not a reboot."""
    docker_machine(machine)
    fake_nvml(tmp_path / "driver", init_error=999)
    machine.add_library_path(tmp_path / "driver")
    write(machine.root / "dev" / "nvidiactl", "")
    report = machine.check_json()
    [lost] = [f for f in report["findings"] if f["code"] == "CD104"]
    assert "Unknown Error" in lost["detail"]
    assert "Delete and start the container again" in lost["fix"] and "create-dev-char-symlinks" in lost["fix"]
    assert not APT_DRIVER.search(all_fixes(report))


def test_a_hostile_folder_in_a_wsl_fix_is_one_quoted_word(machine: Machine, tmp_path: Path) -> None:
    """The Linux driver's path goes into `dpkg -S ...` quoted for the shell: a folder with a space and $(...) runs
    nothing when the line is pasted."""
    wsl = wsl_machine(machine, tmp_path, driver="572.61", cuda=12080)
    linux = machine.root / "opt" / "nv drv $(touch PWNED)"
    fake_nvml(linux, driver="580.95.05", cuda=13000, init_error=9)
    machine.env["LD_LIBRARY_PATH"] = f"{linux}:{wsl}"
    report = machine.check_json()
    [shadow] = [f for f in report["findings"] if f["code"] == "CD152"]
    command = re.search(r"`(dpkg -S [^`]+)`", shadow["fix"]).group(1)
    assert command == f"dpkg -S '{linux / 'libnvidia-ml.so.1'}'"
    done = subprocess.run(["bash", "-c", f"set -- {command.split(' ', 2)[2]}; printf %s \"$1\""], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.stdout == str(linux / "libnvidia-ml.so.1") and not (tmp_path / "PWNED").exists()


def apptainer_machine(machine: Machine) -> None:
    """Inside an Apptainer container on a GPU node, started without --nv: Apptainer's variables and image folder,
    the node's /dev bound in (its GPU device files too), no driver library."""
    write(machine.root / ".singularity.d" / "env" / "90-environment.sh", "#!/bin/sh\n")
    write(machine.root / "proc" / "1" / "comm", "appinit\n")
    for device in ("nvidiactl", "nvidia0", "nvidia-uvm"):
        write(machine.root / "dev" / device, "")
    machine.env.update(APPTAINER_CONTAINER="/home/me/pytorch.sif", APPTAINER_NAME="pytorch.sif",
                       SINGULARITY_CONTAINER="/home/me/pytorch.sif", SINGULARITY_NAME="pytorch.sif")


def test_an_apptainer_container_without_nv_gets_the_nv_flag_not_a_driver(machine: Machine) -> None:
    apptainer_machine(machine)
    report = machine.check_json()
    validate(report)
    platform = report["host"]["platform"]
    assert (platform["kind"], platform["container"], platform["driver_injected"]) == ("container", "apptainer", False)
    assert "APPTAINER_CONTAINER=/home/me/pytorch.sif" in platform["evidence"]
    [driver] = [f for f in report["findings"] if f["code"] in ("CD101", "CD108")]
    assert "apptainer exec --nv" in driver["fix"] and "--gpus all" not in driver["fix"], driver["fix"]
    assert not APT_DRIVER.search(all_fixes(report))
    # the image's own variables ask for GPUs (NVIDIA's CUDA images): the GPU not passed in, said as such
    machine.env["NVIDIA_VISIBLE_DEVICES"] = "all"
    [hook] = [f for f in machine.check_json()["findings"] if f["code"] == "CD108"]
    assert "apptainer exec --nv" in hook["fix"]


def test_apptainer_with_nv_is_a_container_whose_driver_is_the_nodes(machine: Machine, tmp_path: Path) -> None:
    """With --nv, Apptainer binds the node's driver libraries into /.singularity.d/libs and puts it on
    LD_LIBRARY_PATH: the driver is read as on the node, no container finding."""
    apptainer_machine(machine)
    fake_nvml(machine.root / ".singularity.d" / "libs", driver="580.159.04", cuda=13000)
    machine.add_library_path(machine.root / ".singularity.d" / "libs")
    report = machine.check_json()
    platform = report["host"]["platform"]
    assert (platform["container"], platform["driver_injected"]) == ("apptainer", True)
    assert report["driver"]["version"] == "580.159.04"
    assert not {"CD101", "CD108"} & codes(report)


def test_singularityce_names_itself_by_its_own_variable(machine: Machine) -> None:
    write(machine.root / ".singularity.d" / "runscript", "#!/bin/sh\n")
    machine.env.update(SINGULARITY_CONTAINER="/scratch/tf.sif", SINGULARITY_NAME="tf.sif")
    platform = machine.check_json()["host"]["platform"]
    assert (platform["kind"], platform["container"]) == ("container", "singularity")


def test_a_hostile_apptainer_variable_is_evidence_escaped(machine: Machine) -> None:
    """APPTAINER_CONTAINER is the image's path as the user gave it: a newline, a terminal escape and a byte that is
    not UTF-8 in it stay escaped in the text report and intact in one JSON object."""
    hostile = "/home/me/x\n\x1b[31mred\udcff.sif"
    machine.env["APPTAINER_CONTAINER"] = hostile
    report = machine.check_json()
    assert report["host"]["platform"]["container"] == "apptainer"
    text = machine.run("check", "-v").stdout
    assert "\x1b" not in text and "\udcff" not in text


def test_wsls_own_libcuda_refusing_is_the_windows_drivers_and_is_never_taken_away(machine: Machine,
                                                                                    tmp_path: Path) -> None:
    """WSL's own libcuda (the Windows driver's, in /usr/lib/wsl/lib) answering cuInit with 803: the plan updates the
    Windows driver and restarts WSL; it never takes WSL's own folder out of LD_LIBRARY_PATH nor tells the user to
    remove a Linux driver there is not, and no step says reboot."""
    import re

    wsl = wsl_machine(machine, tmp_path)
    refusing = fake_libcuda(tmp_path / "libcuda-803", driver_cuda=12040, devices=1, name="NVIDIA GeForce RTX 4070",
                            status=803)
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(refusing, wsl / name)
    report = machine.check_json()
    [mismatch] = [f for f in report["findings"] if f["code"] == "CD112"]
    assert mismatch["severity"] == "error" and "wsl --shutdown" in mismatch["fix"]
    assert "Windows" in mismatch["fix"] and "apt remove" not in mismatch["fix"]
    text = " ".join(f["fix"] or "" for f in report["findings"])
    assert not re.search(r"\breboot\b|modprobe|rmmod", text), text
    plan = machine.run("fix", "--json").json
    assert not [a for a in plan["actions"] if a["kind"] == "env" and str(wsl) in a.get("text", "")], plan["actions"]


LINUX_ONLY_ADVICE = r"\breboot\b|reload the nvidia|modprobe|rmmod|apt(-get)? install nvidia-driver|nvidia-smi -r|systemctl"
DRIVER_MESSAGES = [
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
    "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu. (cudaErrorSystemDriverMismatch)",
    "Failed to initialize NVML: Driver/library version mismatch",
    "CUDA driver version is insufficient for CUDA runtime version",
    "cuInit returned 999 (CUDA_ERROR_UNKNOWN)",
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
]


@pytest.mark.parametrize("message", DRIVER_MESSAGES)
def test_explain_on_wsl_gives_the_windows_drivers_fix(message: str, machine: Machine, tmp_path: Path) -> None:
    """Issue 43, class 9: on WSL 2 a driver message explained gets the platform's own fix (the Windows driver,
    `wsl --shutdown`), as check and fix give it, never a reboot, modprobe or an apt driver."""
    wsl_machine(machine, tmp_path)
    answer = machine.run("explain", "--json", message).json
    assert answer["matches"], answer
    text = json.dumps([match["fix"] for match in answer["matches"]])
    assert not re.search(LINUX_ONLY_ADVICE, text, re.I), text
    assert re.search(r"wsl --shutdown|Windows", text), text


@pytest.mark.parametrize("status", [35, 46, 304, 999])
def test_on_wsl_a_driver_that_fails_to_start_is_explained_without_linux_causes(status: int, machine: Machine,
                                                                                tmp_path: Path) -> None:
    """On WSL 2 every word of a finding about the driver (its detail as well as its fix) is WSL's: the driver is
    the Windows one, so no 'upgrade without a reboot', no modules to reload."""
    wsl = wsl_machine(machine, tmp_path)
    refusing = fake_libcuda(tmp_path / f"libcuda-{status}", driver_cuda=12040, devices=1,
                            name="NVIDIA GeForce RTX 4070", status=status)
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(refusing, wsl / name)
    report = machine.check_json()
    driver = [f for f in report["findings"] if f["code"].startswith("CD1")]
    assert driver, report["findings"]
    text = json.dumps(driver)
    assert not re.search(LINUX_ONLY_ADVICE, text, re.I), text
    assert re.search(r"wsl --shutdown|Windows", text), text


@pytest.mark.parametrize("code", ["CD104", "CD110", "CD112", "CD101"])
def test_explain_a_driver_code_on_wsl_gives_wsls_causes_and_fix(code: str, machine: Machine, tmp_path: Path) -> None:
    wsl_machine(machine, tmp_path)
    text = machine.run("explain", code).stdout
    answer = machine.run("explain", "--json", code).json
    said = json.dumps([answer["code"], [match["fix"] for match in answer["matches"]]])
    for words in (text, said):
        assert not re.search(LINUX_ONLY_ADVICE, words, re.I), words
        assert re.search(r"wsl --shutdown|Windows", words), words
