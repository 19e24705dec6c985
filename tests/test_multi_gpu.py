"""Nodes with several GPUs (issue 42): the real pynvml on the gcc-built fake NVML with 1, 2 and 8 GPUs (NVLink bridge,
NVSwitch, PCIe), a fake libnccl for ncclGetVersion, /dev/shm made small in a user and mount namespace, NCCL's
settings against the node's interfaces, and the all-reduce's deadline against a stand-in torch that hangs as NCCL
does when its bootstrap finds no interface."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_libcuda, fake_nccl, fake_nvml
from tests.test_frameworks import install_torch, python_env

MULTI_CODES = {f"CD{n}" for n in range(170, 183)}
H100 = "NVIDIA H100 80GB HBM3"


def _gpus(machine: Machine, tmp_path: Path, gpus: int, name: str = H100, **topology: object) -> None:
    topology.setdefault("PCI", True)
    machine.add_library_path(fake_nvml(tmp_path / "nvml", gpus=gpus, name=name, health=topology).parent)  # type: ignore[arg-type]


def _interfaces(machine: Machine, *names: str, folder: str = "net") -> None:
    for name in names:
        (machine.root / "sys" / "class" / folder / name).mkdir(parents=True, exist_ok=True)


def _found(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def test_nvml_link_count_spares_asking_each_link_of_a_gpu_without_nvlink(machine: Machine, tmp_path: Path) -> None:
    # FIELD_VALUES: the driver counts the links; a GPU without any then answers UNKNOWN for each link, which a
    # probe that still asked them would report as that link's error
    _gpus(machine, tmp_path, 2, FIELD_VALUES=1)
    report = machine.check_json()
    gpus = report["multi_gpu"]["gpus"]
    assert [(g["nvlinks"], g["nvlinks_active"], g["errors"]) for g in gpus] == [([], 0, {}), ([], 0, {})]
    assert "Unknown Error" not in json.dumps(report)


def test_nvml_link_count_of_a_gpu_with_nvlink_still_asks_every_link(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, FIELD_VALUES=1, NVLINKS=4)
    gpus = machine.check_json()["multi_gpu"]["gpus"]
    assert [g["nvlinks_active"] for g in gpus] == [4, 4]  # expected: the H100 SXM's 18, from the data


def test_one_gpu_has_no_pair_and_nothing_to_say(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 1, NVLINKS=18, NVLINKS_DOWN=18, NVLINKS_DOWN_ALL=1)  # one GPU of a baseboard, alone in a VM: no link up
    _interfaces(machine, "eth0", "lo")
    report = machine.check_json()
    multi = report["multi_gpu"]
    [gpu] = multi["gpus"]
    assert multi["pairs"] == [] and gpu["nvlinks_expected"] == 18 and gpu["nvlinks_active"] == 0
    assert (gpu["pcie_generation"], gpu["pcie_width_max"], gpu["numa_node"], gpu["cpu_affinity"]) == (5, 16, 0, "0-15")
    assert multi["interfaces"] == ["eth0", "lo"] and multi["allreduce"] is None
    assert not codes(report) & MULTI_CODES


def _pci_device(machine: Machine, bus: str, vendor: str, cpus: str) -> None:
    folder = machine.root / "sys" / "bus" / "pci" / "devices" / bus
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vendor").write_text(vendor + "\n")
    (folder / "local_cpulist").write_text(cpus + "\n")


def test_cpu_affinity_is_the_kernels_list_for_the_gpus_pci_device(machine: Machine, tmp_path: Path) -> None:
    # sysfs's local_cpulist (what NVML's nvmlDeviceGetCpuAffinity answers from) is read where it holds the NVIDIA
    # device NVML names; another vendor's device at that address, or a list that is not one, leaves it to NVML
    _gpus(machine, tmp_path, 2)
    _pci_device(machine, "0000:10:00.0", "0x10de", "0-7,64-71")
    _pci_device(machine, "0000:11:00.0", "0x8086", "8-15")
    gpus = machine.check_json()["multi_gpu"]["gpus"]
    assert [g["cpu_affinity"] for g in gpus] == ["0-7,64-71", "0-15"]
    _pci_device(machine, "0000:10:00.0", "0x10de", "$(reboot)")
    assert machine.check_json()["multi_gpu"]["gpus"][0]["cpu_affinity"] == "0-15"


def test_an_nvlink_bridge_pair_with_links_down(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, "NVIDIA H100 NVL", NVLINKS=12, NVLINKS_DOWN=4, SICK_GPU=1)
    report = machine.check_json()
    [pair] = report["multi_gpu"]["pairs"]
    # NVML's answer in nvidia-smi topo -m's words: 8 links reach GPU 0 from GPU 1, so the pair is NV12 from GPU 0
    assert pair["gpus"] == [0, 1] and pair["path"] == "NV12" and pair["peak_gbs"] == 300.0 and pair["p2p_read"] == "ok"
    [down] = _found(report, "CD171")
    assert down["subject"] == "GPU 1" and "8 of its 12 NVLinks" in down["detail"] and "link 0, 1, 2, 3" in down["detail"]
    assert "nvidia-smi nvlink -s" in down["fix"] and "h100" in down["refs"][0].lower()
    text = machine.run("check").stdout
    assert "GPU 0 ↔ GPU 1: NV12, 300 GB/s a way, P2P ok" in text and "NVLinks 8/12 active" in text


def test_a_bridge_card_without_its_bridge_is_no_fault(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, "NVIDIA H100 PCIe", NVLINKS=12, NVLINKS_DOWN=12, NVLINKS_DOWN_ALL=1, ANCESTOR=30)
    report = machine.check_json()
    [pair] = report["multi_gpu"]["pairs"]
    assert pair["path"] == "PHB" and pair["peak_gbs"] == 63.0  # PCIe 5 x16, one way
    assert not _found(report, "CD171")


def test_eight_gpus_on_nvswitches_whose_fabric_is_not_trained(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 8, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=1)
    report = machine.check_json()
    multi = report["multi_gpu"]
    assert len(multi["pairs"]) == 28 and {p["path"] for p in multi["pairs"]} == {"NV18"}
    assert {g["numa_node"] for g in multi["gpus"]} == {0, 1} and multi["fabric_manager"] == "absent"
    [fabric] = _found(report, "CD170")
    assert fabric["severity"] == "error" and "not_started" in fabric["detail"]
    assert "systemctl enable --now nvidia-fabricmanager" in fabric["fix"] and "apt install" in fabric["fix"]
    assert report["summary"]["exit_code"] == 1


def test_a_trained_fabric_and_a_running_fabric_manager(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 8, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=3)
    (machine.root / "proc" / "4242").mkdir(parents=True)
    (machine.root / "proc" / "4242" / "comm").write_text("nv-fabricmanage\n")  # the kernel keeps 15 characters
    report = machine.check_json()
    assert report["multi_gpu"]["fabric_manager"] == "running"
    assert not codes(report) & MULTI_CODES


def test_cuinit_802_is_the_fabric_manager(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=1)
    machine.add_library_path(fake_libcuda(tmp_path / "cuda", driver_cuda=13000, devices=2, status=802).parent)
    report = machine.check_json("--deep")
    [fabric] = _found(report, "CD170")  # once: cuInit's own answer, not NVML's as well
    assert "CUDA_ERROR_SYSTEM_NOT_READY" in fabric["detail"] and "CD110" not in codes(report)
    assert "nvidia-fabricmanager" in fabric["fix"]


def test_an_idle_gpu_lowers_its_link_and_that_is_no_fault(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, PCIE_GEN=1, SICK_GPU=1, UTIL=0)
    assert not _found(machine.check_json(), "CD172")
    busy = Machine(tmp_path / "busy")
    _gpus(busy, tmp_path / "busy", 2, PCIE_GEN=3, SICK_GPU=1, UTIL=80)
    [slow] = _found(busy.check_json(), "CD172")
    assert slow["subject"] == "GPU 1" and "generation 3 x16 while generation 5 x16" in slow["detail"]
    assert "not in use" in " ".join(slow["refs"])


@pytest.mark.parametrize(("variable", "value", "code"), [
    ("NCCL_SOCKET_IFNAME", "nonexistent0", "CD175"),
    ("NCCL_SOCKET_IFNAME", "^=eth0,lo", "CD175"),  # every interface excluded
    # '=' only after the first '^', for the whole list (NCCL's ncclOsFindInterfaces): a second '=' is part of a name
    ("NCCL_SOCKET_IFNAME", "^=eth0,=lo", None),
    ("NCCL_SOCKET_IFNAME", "=lo", None),
    ("NCCL_SOCKET_IFNAME", "eth", None),
    ("NCCL_P2P_LEVEL", "FAST", "CD176"),
    ("NCCL_P2P_LEVEL", "NVL", None),
    ("NCCL_P2P_LEVEL", "3", None),  # an old number: still read
    ("NCCL_NET_GDR_LEVEL", "FAST", "CD176"),
    ("NCCL_DEBUG", "LOUD", "CD176"),
    ("NCCL_DEBUG", "WARN", None),
    ("NCCL_DEBUG", "INFO", "CD181"),
    ("NCCL_P2P_DISABLE", "1", "CD181"),
    ("NCCL_SHM_DISABLE", "1", "CD181"),
    ("NCCL_IB_HCA", "mlx5_99", None),  # no InfiniBand on the node: NCCL uses sockets whatever it says
])
def test_nccls_settings_against_its_grammar_and_this_node(machine: Machine, tmp_path: Path, variable: str,
                                                           value: str, code: str | None) -> None:
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    machine.env[variable] = value
    report = machine.check_json()
    assert report["multi_gpu"]["nccl_settings"] == {variable: value}
    found = codes(report) & MULTI_CODES
    assert found == ({code} if code else set())
    if code in ("CD175", "CD176"):
        [finding] = _found(report, code)
        assert finding["severity"] == "warning" and f"unset {variable}" in finding["fix"]


def test_nccl_ib_hca_naming_no_adapter_of_the_node(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "mlx5_0", "mlx5_1", folder="infiniband")
    machine.env["NCCL_IB_HCA"] = "=mlx5_9:1"
    [finding] = _found(machine.check_json(), "CD176")
    assert "mlx5_0, mlx5_1" in finding["detail"] and "IP sockets" in finding["detail"]
    machine.env["NCCL_IB_HCA"] = "mlx5_1:1"
    assert not _found(machine.check_json(), "CD176")


def _in_small_shm(machine: Machine, size: str, *args: str) -> dict:
    """`check --json` in a user and mount namespace whose /dev/shm (under the test's system root) is a SIZE tmpfs."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is needed")
    shm = machine.root / "dev" / "shm"
    shm.mkdir(parents=True, exist_ok=True)
    mount = f'mount -t tmpfs -o size={size} tmpfs "$1" && shift && exec "$@"'
    argv = ["unshare", "-r", "-m", "sh", "-c", mount, "sh", str(shm), sys.executable, "-m", "cudnn_doctor", "check",
            "--json", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=machine.env, cwd=machine.root.parent, timeout=120)
    if "unshare" in done.stderr and not done.stdout:
        pytest.skip(f"no user namespace here: {done.stderr.strip()}")
    import json

    return json.loads(done.stdout)


def test_a_dev_shm_too_small_for_one_nccl_segment(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2)
    report = _in_small_shm(machine, "1m")
    assert report["multi_gpu"]["shm_mib"] == 1 and "No space left on device" in report["multi_gpu"]["shm_refused"]
    [shm] = _found(report, "CD177")
    assert shm["severity"] == "error" and "9.2 MiB" in shm["detail"]
    assert "--shm-size=1g" in shm["fix"] and "--ipc=host" in shm["fix"]
    assert report["summary"]["exit_code"] == 1
    assert not list((machine.root / "dev" / "shm").iterdir())  # nothing left behind


def test_one_gpu_makes_no_nccl_segment_so_dev_shm_is_not_judged(machine: Machine, tmp_path: Path) -> None:
    # NCCL's shared-memory transport joins GPUs of one node: a lone GPU's programs never make a segment there
    _gpus(machine, tmp_path, 1)
    report = _in_small_shm(machine, "1m")
    assert not _found(report, "CD177") and not _found(report, "CD178")


def test_dockers_default_dev_shm_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2)
    report = _in_small_shm(machine, "64m")
    assert not _found(report, "CD177")
    [small] = _found(report, "CD178")
    assert small["severity"] == "warning" and "64 MiB" in small["detail"] and "--shm-size=1g" in small["fix"]


def _torch_with_nccl(machine: Machine, tmp_path: Path, pin: str = "2.27.5") -> Path:
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0")
    metadata = next(site.glob("torch-*.dist-info")) / "METADATA"
    metadata.write_text(metadata.read_text() + f"Requires-Dist: nvidia-nccl-cu13=={pin}; platform_system == \"Linux\"\n")
    fake_nccl(site / "nvidia" / "nccl" / "lib", version=22705)
    return site


def test_torchs_own_nccl_is_the_one_it_was_built_with(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2)
    site = _torch_with_nccl(machine, tmp_path)
    report = machine.check_json()
    [lib] = report["multi_gpu"]["nccl_libraries"]
    assert lib == {"user": "torch", "library": str(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"),
                   "version": "2.27.5", "built_with": "2.27.5", "via": "RUNPATH", "entry": None, "error": None,
                   "library_real": os.path.realpath(site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"),
                   "after_preload": None}
    assert not _found(report, "CD180")


def test_torchs_own_nccl_wheel_is_read_from_its_metadata_without_loading_it(machine: Machine, tmp_path: Path) -> None:
    """The nvidia-nccl wheel torch reaches through its RUNPATH: its version is the wheel's own (its dist-info), so
    no child loads 200 MB of NCCL on every check; the fake library answering another version shows which was read."""
    _gpus(machine, tmp_path, 2)
    site = _torch_with_nccl(machine, tmp_path)
    (site / "nvidia_nccl_cu13-2.27.7.dist-info").mkdir()
    report = machine.check_json()
    [lib] = report["multi_gpu"]["nccl_libraries"]
    assert (lib["version"], lib["via"]) == ("2.27.7", "RUNPATH")


def test_an_older_libnccl_first_on_ld_library_path(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2)
    _torch_with_nccl(machine, tmp_path)
    old = fake_nccl(tmp_path / "old-nccl", version=21803).parent
    machine.add_library_path(old)
    report = machine.check_json()
    [lib] = report["multi_gpu"]["nccl_libraries"]
    assert (lib["version"], lib["via"], lib["entry"]) == ("2.18.3", "LD_LIBRARY_PATH", str(old))
    [finding] = _found(report, "CD180")
    assert "NCCL 2.18.3" in finding["detail"] and "built with NCCL 2.27.5" in finding["detail"]
    assert "undefined symbol" in finding["detail"]
    plan = machine.run("fix", "--json").json
    [action] = [a for a in plan["actions"] if "CD180" in a["resolves"]]
    assert action["kind"] == "env" and str(old) not in " ".join(action["env"]["bash"]).split("LD_LIBRARY_PATH=")[-1]


HANGING_TORCH = '''
"""A stand-in for torch under `check --deep`'s all-reduce: NCCL's bootstrap finding no interface, as NCCL says it
(NVIDIA/nccl#1837, marin-community/marin#6940), then the hang of a rank whose peers never come."""
import os, sys, time
__version__ = "2.11.0+cu130"
def device(kind, index):
    return (kind, index)
class cuda:
    @staticmethod
    def set_device(index): pass
    @staticmethod
    def can_device_access_peer(a, b): return True
'''

HANGING_DISTRIBUTED = '''
import os, sys, time
def init_process_group(backend, device_id=None):
    sys.stderr.write("node:1:1 [0] misc/socket.cc:484 NCCL WARN Bootstrap : no socket interface found\\n")
    sys.stderr.flush()
    if os.environ.get("RANK") == "0" and os.environ.get("NCCL_SOCKET_IFNAME"):
        time.sleep(3600)
    raise RuntimeError("NCCL error: invalid usage, Last error: Bootstrap : no socket interface found")
'''


def test_an_allreduce_that_hangs_is_a_finding_with_nccls_last_words(machine: Machine, tmp_path: Path) -> None:
    from tests.test_frameworks import real_python_sees

    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    site = _torch_with_nccl(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(HANGING_TORCH)
    (site / "torch" / "distributed.py").write_text(HANGING_DISTRIBUTED)
    real_python_sees(site, tmp_path)
    machine.env.update(NCCL_SOCKET_IFNAME="nonexistent0", CUDNN_DOCTOR_ALLREDUCE_TIMEOUT="8")
    started = time.monotonic()
    report = machine.check_json("--deep")
    assert time.monotonic() - started < 60
    result = report["multi_gpu"]["allreduce"]
    assert result["ok"] is False and result["timed_out"] is True and result["world_size"] == 2
    assert any("NCCL WARN Bootstrap : no socket interface found" in line for line in result["last_words"])
    [failed] = _found(report, "CD179")
    assert failed["severity"] == "error" and "hung and was stopped" in failed["detail"]
    assert "no socket interface found" in failed["detail"] and "CD175" in failed["detail"]
    [action] = [a for a in report["plan"]["actions"] if "CD175" in a["resolves"]]  # the plan check --deep made
    assert "CD179" in action["resolves"] and action["env"]["bash"] == ["unset NCCL_SOCKET_IFNAME"]
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _runs_rank(p, site)]  # no rank outlives check


def _runs_rank(pid: str, site: Path) -> bool:
    try:
        return str(site).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _acs_bridge(folder: Path, control: int) -> None:
    """A PCI bridge's config space with an ACS extended capability at 0x100 whose control register is CONTROL."""
    space = bytearray(4096)
    space[0x100:0x104] = (0x000D | (1 << 16)).to_bytes(4, "little")  # ACS, version 1, the last capability
    space[0x106:0x108] = control.to_bytes(2, "little")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config").write_bytes(bytes(space))


def test_acs_redirecting_peer_traffic_above_pcie_gpus(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, ANCESTOR=20)
    devices = machine.root / "sys" / "devices" / "pci0000:00" / "0000:00:01.0" / "0000:01:00.0"
    _acs_bridge(devices.parents[0], 0x1D)  # SV, RR, CR, UF: as Linux sets it with the IOMMU on
    _acs_bridge(devices, 0x00)  # the switch's port: nothing redirected there
    (machine.root / "sys" / "bus" / "pci" / "devices").mkdir(parents=True)
    for index in range(2):
        gpu = devices / f"0000:{0x10 + index:02x}:00.0"
        gpu.mkdir()
        (machine.root / "sys" / "bus" / "pci" / "devices" / gpu.name).symlink_to(gpu)
    (machine.root / "sys" / "kernel" / "iommu_groups" / "7").mkdir(parents=True)
    report = machine.check_json()
    assert report["multi_gpu"]["gpus"][0]["acs_redirect"] == ["0000:00:01.0 (CR+RR)"]
    [acs] = _found(report, "CD174")
    assert "0000:00:01.0" in acs["detail"] and "IOMMU is on" in acs["detail"] and "bench --p2p" in acs["detail"]
    assert "troubleshooting" in acs["refs"][0]


def _fake_cudart(devices: int) -> str:
    from tests.fakes.build import compile_library

    return str(compile_library("fake_bench_cudart.c", "libcudart.so.13", {"FAKE_DEVICES": devices},
                               soname="libcudart.so.13"))


def test_bench_p2p_on_one_gpu_measures_its_device_to_device_copy(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 1)
    result = machine.run("bench", "--p2p", "--size", "tiny", "--json", "--cudart", _fake_cudart(1))
    data = result.json
    assert data["schema"] == "cudnn-doctor/p2p/1" and data["pairs"] == [] and data["device_count"] == 1
    [copy] = data["copies"]
    assert (copy["src"], copy["dst"], copy["mib"], copy["link"]) == (0, 0, 16, "device-to-device (reference)")
    assert copy["gbs"] > 0 and copy["peak_gbs"] is None and data["findings"] == [] and result.exit_code == 0
    text = machine.run("bench", "--p2p", "--size", "tiny", "--cudart", _fake_cudart(1)).stdout
    assert "GPU 0 -> GPU 0" in text and "device-to-device (reference)" in text


def test_bench_p2p_names_a_pair_far_below_its_link(machine: Machine, tmp_path: Path) -> None:
    """The fake copies on the host (a few GB/s): far below two H100s' 18 NVLinks (450 GB/s a way)."""
    _gpus(machine, tmp_path, 2, "NVIDIA H100 NVL", NVLINKS=18)
    data = machine.run("bench", "--p2p", "--size", "tiny", "--json", "--cudart", _fake_cudart(2)).json
    assert [(c["src"], c["dst"], c["link"], c["peak_gbs"], c["peer_access"]) for c in data["copies"]] == [
        (0, 1, "NV18", 450.0, True), (1, 0, "NV18", 450.0, True)]
    slow = [f for f in data["findings"] if f["code"] == "CD611"]
    assert [f["subject"] for f in slow] == ["GPU 0 -> GPU 1", "GPU 1 -> GPU 0"]
    assert "of the 450.0 GB/s their link (NV18) carries" in slow[0]["detail"] and "nvidia-smi topo -m" in slow[0]["fix"]
    assert data["summary"]["exit_code"] == 0  # a warning


def test_the_report_and_p2p_validate_against_their_schemas(machine: Machine, tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    from cudnn_doctor.schemas import load_schema

    _gpus(machine, tmp_path, 8, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=1)
    machine.env["NCCL_SOCKET_IFNAME"] = "nonexistent0"
    report = machine.check_json()
    Draft202012Validator(load_schema("report")).validate(report)
    assert load_schema("report")["properties"]["multi_gpu"]
    data = machine.run("bench", "--p2p", "--size", "tiny", "--json", "--cudart", _fake_cudart(2)).json
    Draft202012Validator(load_schema("p2p")).validate(data)


def test_fleet_merge_names_the_node_whose_links_differ(machine: Machine, tmp_path: Path) -> None:
    """Three HGX nodes of 8 GPUs: on one, GPU 3 lost two NVLinks. The merge names that node, for its links."""
    folder = tmp_path / "reports"
    folder.mkdir()
    for name, down in (("hgx-01", 0), ("hgx-02", 2), ("hgx-03", 0)):
        node = Machine(tmp_path / name)
        _gpus(node, tmp_path / name, 8, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=3, SICK_GPU=3, NVLINKS_DOWN=down)
        report = node.check_json()
        report["host"]["hostname"] = name  # the pretend nodes all run on this one host
        (folder / f"{name}.json").write_text(__import__("json").dumps(report))
    data = machine.run("fleet", "merge", "--json", str(folder)).json
    drift = {entry["field"]: entry for entry in data["drift"]}
    assert drift["multi_gpu.links"]["majority"] == {"value": "28 x NV18", "nodes": 2}
    assert drift["multi_gpu.links"]["outliers"] == [{"node": "hgx-02", "value": "7 x NV16, 21 x NV18"}]
    assert drift["multi_gpu.nvlinks"]["outliers"] == [{"node": "hgx-02", "value": "142 of 144 up"}]
    assert "multi_gpu.pcie_max" not in drift


def test_hostile_nccl_values_and_interface_names_stay_escaped(machine: Machine, tmp_path: Path) -> None:
    """A value with a terminal escape, a newline and a byte that is not UTF-8; an interface named with markup."""
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "[bold]x[red]")
    value = "\x1b[31mred\nnext\udcff"
    machine.env["NCCL_SOCKET_IFNAME"] = value
    machine.env["NCCL_DEBUG"] = "\x1b]0;title\x07"
    process = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check"], capture_output=True, env={
        k: os.fsencode(v) for k, v in machine.env.items()}, cwd=machine.cwd, timeout=120)  # type: ignore[misc]
    assert b"Traceback" not in process.stderr and process.returncode in (0, 1)
    assert b"\x1b" not in process.stdout and b"\x07" not in process.stdout
    assert b"[bold]x[red]" in process.stdout  # shown as written, not taken as markup
    report = machine.check_json()
    assert report["multi_gpu"]["nccl_settings"]["NCCL_SOCKET_IFNAME"] == value.replace("\udcff", "\\xff")  # as JSON shows bytes
    assert {"CD175", "CD176"} <= codes(report)


def test_jaxs_cuda_plugin_takes_a_floor_of_nccl(machine: Machine, tmp_path: Path) -> None:
    """jax-cuda13-plugin asks for nvidia-nccl-cu13<3.0,>=2.27.7: a newer NCCL is fine, an older one first on
    LD_LIBRARY_PATH is not."""
    from tests.test_compat_rules import install_wheel

    _gpus(machine, tmp_path, 2)
    site = python_env(machine, tmp_path)
    install_wheel(site, "jax", "0.8.0", "jaxlib<=0.8.0,>=0.8.0")
    install_wheel(site, "jaxlib", "0.8.0")
    install_wheel(site, "jax-cuda13-plugin", "0.8.0", 'nvidia-nccl-cu13<3.0,>=2.27.7; extra == "with-cuda"')
    fake_nccl(site / "nvidia" / "nccl" / "lib", version=22805)
    report = machine.check_json()
    [lib] = report["multi_gpu"]["nccl_libraries"]
    assert (lib["user"], lib["version"], lib["built_with"], lib["via"]) == ("jax", "2.28.5", ">=2.27.7", "RUNPATH")
    assert not _found(report, "CD180")
    machine.add_library_path(fake_nccl(tmp_path / "old", version=21803).parent)
    [older] = _found(machine.check_json(), "CD180")
    assert "jax loads" in older["detail"] and "built with NCCL 2.27.7 or newer" in older["detail"]


@pytest.mark.parametrize("no_peer", [False, True])
def test_cuda_itself_says_whether_each_pair_may_reach_the_other(machine: Machine, tmp_path: Path,
                                                                no_peer: bool) -> None:
    _gpus(machine, tmp_path, 2)
    machine.add_library_path(fake_libcuda(tmp_path / "cuda", driver_cuda=13000, devices=2, no_peer=no_peer).parent)
    report = machine.check_json("--deep")  # --deep asks CUDA itself
    [pair] = report["multi_gpu"]["pairs"]
    assert pair["p2p_read"] == "ok" and pair["can_access_peer"] is (not no_peer)
    found = _found(report, "CD173")
    assert bool(found) is no_peer
    if no_peer:
        assert "cuDeviceCanAccessPeer answers no for peer-to-peer access between GPU 0 and GPU 1" in found[0]["detail"]


def test_nvml_fabric_not_ready_asks_cuda_which_starts(machine: Machine, tmp_path: Path) -> None:
    """NVML's fabric state alone is not the verdict where CUDA can be asked: check asks cuInit, which succeeds."""
    _gpus(machine, tmp_path, 2, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=2)
    machine.add_library_path(fake_libcuda(tmp_path / "cuda", driver_cuda=13000, devices=2).parent)
    report = machine.check_json()
    assert {g["fabric_state"] for g in report["multi_gpu"]["gpus"]} == {"in_progress"}
    assert not _found(report, "CD170") and not codes(report) & {"CD110", "CD113"}


def test_a_fifo_where_sysfs_and_proc_have_files_is_never_waited_for(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, ANCESTOR=20, NVLINKS=18, NVSWITCH=True, FABRIC_STATE=1)
    bridge = machine.root / "sys" / "devices" / "pci0000:00" / "0000:00:01.0"
    gpu = bridge / "0000:10:00.0"
    gpu.mkdir(parents=True)
    os.mkfifo(bridge / "config")
    (machine.root / "sys" / "bus" / "pci" / "devices").mkdir(parents=True)
    (machine.root / "sys" / "bus" / "pci" / "devices" / gpu.name).symlink_to(gpu)
    (machine.root / "proc" / "77").mkdir(parents=True)
    os.mkfifo(machine.root / "proc" / "77" / "comm")
    started = time.monotonic()
    report = machine.check_json()
    assert time.monotonic() - started < 30
    assert report["multi_gpu"]["gpus"][0]["acs_redirect"] == [] and report["multi_gpu"]["fabric_manager"] == "absent"


def test_prometheus_carries_the_links(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, 2, "NVIDIA H100 NVL", NVLINKS=12, NVLINKS_DOWN=4, SICK_GPU=1)
    text = machine.run("check", "--format", "prometheus").stdout
    assert 'cudnn_doctor_gpu_nvlinks_active{gpu="1"} 8' in text
    assert 'cudnn_doctor_gpu_nvlinks_expected{gpu="0"} 12' in text
    assert 'cudnn_doctor_gpu_pair_info{gpus="0-1",path="NV12"} 1' in text


def test_an_older_libnccl_preloaded_is_taken_out_of_ld_preload(machine: Machine, tmp_path: Path) -> None:
    """probes/origin: NCCL's probe now asks LD_PRELOAD first, as ld.so does; the plan took the preloaded file's
    folder out of LD_LIBRARY_PATH, which left it preloaded."""
    _gpus(machine, tmp_path, 2)
    _torch_with_nccl(machine, tmp_path)
    old = fake_nccl(tmp_path / "old-nccl", version=21803)
    machine.add_library_path(old.parent)
    machine.env["LD_PRELOAD"] = str(old)
    report = machine.check_json()
    [lib] = report["multi_gpu"]["nccl_libraries"]
    assert (lib["version"], lib["via"], lib["entry"]) == ("2.18.3", "LD_PRELOAD", str(old))
    plan = machine.run("fix", "--json").json
    [action] = [a for a in plan["actions"] if "CD180" in a["resolves"]]
    assert action["kind"] == "env" and any("LD_PRELOAD" in line for line in action["env"]["bash"])
