"""`check` inside real containers started with runc (Debian's), as root, with no network: the doctor unchanged, no
CUDNN_DOCTOR_SYSTEM_PREFIX, reading the container's own /proc, /dev and loader.

The bundle is what Docker hands runc (dockerd -> containerd -> runc): an overlay root (the image layer: /.dockerenv,
the loader's cache, the links bin -> usr/bin ...), the host's /usr/bin and /usr/lib and this checkout (its venv
included) bind-mounted read-only, a read-only root, a tmpfs /tmp, and the default namespaces of `runc spec`,
network included (only loopback inside). The variables are those of NVIDIA's CUDA images. Without the NVIDIA
runtime nothing more is there; "with" it, the fake driver (gcc-built NVML and libcuda) is mounted at
/usr/local/nvidia/lib64, which the images' LD_LIBRARY_PATH names (where GKE's device plugin mounts the node's
driver), and the runtime's device nodes /dev/nvidiactl, /dev/nvidia0 and /dev/nvidia-uvm are made (major 195, 510).
"""

from __future__ import annotations

import ctypes.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, codes
from tests.fakes.build import fake_libcuda, fake_nvml
from tests.test_schemas import validate

IMAGE_ENV = {  # nvidia/cuda:12.8.1-runtime-ubuntu24.04's variables (docker inspect)
    "NVIDIA_VISIBLE_DEVICES": "all",
    "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    "CUDA_VERSION": "12.8.1",
    "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
}
INJECTED_AT = "/usr/local/nvidia/lib64"
DEVICES = (("/dev/nvidiactl", 195, 255), ("/dev/nvidia0", 195, 0), ("/dev/nvidia-uvm", 510, 0))
_ids = itertools.count()


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _host_folders() -> list[str]:
    """What the container's Python needs of this machine: /usr's programs and libraries, this checkout (its venv),
    and the bin and lib of the interpreter's prefixes that are elsewhere (a venv outside the checkout, a pyenv or
    /usr/local Python): never all of /usr/local, where the driver is mounted."""
    wanted = ["/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share", str(ROOT)]
    for prefix in {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)} - {"/usr"}:
        wanted += [os.path.join(prefix, "bin"), os.path.join(prefix, "lib")]
    kept: list[str] = []
    for folder in sorted(set(wanted), key=len):  # a parent first; a folder inside one already bound is not bound
        if os.path.isdir(folder) and not os.path.islink(folder) and \
                not any(folder == k or folder.startswith(k + "/") for k in kept):
            kept.append(folder)
    return kept


class Container:
    """One runc container: its bundle under FOLDER, its root an overlay on a tmpfs of its own."""

    def __init__(self, folder: Path) -> None:
        self.bundle = folder / "bundle"
        self.scratch = self.bundle / "scratch"
        self.rootfs = self.bundle / "rootfs"
        self.id = f"cudnn-doctor-test-{os.getpid()}-{next(_ids)}"
        self.mounted: list[Path] = []

    def __enter__(self) -> Container:
        try:
            self._make_root()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _make_root(self) -> None:
        self.scratch.mkdir(parents=True)
        self.rootfs.mkdir()
        _mount("-t", "tmpfs", "-o", "size=16m,mode=755", "tmpfs", str(self.scratch))
        self.mounted.append(self.scratch)
        lower, upper, work = (self.scratch / name for name in ("lower", "upper", "work"))
        for folder in (lower / "usr", lower / "etc", upper, work):
            folder.mkdir(parents=True)
        for name in ("bin", "sbin", "lib", "lib64"):
            (lower / name).symlink_to(f"usr/{name}")
        (lower / ".dockerenv").write_text("")  # the file Docker puts in each container's root
        for name in ("ld.so.cache", "passwd", "group"):
            if os.path.isfile(f"/etc/{name}"):
                shutil.copyfile(f"/etc/{name}", lower / "etc" / name)
        _mount("-t", "overlay", "overlay", "-o", f"lowerdir={lower},upperdir={upper},workdir={work}", str(self.rootfs))
        self.mounted.append(self.rootfs)

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["runc", "delete", "-f", self.id], capture_output=True)
        for path in reversed(self.mounted):
            _umount(path)

    def run(self, args: list[str], env: dict[str, str], driver: Path | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """runc run ARGS in a fresh container (runc spec's defaults, edited); DRIVER: a folder mounted at
        INJECTED_AT with the runtime's device nodes, as the NVIDIA runtime does."""
        config_file = self.bundle / "config.json"
        config_file.unlink(missing_ok=True)  # runc spec does not overwrite one
        subprocess.run(["runc", "spec", "--bundle", str(self.bundle)], check=True, capture_output=True)
        config = json.loads(config_file.read_text())
        assert "network" in {n["type"] for n in config["linux"]["namespaces"]}  # loopback only inside
        config["root"] = {"path": "rootfs", "readonly": True}
        config["process"].update(terminal=False, args=args, cwd="/tmp",
                                 env=[f"{key}={value}" for key, value in env.items()])
        mounts = config["mounts"]
        # /tmp first: a checkout under /tmp (CI's clone may be one) is bound on top of it, not hidden by it
        mounts.append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                       "options": ["nosuid", "nodev", "mode=1777", "size=64m"]})
        for folder in _host_folders():
            mounts.append({"destination": folder, "type": "bind", "source": folder, "options": ["rbind", "ro"]})
        if driver is not None:
            mounts.append({"destination": INJECTED_AT, "type": "bind", "source": str(driver),
                           "options": ["rbind", "ro"]})
            config["linux"]["devices"] = [{"path": path, "type": "c", "major": major, "minor": minor,
                                           "fileMode": 0o666, "uid": 0, "gid": 0} for path, major, minor in DEVICES]
        config_file.write_text(json.dumps(config, indent=1))
        try:
            return subprocess.run(["runc", "run", "--bundle", str(self.bundle), self.id], capture_output=True,
                                  text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        finally:
            subprocess.run(["runc", "delete", "-f", self.id], capture_output=True)


@pytest.fixture(scope="module")
def runc(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip where runc cannot start a container here: not root, no runc, or the trivial one fails."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("runc containers need root (CI runs as root)")
    if shutil.which("runc") is None:
        pytest.skip("runc is not installed: apt-get install runc (.ci/run does)")
    try:
        with Container(tmp_path_factory.mktemp("runc-probe")) as container:
            done = container.run(["/bin/true"], {"PATH": "/usr/bin:/bin"}, timeout=30)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        why = getattr(error, "stderr", None) or error
        pytest.skip(f"runc cannot make a container here (the overlay root or the bundle failed): {str(why).strip()}")
    if done.returncode != 0:
        pytest.skip(f"runc cannot run a container here: `runc run` of /bin/true exited {done.returncode}: "
                    f"{done.stderr.strip()[-400:]}")


def check_in_container(tmp_path: Path, driver: Path | None = None) -> tuple[dict, str]:
    """`cudnn-doctor check --json` and `check` in a runc container with the CUDA image's variables; the report
    and the text."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
           "COLUMNS": "200", "PYTHONPATH": str(ROOT), "CUDNN_DOCTOR_CACHE_DIR": "/tmp/cache",
           "CUDNN_DOCTOR_PROBE_TIMEOUT": "10", **IMAGE_ENV}
    with Container(tmp_path) as container:
        shown = container.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env, driver)
        assert "Traceback" not in shown.stderr, shown.stderr
        report = json.loads(shown.stdout)
        assert report["summary"]["exit_code"] == shown.returncode
        text = container.run([sys.executable, "-m", "cudnn_doctor", "check"], env, driver)
        assert text.stdout.strip() and "Traceback" not in text.stderr, (text.returncode, text.stderr[-2000:])
        net = container.run(["/bin/cat", "/proc/net/dev"], env, driver).stdout.splitlines()[2:]
        assert [line.split(":")[0].strip() for line in net] == ["lo"], net  # no network: loopback only
        print(text.stdout)  # what a user sees, for the log
    return report, text.stdout


def test_a_runc_container_without_the_nvidia_runtime_gets_the_gpus_flag(runc: None, tmp_path: Path) -> None:
    if ctypes.util.find_library("cuda") or ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine's /usr/lib has an NVIDIA driver, which the container's bind-mounted /usr/lib shares")
    started = time.monotonic()
    report, text = check_in_container(tmp_path)
    validate(report)
    platform = report["host"]["platform"]
    assert (platform["kind"], platform["container"], platform["driver_injected"]) == ("container", "docker", False)
    assert any(line.startswith("/proc/self/mountinfo: / is overlay") for line in platform["evidence"]), platform
    assert platform["nvidia_env"]["CUDA_VERSION"] == "12.8.1"
    assert report["driver"]["source"] == "none"
    assert "CD101" not in codes(report)
    [hook] = [f for f in report["findings"] if f["code"] == "CD108"]
    assert "NVIDIA_VISIBLE_DEVICES=all" in hook["detail"] and "docker container" in hook["detail"]
    assert "--gpus all" in hook["fix"] and "runtimeClassName: nvidia" in hook["fix"]
    assert report["summary"]["exit_code"] == 1
    assert text.startswith("[✓] Platform: a container, docker, no driver injected by the NVIDIA runtime"), text
    assert "CD108" in text and "docker run --gpus all" in text
    assert time.monotonic() - started < 20


def test_a_runc_container_with_the_driver_injected_reads_it(runc: None, tmp_path: Path) -> None:
    driver = tmp_path / "driver"
    fake_nvml(driver, driver="570.172.08", cuda=12080, name="NVIDIA L4", compute_capability="8.9")
    fake_libcuda(driver, driver_cuda=12080, devices=1, name="NVIDIA L4")
    started = time.monotonic()
    report, text = check_in_container(tmp_path / "container", driver)
    validate(report)
    platform = report["host"]["platform"]
    assert (platform["kind"], platform["container"], platform["driver_injected"]) == ("container", "docker", True)
    assert report["driver"]["version"] == "570.172.08" and report["driver"]["cuda_driver_version"] == "12.8"
    assert [gpu["name"] for gpu in report["gpus"]] == ["NVIDIA L4"]
    assert not codes(report) & {"CD108", "CD101", "CD150", "CD151"}, codes(report)
    assert text.startswith("[✓] Platform: a container, docker"), text
    assert "no driver injected" not in text and "570.172.08" in text
    assert time.monotonic() - started < 20
