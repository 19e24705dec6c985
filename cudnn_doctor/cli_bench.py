"""`cudnn-doctor bench`: registered on the app by cli.py (`register(app)`).

Only typer is imported here at module level; the bench's modules load inside the command.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Optional

import typer

NUMPY_FIX = "pip install 'cudnn-doctor[bench]' (with pipx: pipx inject cudnn-doctor numpy)"


def require_numpy() -> None:
    """bench computes its inputs and the CPU reference with NumPy, an optional dependency: name it if it is missing."""
    import importlib.util

    from cudnn_doctor.errors import DoctorError

    try:
        found = importlib.util.find_spec("numpy") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise DoctorError(f"bench needs NumPy, the optional dependency `bench`, and this Python ({sys.executable}) "
                          "has none; nothing was run on the GPU", fix=NUMPY_FIX)


def selected_workloads(workload: str) -> tuple[str, ...]:
    from cudnn_doctor.bench.workloads import selected

    return tuple(selected(workload))


class WorkloadProgress:
    """A rich progress line on the terminal's stderr: which workload runs now, how many are done."""

    def __init__(self, per_device: int, devices: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.per_device = per_device
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("starting the benchmark", total=per_device if devices != "all" else None)
        self.devices: set[int] = set()

    def __enter__(self) -> WorkloadProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.progress.stop()

    def update(self, device: int, event: dict[str, Any]) -> None:
        if device not in self.devices:
            self.devices.add(device)
            self.progress.update(self.task, total=self.per_device * len(self.devices))
        if "now" in event:
            self.progress.update(self.task, description=f"GPU {device}: {event['now']}", refresh=True)
        if "done" in event:
            self.progress.advance(self.task)


def register(app: typer.Typer) -> None:
    """Add the `bench` command to APP."""
    from cudnn_doctor.cli import _console, guarded

    @app.command("bench")
    @guarded
    def bench(
        workload: str = typer.Option("all", "--workload", metavar="conv|lstm|all",
                                     help="Convolution (forward, backward-data, backward-filter), LSTM, or both."),
        dtype: str = typer.Option("fp32", "--dtype", metavar="fp32|tf32|fp16|bf16",
                                  help="Data type; tf32 is float32 data on TF32 tensor cores."),
        layout: str = typer.Option("nchw", "--layout", metavar="nchw|nhwc", help="Convolution tensor layout."),
        size: str = typer.Option("medium", "--size", metavar="tiny|small|medium|large",
                                 help="tiny: a smoke test; small: CIFAR-10 layer, LSTM 512; medium: ResNet 3x3 layer 32x64x56x56, "
                                      "LSTM 512 (seq 100, batch 64); large: ResNet conv4 layer, LSTM 1024."),
        workspace_limit: Optional[float] = typer.Option(
            None, "--workspace-limit", metavar="MB",
            help="Largest cuDNN workspace to allow; 0 picks only algorithms that need none (NO_WORKSPACE)."),
        device: str = typer.Option("0", "--device", metavar="N|all", help="Which GPU, or all of them in turn."),
        no_cpu: bool = typer.Option(False, "--no-cpu", help="Skip the CPU baseline (results are still checked, "
                                                           "on a slice of the output)."),
        cudnn: Optional[str] = typer.Option(None, "--cudnn", metavar="PATH", help="Use this libcudnn.so."),
        cudart: Optional[str] = typer.Option(None, "--cudart", metavar="PATH", help="Use this libcudart.so."),
        api: str = typer.Option("auto", "--api", metavar="auto|graph|legacy",
                                help="Convolution API: graph (cuDNN's backend API, autotuned, as PyTorch), legacy "
                                     "(cudnnFind*, as TensorFlow and cuDNN 7), or auto: graph where it works."),
        repeats: int = typer.Option(20, "--repeats", metavar="N", help="Timed samples per workload (median)."),
        json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/bench/1)."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
    ) -> None:
        """Run cuDNN convolution and LSTM through its C API: time them, check them against NumPy."""
        from cudnn_doctor.bench.workloads import BenchOptions, validate_options

        options = validate_options(BenchOptions(
            workload=workload.lower(), dtype=dtype.lower(), layout=layout.lower(), size=size.lower(),
            workspace_limit_mb=workspace_limit, devices=device.lower(), cpu=not no_cpu, repeats=repeats,
            api=api.lower()))
        require_numpy()  # before any GPU work: the child needs it for inputs and the reference
        from cudnn_doctor.bench.model import bench_to_json
        from cudnn_doctor.commands.bench import BenchCommandOptions, run

        command = BenchCommandOptions(options, cudnn_path=cudnn, cudart_path=cudart)
        if json_output or not (sys.stdout.isatty() and sys.stderr.isatty()):
            report = run(command)
        else:
            with WorkloadProgress(len(selected_workloads(options.workload)), device) as shown:
                report = run(command, progress=shown.update)
        if json_output:
            from cudnn_doctor.render.json_out import write_json

            write_json(bench_to_json(report))
        else:
            from cudnn_doctor.render.bench_text import render_bench

            render_bench(report, _console(), verbose)
        raise typer.Exit(report.summary.exit_code if report.summary else 3)
