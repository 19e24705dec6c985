"""The registry of finding codes: one permanent entry per code.

Renderers, `explain CODE` and the rules all read this table, so the text a user
sees for a code is the same everywhere. A code, once published, keeps its
meaning; a retired code is marked retired, never reused.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from cudnn_doctor.model import Finding


@dataclass(frozen=True)
class Code:
    code: str
    severity: str  # "error" | "warning" | "info"
    title: str
    explanation: str
    fix: str  # a template; rules fill in the {placeholders}
    retired: bool = False  # a retired code is never reused and never produced again


_CODES = (
    # CD1xx: GPU and driver
    Code("CD101", "error", "No NVIDIA driver found",
         "Neither NVML (libnvidia-ml.so.1) nor the CUDA driver library (libcuda.so.1) could be "
         "loaded, so no program on this machine can use an NVIDIA GPU.",
         "Install the NVIDIA driver for your GPU (Linux: your distribution's nvidia-driver package "
         "or NVIDIA's .run installer; containers: run with `--gpus all` and the NVIDIA Container "
         "Toolkit), then run `nvidia-smi` to confirm."),
    Code("CD102", "error", "The driver sees no GPU",
         "The NVIDIA driver loaded but reported no GPU devices.",
         "Check that the GPU is visible to this machine or container (`nvidia-smi -L`, "
         "`CUDA_VISIBLE_DEVICES`, the container's `--gpus` flag)."),
    Code("CD103", "error", "Driver too old for the CUDA toolkit",
         "The driver supports CUDA {driver_cuda}, but the toolkit at {toolkit_path} is CUDA "
         "{toolkit_version}. Programs built with it fail with 'CUDA driver version is "
         "insufficient for CUDA runtime version'.",
         "Upgrade the NVIDIA driver to {min_driver} or newer, or use a CUDA {driver_cuda} toolkit."),
    Code("CD104", "error", "NVML failed to initialise",
         "NVML was found but failed: {error}. A 'Driver/library version mismatch' means the "
         "kernel module and the user-space driver libraries are of different versions, usually "
         "after a driver upgrade without a reboot.",
         "Reboot (or reload the nvidia kernel modules) so that the kernel module matches the "
         "driver libraries; `nvidia-smi` must work before anything else can."),
    Code("CD105", "info", "Driver found without NVML",
         "NVML could not be used ({error}), so the driver's CUDA version was read from "
         "libcuda.so.1 (cuDriverGetVersion); GPU details are not available.",
         "Install `nvidia-ml-py` (`pip install nvidia-ml-py`) and make libnvidia-ml.so.1 visible "
         "for full GPU details."),
    Code("CD106", "warning", "Toolkit newer than the driver, within the same major",
         "The driver supports CUDA {driver_cuda} and the toolkit at {toolkit_path} is CUDA "
         "{toolkit_version}. CUDA minor-version compatibility lets most programs run, but "
         "PTX JIT compilation of newer PTX and some new APIs fail.",
         "Upgrade the driver to {min_driver} or newer for full support of CUDA {toolkit_version}."),
    Code("CD107", "info", "CUDA forward-compatibility package present",
         "{path} holds a CUDA forward-compatibility libcuda ({version}); it lets a newer CUDA "
         "run on an older data-centre driver, and only when it is on the loader's path.",
         "No action needed if this is intended; otherwise remove it from LD_LIBRARY_PATH."),
    # CD2xx: CUDA toolkit and runtime
    Code("CD201", "warning", "No CUDA toolkit found",
         "No CUDA toolkit was found (CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda*, pip "
         "wheels, conda). Frameworks installed from pip bring their own CUDA runtime, but "
         "building CUDA code or installing cuDNN into a toolkit needs one.",
         "Install a CUDA toolkit that your driver supports, or `pip install "
         "nvidia-cuda-runtime-cu12` for the runtime alone; set CUDA_HOME to its folder."),
    Code("CD202", "warning", "CUDA toolkit version unreadable",
         "The toolkit at {path} has no readable version.json, version.txt, nvcc or libcudart.",
         "Reinstall the toolkit, or point CUDA_HOME at a complete one."),
    Code("CD203", "error", "CUDA runtime library fails to load",
         "{library} failed to load: {error}",
         "Reinstall the CUDA toolkit at {path}, or remove the broken file from the loader's path."),
    Code("CD204", "warning", "CUDA_HOME or CUDA_PATH points nowhere",
         "{variable} is set to {path}, which is not a CUDA toolkit folder.",
         "Set {variable} to the toolkit folder (the one that holds bin/nvcc and include/cuda.h), "
         "or unset it."),
    Code("CD205", "info", "Several CUDA toolkits installed",
         "Found CUDA {versions}. Build tools pick the one in CUDA_HOME/CUDA_PATH or the nvcc on "
         "PATH ({picked}).",
         "Set CUDA_HOME to the toolkit you mean to use."),
    # CD3xx: cuDNN installs
    Code("CD301", "error", "No cuDNN found",
         "No copy of cuDNN (libcudnn.so.N / cudnn64_N.dll) was found in the loader's search path, "
         "the CUDA toolkits, pip wheels, conda environments or the --search-path folders.",
         "Install it: `cudnn-doctor install --version {version} --cuda {cuda_major}` (into the CUDA "
         "toolkit), or `pip install nvidia-cudnn-cu{cuda_major}`."),
    Code("CD302", "warning", "Several cuDNN versions visible to the loader",
         "The dynamic loader can reach cuDNN {versions}; which one a program gets depends on "
         "LD_LIBRARY_PATH order and soname, and a mix of versions causes 'version mismatch' "
         "errors.",
         "Keep one cuDNN per major version on the loader's path: remove {others} or take its "
         "folder out of LD_LIBRARY_PATH."),
    Code("CD303", "error", "cuDNN headers and library disagree",
         "The headers in {header_path} say cuDNN {header_version}, but the library {library} "
         "reports {version}. Code compiled against these headers checks the version at run time "
         "and fails, or misbehaves.",
         "Reinstall headers and libraries from one archive: `cudnn-doctor install --version "
         "{version} --prefix {prefix}`."),
    Code("CD304", "error", "cuDNN sub-library missing",
         "{library} is cuDNN {version}, but its sub-libraries {missing} are not beside it. "
         "cuDNN loads them on first use, so programs fail only when they reach a convolution or "
         "RNN ('Unable to load any of {{libcudnn_cnn.so.9...}}').",
         "Reinstall the complete cuDNN {version} into {path}: `cudnn-doctor install --version "
         "{version} --prefix {prefix}`."),
    Code("CD305", "error", "cuDNN sub-library of another version",
         "{library} is cuDNN {version}, but {mismatched} beside it are of another version "
         "(a partial upgrade). cuDNN refuses sub-libraries of another version at first use.",
         "Remove the stale files and reinstall cuDNN {version} into {path} from one archive."),
    Code("CD306", "warning", "cuDNN built for another CUDA major",
         "{library} (cuDNN {version}) was built for CUDA {cudnn_cuda}, but the CUDA toolkit at "
         "{toolkit_path} is {toolkit_version}. A cuDNN build needs a CUDA runtime of its own "
         "major.",
         "Install the cuDNN build for CUDA {toolkit_major}: `cudnn-doctor install --version "
         "{version} --cuda {toolkit_major}`."),
    Code("CD307", "error", "cuDNN library fails to load",
         "{library} could not be loaded: {error}",
         "Make its dependencies visible (the CUDA runtime and libz for cuDNN 9: check with "
         "`ldd {library}`) or reinstall cuDNN."),
    Code("CD308", "error", "cuDNN file is broken or for another platform",
         "{library} is not a loadable library for this machine: {error}",
         "Delete it and install the right build for {arch}: `cudnn-doctor install --version "
         "{version_hint}`."),
    Code("CD309", "error", "Loading cuDNN crashed or hung",
         "Loading {library} in a child process {how}. Any program that loads it will do the same.",
         "Reinstall cuDNN, and check its dependencies with `ldd {library}`."),
    Code("CD310", "info", "cuDNN not on the dynamic loader's path",
         "cuDNN {version} at {path} is not found by an ordinary program's dynamic loader "
         "(LD_LIBRARY_PATH, ldconfig cache, system folders). Frameworks that know where it is "
         "(for example PyTorch with its pip wheel) still load it.",
         "For programs that link cuDNN directly: `export LD_LIBRARY_PATH={path}:$LD_LIBRARY_PATH`, "
         "or register it with ldconfig."),
    Code("CD311", "error", "GPU not supported by this cuDNN",
         "GPU {gpu} has compute capability {cc}; cuDNN {version} supports {supported}.",
         "Use a cuDNN release that supports compute capability {cc} ({suggestion})."),
    Code("CD312", "error", "cuDNN needs a newer driver",
         "{library} (cuDNN {version}) was built for CUDA {cudnn_cuda}, but the driver supports "
         "only CUDA {driver_cuda}.",
         "Upgrade the NVIDIA driver, or install the cuDNN build for CUDA {driver_major}."),
    Code("CD313", "warning", "Search folder unusable",
         "{path}: {error}",
         "Pass an existing, readable folder to --search-path."),
    Code("CD314", "warning", "cuDNN version unreadable",
         "{library} loaded, but cudnnGetVersion {error}.",
         "Reinstall cuDNN from one archive."),
    # CD4xx: framework compatibility
    Code("CD401", "error", "Framework needs a cuDNN it will not find",
         "{framework} {framework_version} was built with cuDNN {expected}; {found}.",
         "{fix}"),
    Code("CD402", "info", "Framework loads another cuDNN than the system's",
         "{framework} {framework_version} loads cuDNN {used_version} from {used_path}, not the "
         "cuDNN {system_version} that the dynamic loader finds at {system_path}.",
         "Nothing to do if this is intended; a cuDNN you install into the CUDA toolkit does not "
         "change what {framework} uses."),
    Code("CD403", "error", "Framework built for a CUDA newer than the driver",
         "{framework} {framework_version} is built for CUDA {cuda}, but the driver supports CUDA "
         "{driver_cuda}.",
         "Upgrade the NVIDIA driver to {min_driver} or newer, or install a {framework} build for "
         "CUDA {driver_cuda} or older."),
    Code("CD404", "error", "GPU not supported by the framework build",
         "{framework} {framework_version} (CUDA {cuda}) supports compute capabilities "
         "{supported}; GPU {gpu} is {cc}.",
         "{fix}"),
    Code("CD405", "error", "DL4J backend has no matching CUDA toolkit",
         "{artifact} (ND4J {framework_version}) needs CUDA {cuda}{cudnn_part}; {found}.",
         "Install CUDA {cuda}, or switch the backend to the nd4j-cuda-X.Y that matches your "
         "toolkit ({suggestion})."),
    Code("CD406", "warning", "Framework installed without GPU support",
         "{framework} {framework_version} is a CPU-only build; it never uses CUDA or cuDNN.",
         "{fix}"),
    Code("CD407", "info", "Compatibility unknown",
         "{framework} {framework_version}: {why}",
         "Check the framework's release notes for its CUDA/cuDNN requirements."),
    Code("CD408", "error", "Framework and cuDNN incompatible",
         "{framework} {framework_version} accepts cuDNN {expected}; the cuDNN it will load is "
         "{found}.",
         "{fix}"),
    # CD5xx: install
    Code("CD501", "error", "Checksum mismatch",
         "{file}: expected sha256 {expected}, got {actual}.",
         "Download the archive again; if it persists, the mirror holds a different file."),
    Code("CD502", "error", "Unsafe archive refused",
         "{file}: {why}. Nothing was written.",
         "Use an archive from NVIDIA's redistributable site or PyPI."),
    Code("CD503", "error", "Permission denied",
         "Cannot write to {path}.",
         "Run with sudo, or install into your home folder: `--prefix ~/.local/cudnn`, then "
         "`export LD_LIBRARY_PATH=~/.local/cudnn/lib64:$LD_LIBRARY_PATH`."),
    Code("CD504", "error", "Install rolled back",
         "{why}. Every file in {prefix} was restored as it was.",
         "{fix}"),
    Code("CD505", "error", "Installed cuDNN failed verification",
         "{why}",
         "The install was rolled back; check the archive and the prefix."),
    Code("CD506", "error", "Archive is for another platform",
         "{file} holds {found} libraries; this install targets {target}.",
         "Download the {target} build."),
    Code("CD507", "error", "Not enough disk space",
         "{path} has {free} free, the install needs {needed}.",
         "Free space or choose another --prefix."),
    Code("CD508", "error", "Installed file changed since the install",
         "{count} files that cudnn-doctor installed into {prefix} were changed afterwards ({files}); "
         "uninstalling would remove someone's work.",
         "Look at the files first; `cudnn-doctor uninstall --prefix {prefix} --force` removes them anyway."),
    Code("CD509", "error", "Install state unreadable",
         "{file} cannot be read ({why}); nothing was changed.",
         "Look at the file: it is cudnn-doctor's record of an install or of an interrupted run in "
         "the prefix; move it away only once the files it names are as you want them."),
    Code("CD510", "error", "Another install or uninstall is running",
         "Another cudnn-doctor install or uninstall is changing {prefix}.",
         "Wait for it to finish, then run the command again."),
    Code("CD511", "error", "Download failed",
         "{url}: {why}. Nothing was written.",
         "Check the network and the URL, or install from a local copy: `--mirror FOLDER_OR_URL` "
         "(an air-gapped mirror of NVIDIA's redist folder) or `--from ARCHIVE`."),
    Code("CD512", "error", "Redistributable manifest unusable",
         "{where}: {why}.",
         "Check the --version and the mirror; a mirror's redistrib_<version>.json must be NVIDIA's, "
         "unchanged."),
    Code("CD513", "error", "Archive not verifiable",
         "{where}: {why}, so the archive cannot be checked before it is installed.",
         "Use a manifest that lists the sha256 and size of every archive, pass `--sha256 HEX`, or "
         "install it unchecked with `--no-verify` (not recommended)."),
    Code("CD514", "error", "Cannot install into this folder",
         "{path}: {why}; nothing was changed.",
         "Choose another --prefix, or fix the folder: {fix}"),
    Code("CD515", "error", "Archive cannot be read",
         "{file}: {why}.",
         "{fix}"),
    Code("CD516", "error", "Not a cuDNN archive",
         "{file} holds no libcudnn library (libcudnn.so.N, cudnn64_N.dll).",
         "Pass a cuDNN archive or wheel to --from."),
    Code("CD517", "error", "Archive size mismatch",
         "{file}: expected {expected} bytes, got {actual}. Nothing was written.",
         "Download the archive again; if it persists, the mirror holds a different file."),
    # CD6xx: bench
    Code("CD601", "error", "No GPU to benchmark",
         "{why}",
         "Run the benchmark on a machine with an NVIDIA GPU and driver (`cudnn-doctor check`)."),
    Code("CD602", "error", "cuDNN call failed",
         "{call} returned {status}: {meaning}",
         "{fix}"),
    Code("CD603", "error", "cuDNN gave a wrong answer",
         "{workload}: the GPU result differs from the CPU reference by {error} "
         "(tolerance {tolerance}).",
         "Update the driver and cuDNN; a wrong result from cuDNN is a bug to report to NVIDIA "
         "with `cudnn-doctor bench --json` output."),
    Code("CD604", "error", "CUDA runtime not usable for the benchmark",
         "{why}",
         "Install a CUDA runtime matching cuDNN's CUDA major (`pip install "
         "nvidia-cuda-runtime-cu{cuda_major}`) or a CUDA toolkit."),
    Code("CD605", "error", "Out of GPU memory",
         "{workload} needs {needed} of GPU memory; {free} is free.",
         "Use `--size small`, a `--workspace-limit`, or free the GPU."),
    Code("CD607", "info", "Workload not available in this cuDNN",
         "{workload} was not run: {why}",
         "Benchmark it with cuDNN 8.0 or later (`cudnn-doctor install --version 9`); the other workloads ran."),
    Code("CD606", "error", "The benchmark crashed or hung",
         "The benchmark process for GPU {device} {how}. cuDNN or the driver failed inside a call; "
         "any program that makes the same call will do the same.",
         "Run `cudnn-doctor check` and update the driver and cuDNN; run `cudnn-doctor bench -v` "
         "with `CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr` to see cuDNN's own log."),
    # Requirements given with --require (one code per subject)
    Code("CD120", "error", "Driver requirement not met",
         "--require {spec}: {found}.", "Install an NVIDIA driver that satisfies {spec}."),
    Code("CD121", "error", "GPU requirement not met",
         "--require {spec}: {found}.", "Run on a machine with an NVIDIA GPU and driver."),
    Code("CD220", "error", "CUDA requirement not met",
         "--require {spec}: {found}.", "Install a CUDA toolkit that satisfies {spec}."),
    Code("CD320", "error", "cuDNN requirement not met",
         "--require {spec}: {found}.",
         "Install a cuDNN that satisfies {spec}: `cudnn-doctor install --version X.Y.Z`."),
    Code("CD420", "error", "Framework requirement not met",
         "--require {spec}: {found}.", "Install a framework version that satisfies {spec}."),
)

CODES: dict[str, Code] = {code.code: code for code in _CODES}


def lookup(code: str) -> Code | None:
    """The registry entry for CODE (case-insensitive), or None."""
    return CODES.get(code.upper())


class _Fields(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def finding(code: str, subject: str | None = None, refs: tuple[str, ...] = (), **fields: Any) -> Finding:
    """The Finding for CODE, its registry text filled in from FIELDS: the one way any command makes one."""
    entry = CODES[code]
    if entry.retired:
        raise ValueError(f"{code} is retired")
    values = _Fields({key: "unknown" if value is None else value for key, value in fields.items()})
    formatter = string.Formatter()
    return Finding(
        code=code,
        severity=entry.severity,
        title=entry.title,
        detail=formatter.vformat(entry.explanation, (), values),
        fix=formatter.vformat(entry.fix, (), values),
        refs=refs,
        subject=subject,
    )
