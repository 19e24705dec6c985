"""What the bench runs: shapes from real networks, dtypes, FLOP counts and tolerances.

Plain data and arithmetic only: no NumPy, no vendor library, so the CLI can validate
options and the tests can check the counts without either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DTYPES = ("fp32", "tf32", "fp16", "bf16")
LAYOUTS = ("nchw", "nhwc")
SIZES = ("tiny", "small", "medium", "large")
WORKLOADS = ("conv", "lstm", "all")
APIS = ("auto", "graph", "legacy")
CONV_PASSES = ("conv-fwd", "conv-bwd-data", "conv-bwd-filter")


@dataclass(frozen=True)
class ConvShape:
    """A 2-D convolution: input N×C×H×W, K filters of R×S, square padding and stride."""

    name: str
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    pad: int = 1
    stride: int = 1

    @property
    def p(self) -> int:
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def q(self) -> int:
        return (self.w + 2 * self.pad - self.s) // self.stride + 1

    def describe(self) -> str:
        return (f"{self.n}x{self.c}x{self.h}x{self.w} -> {self.k}, {self.r}x{self.s}"
                f" pad {self.pad} stride {self.stride}")


@dataclass(frozen=True)
class LstmShape:
    """A one-layer unidirectional LSTM over SEQ steps of a BATCH, INPUT -> HIDDEN features."""

    name: str
    seq: int
    batch: int
    input: int
    hidden: int
    layers: int = 1

    def describe(self) -> str:
        return f"seq {self.seq}, batch {self.batch}, {self.input} -> {self.hidden}"


# tiny: a smoke test that runs in moments anywhere; small: the CIFAR-10 network of the seeds' cuDNN article (Keras, 32x32 images, batch 32,
# 3x3 convolutions of 32 then 64 filters); medium: a ResNet-50/34 conv2_x 3x3 layer
# (56x56, 64 channels) and the LSTM the issue quotes; large: a ResNet conv4_x 3x3 layer at
# batch 64 and an LSTM of hidden size 1024.
CONV_SHAPES = {
    "tiny": ConvShape("tiny", n=2, c=4, h=6, w=6, k=3, r=3, s=3),
    "small": ConvShape("cifar10-conv2", n=32, c=32, h=32, w=32, k=32, r=3, s=3),
    "medium": ConvShape("resnet-conv2_x", n=32, c=64, h=56, w=56, k=64, r=3, s=3),
    "large": ConvShape("resnet-conv4_x", n=64, c=256, h=14, w=14, k=256, r=3, s=3),
}
LSTM_SHAPES = {
    "tiny": LstmShape("tiny", seq=5, batch=3, input=8, hidden=8),
    "small": LstmShape("lstm-512", seq=50, batch=32, input=512, hidden=512),
    "medium": LstmShape("lstm-512", seq=100, batch=64, input=512, hidden=512),
    "large": LstmShape("lstm-1024", seq=100, batch=64, input=1024, hidden=1024),
}


def conv_flops(shape: ConvShape) -> int:
    """2·N·K·C·R·S·P·Q multiply-adds counted as two operations; backward-data and
    backward-filter do the same number, so this is the count of each pass."""
    return 2 * shape.n * shape.k * shape.c * shape.r * shape.s * shape.p * shape.q


def lstm_flops(shape: LstmShape) -> int:
    """The matrix products of the forward pass: 2·seq·batch·4·hidden·(input + hidden) per layer.
    The gates' elementwise work (about 10 operations per hidden unit and step) is left out:
    it is under 1 % of the total for these shapes."""
    total = 0
    features = shape.input
    for _ in range(shape.layers):
        total += 2 * shape.seq * shape.batch * 4 * shape.hidden * (features + shape.hidden)
        features = shape.hidden
    return total


def tolerance(workload: str, dtype: str) -> float:
    """The largest accepted error, as max|GPU - CPU| / max|CPU| (relative to the output's scale).

    The CPU reference computes in float32 from exactly the values the GPU was given (fp16/bf16
    inputs are rounded first), so what remains is the GPU's own rounding:
    - fp32: float32 accumulation over up to 10^5 terms (backward-filter sums over N·P·Q),
      and FFT/Winograd algorithms, stay near 1e-5 of the scale; 2e-4 leaves room and still
      catches TF32 sneaking in (about 1e-3).
    - tf32: products of 10-bit-mantissa operands, relative error 2^-11 each: about 1e-3 of the
      scale, a few times that at the worst of 10^6 outputs: 1e-2.
    - fp16: float32 accumulation, but the output is rounded to fp16 (2^-11 relative) and
      fp16 Winograd/FFT transforms lose a little more: 1e-2.
    - bf16: the output is rounded to bf16 (8-bit mantissa, 2^-9 relative): 3e-2.
    The LSTM carries its state through SEQ steps in the storage dtype, so errors compound a
    little (the gates saturate, which keeps it bounded): twice the convolution's tolerance.
    A wrong answer (a bad kernel, a bad driver) is off by the order of the scale itself.
    """
    base = {"fp32": 2e-4, "tf32": 1e-2, "fp16": 1e-2, "bf16": 3e-2}[dtype]
    return base * 2 if workload.startswith("lstm") else base


def peak_key(dtype: str) -> str:
    """Which peak a dtype is measured against: fp32 runs on the CUDA cores, the rest on tensor cores."""
    return {"fp32": "fp32", "tf32": "tf32_tensor", "fp16": "fp16_tensor", "bf16": "bf16_tensor"}[dtype]


@dataclass(frozen=True)
class BenchOptions:
    workload: str = "all"
    dtype: str = "fp32"
    layout: str = "nchw"
    size: str = "medium"
    workspace_limit_mb: float | None = None  # None: no limit; 0: NO_WORKSPACE-style choice
    devices: str = "0"  # "N" or "all"
    cpu: bool = True
    repeats: int = 20
    warmup: int = 3
    api: str = "auto"  # convolutions: graph (backend) API where this cuDNN has it, else legacy


def selected(workload: str) -> tuple[str, ...]:
    """The workload names that --workload WORKLOAD runs."""
    if workload == "conv":
        return CONV_PASSES
    if workload == "lstm":
        return ("lstm-fwd",)
    return (*CONV_PASSES, "lstm-fwd")


def validate_options(options: BenchOptions) -> BenchOptions:
    """OPTIONS, or a DoctorError (exit 2) naming the bad one."""
    from cudnn_doctor.errors import DoctorError

    choices = {"--workload": (options.workload, WORKLOADS), "--dtype": (options.dtype, DTYPES),
               "--layout": (options.layout, LAYOUTS), "--size": (options.size, SIZES), "--api": (options.api, APIS)}
    for flag, (value, allowed) in choices.items():
        if value not in allowed:
            raise DoctorError(f"{flag} {value!r} is not one of {', '.join(allowed)}", fix=f"pass {flag} "
                              + "|".join(allowed))
    if options.devices != "all" and not re.fullmatch("[0-9]{1,4}", options.devices):  # str.isdigit is true for "٣"
        from cudnn_doctor.knowledge.inputs import shown

        raise DoctorError(f"--device {shown(options.devices)} is neither a GPU index nor 'all'", fix="pass --device 0")
    if options.workspace_limit_mb is not None and not options.workspace_limit_mb >= 0:
        raise DoctorError(f"--workspace-limit {options.workspace_limit_mb:g} is negative",
                          fix="pass a size in MB, or 0 for algorithms that need no workspace")
    if not 1 <= options.repeats <= 10000:
        raise DoctorError(f"--repeats {options.repeats} is out of range", fix="pass --repeats between 1 and 10000")
    return options
