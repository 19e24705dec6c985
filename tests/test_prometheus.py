"""`check --format prometheus`: what the real node_exporter's textfile collector scrapes."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml

SICK = {"SICK_GPU": 1, "ECC_VOLATILE": 2, "THROTTLE": 0x40, "PCIE_WIDTH": 8}
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def _report_machine(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13010)
    machine.add_library_path(tmp_path / "cudnn")
    machine.add_library_path(fake_nvml(tmp_path / "nvml", gpus=2, health=SICK).parent)


def test_prometheus_text_has_status_findings_copies_and_health(machine: Machine, tmp_path: Path) -> None:
    _report_machine(machine, tmp_path)
    result = machine.run("check", "--format", "prometheus")
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert 'cudnn_doctor_status{status="error"} 1' in lines and 'cudnn_doctor_status{status="ok"} 0' in lines
    assert any(line.startswith('cudnn_doctor_finding{code="CD130",severity="error"') for line in lines)
    assert any(line.startswith('cudnn_doctor_cudnn_info{version="9.19.0"') and 'loaded_by="ld.so"' in line
               for line in lines)
    assert 'cudnn_doctor_gpu_ecc_errors_uncorrected_volatile{gpu="1",uuid="GPU-00000000-fa4e-0000-0000-000000000001"} 2' \
        in lines
    assert any('cudnn_doctor_gpu_throttle_reason{gpu="1"' in line and 'reason="hw_thermal_slowdown"' in line
               for line in lines)
    assert 'cudnn_doctor_gpu_pcie_link_width{gpu="1",uuid="GPU-00000000-fa4e-0000-0000-000000000001"} 8' in lines
    for line in lines:  # every sample has HELP/TYPE and a name of the convention
        assert line.startswith(("# HELP cudnn_doctor_", "# TYPE cudnn_doctor_", "cudnn_doctor_"))


def test_output_file_is_written_atomically_and_bad_outputs_are_usage_errors(machine: Machine, tmp_path: Path) -> None:
    target = tmp_path / "textfile" / "cudnn_doctor.prom"
    target.parent.mkdir()
    result = machine.run("check", "--format", "prometheus", "--output", str(target))
    assert result.stdout == "" and "cudnn_doctor_exit_code" in target.read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["cudnn_doctor.prom"]  # no temporary left
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    for bad in (str(tmp_path / "missing" / "x.prom"), str(tmp_path), ""):
        answer = machine.run("check", "--format", "prometheus", "--output", bad)
        assert answer.exit_code == 2 and "--output" in answer.stderr and "Traceback" not in answer.stderr
    assert machine.run("check", "--output", str(target)).exit_code == 2  # text goes to the terminal


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _scrape(textfiles: Path) -> str:
    """What the real node_exporter's textfile collector serves for the .prom files in TEXTFILES."""
    if NODE_EXPORTER is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have prometheus-node-exporter (.ci/run installs it)")
        pytest.skip("prometheus-node-exporter not installed here")
    port = _free_port()
    exporter = subprocess.Popen([NODE_EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                                 f"--collector.textfile.directory={textfiles}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    return str(response.read().decode())
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)


def test_the_real_node_exporter_scrapes_what_the_doctor_wrote(machine: Machine, tmp_path: Path) -> None:
    _report_machine(machine, tmp_path)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    assert machine.run("check", "--format", "prometheus", "--output", str(textfiles / "cudnn_doctor.prom")).exit_code == 1
    metrics = _scrape(textfiles)
    assert "node_textfile_scrape_error 0" in metrics, metrics[-2000:]
    assert 'cudnn_doctor_status{status="error"} 1' in metrics
    assert 'cudnn_doctor_finding{code="CD130",severity="error",subject="GPU 1",' in metrics
    assert "cudnn_doctor_gpu_ecc_errors_uncorrected_volatile" in metrics


def test_findings_and_frameworks_that_share_their_labels_are_one_series(machine: Machine, tmp_path: Path) -> None:
    """Two --require of one subject (two CD320 with the same labels), a framework named twice, odd label
    text: every series is unique, so node_exporter scrapes the file instead of refusing it."""
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    machine.env["CUDA_HOME"] = str(tmp_path / 'no "toolkit"\\ here\nnext line\r\tand') + os.fsdecode(b"\xff\xfe")
    result = machine.run("check", "--format", "prometheus", "--output", str(textfiles / "cudnn_doctor.prom"),
                         "--require", "cudnn>=9.1", "--require", "cudnn>=9.2", "--require", "cudnn>=9.1",
                         "--framework", "torch==2.5.1", "--framework", "torch==2.5.1")
    assert result.exit_code == 1, result.stderr
    samples = [line for line in (textfiles / "cudnn_doctor.prom").read_text().splitlines() if not line.startswith("#")]
    series = [line.rsplit(" ", 1)[0] for line in samples]
    assert len(series) == len(set(series))
    # the same --require given twice is one requirement (settings merge them); two unmet ones are one series, counted
    assert any(line.startswith('cudnn_doctor_finding{code="CD320"') and line.endswith(" 2") for line in samples)
    metrics = _scrape(textfiles)
    assert "node_textfile_scrape_error 0" in metrics, metrics[-3000:]
    assert 'cudnn_doctor_framework_info{cuda_built_for="12.4",cudnn_used="",name="torch",version="2.5.1"} 1' in metrics
    assert 'code="CD320"' in metrics and 'code="CD204"' in metrics


def test_output_files_that_are_not_regular_files_are_never_renamed_over(machine: Machine, tmp_path: Path) -> None:
    """--output and --junit-xml replace their file by a rename: a FIFO, a link or a device there (as root,
    /dev/full) would be replaced, so they are refused before anything is probed, and left as they were."""
    fifo = tmp_path / "metrics.prom"
    os.mkfifo(fifo)
    link = tmp_path / "link.xml"
    link.symlink_to(tmp_path / "elsewhere.xml")
    for args in (("--format", "prometheus", "--output", str(fifo)), ("--junit-xml", str(link)),
                 ("--format", "json", "--output", "/dev/null")):
        result = machine.run("check", *args, timeout=30)
        assert result.exit_code == 2 and "is not a regular file" in result.stderr, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_github_summary_that_is_a_fifo_is_one_line_not_a_hang(machine: Machine, tmp_path: Path) -> None:
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    machine.env["GITHUB_STEP_SUMMARY"] = str(fifo)
    result = machine.run("check", "--format", "github", timeout=30)
    assert "GITHUB_STEP_SUMMARY" in result.stderr and "Traceback" not in result.stderr
