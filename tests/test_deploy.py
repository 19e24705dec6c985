"""deploy/: every manifest parses, the DaemonSet takes no GPU from the scheduler yet sees them all (as NVIDIA's
DCGM exporter runs), writes node_exporter's textfile and the JSON for `fleet merge`, and its image is built
from this checkout (the PyPI name is not ours). One loop of its own script is run on pretend nodes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from cudnn_doctor import __version__
from tests.conftest import Machine
from tests.fakes.build import fake_nvml
from tests.test_prometheus import NODE_EXPORTER, _free_port

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
MANIFESTS = sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def _documents() -> list[tuple[Path, dict[str, Any]]]:
    return [(path, doc) for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _daemonsets() -> list[dict[str, Any]]:
    return [doc for _, doc in _documents() if doc.get("kind") == "DaemonSet"]


def _script_and_mounts(daemonset: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    """The doctor container's shell script and its mounts: mountPath -> the volume."""
    pod = daemonset["spec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c["name"] == "doctor"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: volumes[mount["name"]] for mount in container["volumeMounts"]}
    assert container["command"] == ["/bin/sh", "-c"]
    return container["args"][0], mounts


def test_every_manifest_parses_and_names_its_kind() -> None:
    assert MANIFESTS, "deploy/ holds the Kubernetes manifests"
    for path, doc in _documents():
        assert doc.get("apiVersion") and doc.get("kind"), path
    assert len(_daemonsets()) == 1


def test_the_daemonset_takes_no_gpu_and_sees_every_gpu() -> None:
    for daemonset in _daemonsets():
        pod = daemonset["spec"]["template"]["spec"]
        assert pod["runtimeClassName"] == "nvidia"
        for container in pod["containers"] + pod.get("initContainers", []):
            for kind in ("limits", "requests"):
                assert not any(key.startswith("nvidia.com/") for key in container.get("resources", {}).get(kind, {}))
        for container in pod["containers"]:
            env = {item["name"]: item.get("value") for item in container.get("env", [])}
            assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
            assert set(env["NVIDIA_DRIVER_CAPABILITIES"].split(",")) >= {"compute", "utility"}
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_the_daemonset_runs_unprivileged_with_only_what_it_writes_writable() -> None:
    """No root where none is needed, no capability, no privilege escalation, a read-only root file system; writable:
    the two output folders and an emptyDir for HOME and TMPDIR. Root only in the one init container that hands the
    hostPath folder to nobody, with CAP_CHOWN alone."""
    for daemonset in _daemonsets():
        pod = daemonset["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for container in pod["containers"] + pod.get("initContainers", []):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True
            assert context["capabilities"]["drop"] == ["ALL"] and not context.get("privileged")
            if container in pod["containers"]:
                assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
                assert not context["capabilities"].get("add")
            else:  # root, to chown the hostPath folder it mounts, and nothing more
                assert context["capabilities"]["add"] == ["CHOWN"] and container["command"][0] == "chown"
                assert [m["name"] for m in container["volumeMounts"]] == ["textfile"]
        script, mounts = _script_and_mounts(daemonset)
        [doctor] = [c for c in pod["containers"] if c["name"] == "doctor"]
        env = {item["name"]: item.get("value") for item in doctor["env"]}
        writes = set(re.findall(r"--output \"?(/\w+)/", script)) | {env["HOME"], env["TMPDIR"]}
        for mount in doctor["volumeMounts"]:
            assert mount["mountPath"] in writes and not mount.get("readOnly"), mount
        assert writes <= set(mounts)
        assert "emptyDir" in mounts[env["HOME"]] and "hostPath" not in mounts[env["HOME"]]
        assert all("hostPath" not in volumes[m["name"]] or m["mountPath"] == "/textfile" for m in doctor["volumeMounts"])
    dockerfile = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    assert re.search(r"^USER 65534", dockerfile, re.M)


def test_the_daemonset_writes_node_exporters_textfile_and_the_json_for_fleet_merge() -> None:
    for daemonset in _daemonsets():
        script, mounts = _script_and_mounts(daemonset)
        prometheus = re.search(r"cudnn-doctor check --format prometheus --output (\S+\.prom)", script)
        assert prometheus, script
        folder = os.path.dirname(prometheus.group(1))
        host = mounts[folder]["hostPath"]["path"]
        assert host == "/var/lib/node_exporter/textfile_collector"  # the folder the comment tells node_exporter to read
        assert f"--collector.textfile.directory={host}" in (DEPLOY / "kubernetes" / "cudnn-doctor-daemonset.yaml").read_text()
        report = re.search(r'cudnn-doctor check --json --output "?(/\w+)/\$NODE_NAME\.json', script)
        assert report and "persistentVolumeClaim" in mounts[report.group(1)]


def test_the_image_is_built_from_this_checkout_never_from_the_pypi_name() -> None:
    wheel = f"cudnn_doctor-{__version__}-py3-none-any.whl"  # what `pip wheel --no-deps -w dist .` builds
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            assert not re.search(r"pip3? install[^\n]*\bcudnn-doctor\b", path.read_text()), path
    dockerfile = (DEPLOY / "kubernetes" / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.replace("\\\n", " ").splitlines() if line and not line.startswith("#")]
    assert f"COPY dist/{wheel} /tmp/" in instructions
    [run] = [line for line in instructions if line.startswith("RUN ")]
    assert f"python3 -m pip install --no-cache-dir /tmp/{wheel}" in run
    manifest = (DEPLOY / "kubernetes" / "cudnn-doctor-daemonset.yaml").read_text()
    assert "python3 -m pip wheel --no-deps -w dist ." in manifest and "-f deploy/kubernetes/Dockerfile" in manifest
    for daemonset in _daemonsets():
        [container] = daemonset["spec"]["template"]["spec"]["containers"]
        tag = container["image"].rsplit(":", 1)[1]
        assert tag == __version__ and f"-t {container['image']} ." in manifest


def _scrape(textfiles: Path) -> str:
    port = _free_port()
    exporter = subprocess.Popen([str(NODE_EXPORTER), "--collector.disable-defaults", "--collector.textfile",
                                 f"--collector.textfile.directory={textfiles}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    return str(response.read().decode())
            except OSError:
                time.sleep(0.2)
        raise AssertionError("node_exporter did not answer")
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)


def test_one_loop_of_the_daemonsets_script_on_two_nodes_scrapes_and_merges(machine: Machine, tmp_path: Path) -> None:
    """The manifest's own script, its paths moved into the test's folder, with a `sleep` that ends the loop."""
    [daemonset] = _daemonsets()
    script, mounts = _script_and_mounts(daemonset)
    [container] = daemonset["spec"]["template"]["spec"]["containers"]
    manifest_env = {item["name"]: item["value"] for item in container["env"] if "value" in item}
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "cudnn-doctor").write_text(f'#!/bin/sh\nexec {sys.executable} -m cudnn_doctor "$@"\n')
    (shims / "sleep").write_text('#!/bin/sh\nkill -TERM "$PPID"\n')  # the hour's sleep ends the pod's loop
    for shim in shims.iterdir():
        shim.chmod(0o755)
    machine.add_library_path(fake_nvml(tmp_path / "driver", gpus=2).parent)
    reports = tmp_path / "reports"
    for node in ("gpu-node-a", "gpu-node-b"):
        moved = script
        scratch = tmp_path / node / "scratch"  # the emptyDir: HOME and TMPDIR
        scratch.mkdir(parents=True)
        for mount in (m for m in mounts if "emptyDir" not in mounts[m]):
            target = tmp_path / node / mount.strip("/") if mount != "/reports" else reports
            target.mkdir(parents=True, exist_ok=True)
            moved = moved.replace(f"{mount}/", f"{target}/")
        env = {**machine.env, **manifest_env, "NODE_NAME": node, "PATH": f"{shims}:{machine.env['PATH']}",
               "HOME": str(scratch), "TMPDIR": str(scratch)}
        completed = subprocess.run(["/bin/sh", "-c", moved], env=env, cwd=machine.cwd, capture_output=True,
                                   text=True, timeout=120)
        assert "Traceback" not in completed.stderr and "error:" not in completed.stderr, completed.stderr
        prom = (tmp_path / node / "textfile" / "cudnn_doctor.prom").read_text()
        assert prom.count("cudnn_doctor_gpu_info{") == 2  # both GPUs, not the one a GPU request would give
    assert sorted(p.name for p in reports.iterdir()) == ["gpu-node-a.json", "gpu-node-b.json"]
    merged = machine.run("fleet", "merge", "--json", str(reports))
    assert merged.json["nodes"] == 2 and merged.json["failed"] == []
    if NODE_EXPORTER is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have prometheus-node-exporter (.ci/run installs it)")
        pytest.skip("prometheus-node-exporter not installed here: the textfile was not scraped")
    metrics = _scrape(tmp_path / "gpu-node-a" / "textfile")
    assert "node_textfile_scrape_error 0" in metrics and "cudnn_doctor_exit_code" in metrics
