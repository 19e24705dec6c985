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
    Code("CD108", "error", "The GPU is not passed into the container",
         "The program runs in a container that was started without the NVIDIA Container Toolkit's GPU "
         "hooks (or they failed), so the driver's device files and libraries are missing or blocked inside "
         "it: {detail}",
         "Install the NVIDIA Container Toolkit on the host (`nvidia-ctk runtime configure --runtime=docker`, "
         "then restart the daemon), start the container with `--gpus all` (Kubernetes: the NVIDIA device "
         "plugin), and check `nvidia-smi` inside it. 'Failed to initialize NVML: Unknown Error' after a "
         "while is the cgroup-driver problem: set `no-cgroups`/systemd cgroup options as the toolkit's "
         "troubleshooting guide says, or restart the container."),
    Code("CD109", "error", "Out of GPU memory",
         "The GPU ran out of memory ({detail}). Other processes on the GPU, a too large batch or "
         "workspace, or a framework that reserves memory up front are the usual causes; cuDNN handle "
         "creation and algorithm search fail the same way when memory is short.",
         "Free the GPU (`nvidia-smi` lists what holds memory), lower the batch size, let the framework "
         "grow memory on demand (TensorFlow: `tf.config.experimental.set_memory_growth`; JAX: "
         "`XLA_PYTHON_CLIENT_PREALLOCATE=false`), or use an algorithm mode without workspace."),
    Code("CD110", "error", "The CUDA driver failed to initialise",
         "The CUDA driver was found but could not start ({detail}). Usual causes: the kernel module and the "
         "user-space driver are of different versions (an upgrade without a reboot), the GPU device files "
         "are missing or not accessible (containers, permissions, a suspended laptop's nvidia_uvm), or the "
         "GPU fell off the bus.",
         "Run `nvidia-smi`; if it fails, reboot (or reload the nvidia and nvidia_uvm modules). In a "
         "container, start it with `--gpus all`. After a suspend: `sudo rmmod nvidia_uvm && sudo modprobe "
         "nvidia_uvm`."),
    # CD13x-CD14x: GPU health, read through NVML (what a GPU does not support is never a finding)
    Code("CD130", "error", "Uncorrectable ECC errors on the GPU",
         "GPU {gpu} has {volatile} uncorrectable ECC error(s) since the driver loaded ({aggregate} over its "
         "life). Results computed on it may be wrong and CUDA calls fail with 'uncorrectable ECC error "
         "encountered'.",
         "Drain the node, then reset the GPU (`sudo nvidia-smi -r -i {index}`) or reboot; if the lifetime "
         "count keeps growing, have the GPU replaced."),
    Code("CD131", "warning", "GPU memory repair waits for a reset",
         "GPU {gpu} has {what} waiting: the repair of its memory takes effect only after a GPU reset.",
         "Drain the node and reset the GPU (`sudo nvidia-smi -r -i {index}`) or reboot it."),
    Code("CD132", "error", "GPU row remapping failed",
         "GPU {gpu} could not remap a failing memory row: its memory has errors it cannot repair.",
         "Drain the node and have the GPU serviced (`nvidia-smi -q -d ROW_REMAPPER` for the details)."),
    Code("CD133", "warning", "GPU clocks slowed down",
         "GPU {gpu} is slowing its clocks now: {reasons}. Everything on it runs slower than it should.",
         "{fix}"),
    Code("CD134", "warning", "PCIe link narrower than it can be",
         "GPU {gpu} runs its PCIe link at x{width} while x{width_max} is possible (generation {generation} of "
         "{generation_max}). Copies between host and GPU are slower by the same factor.",
         "Reseat the GPU or its riser, check the slot (`nvidia-smi -q -d PCIE`), and the BIOS's lane settings."),
    Code("CD135", "info", "Persistence mode off",
         "GPU {gpu} has persistence mode off: the driver tears the GPU down when no program uses it, so "
         "every program's start waits for it to be set up again.",
         "Start the persistence daemon (`sudo systemctl enable --now nvidia-persistenced`) or "
         "`sudo nvidia-smi -pm 1`."),
    Code("CD136", "warning", "MIG mode change waits for a GPU reset",
         "GPU {gpu} has MIG mode {current} but {pending} pending: the change takes effect at the next reset.",
         "Reset the GPU (`sudo nvidia-smi -r -i {index}`) when nothing runs on it."),
    Code("CD137", "info", "MIG mode on",
         "GPU {gpu} is split into MIG instances; CUDA programs see an instance, not the whole GPU, and "
         "only one per process.",
         "Pick an instance with CUDA_VISIBLE_DEVICES=MIG-<uuid> (`nvidia-smi -L` lists them)."),
    Code("CD138", "error", "Compute mode prohibits CUDA",
         "GPU {gpu} is in compute mode 'prohibited': no CUDA program can create a context on it.",
         "`sudo nvidia-smi -i {index} -c DEFAULT`."),
    Code("CD139", "info", "Other processes use the GPU",
         "GPU {gpu} runs {count} other compute process(es) ({processes}){exclusive}.",
         "Nothing to do if they are expected; otherwise find them with `nvidia-smi` and stop them."),
    Code("CD140", "warning", "GPU near its slowdown temperature",
         "GPU {gpu} is at {temperature} °C; it slows down at {slowdown} °C.",
         "Check the cooling: fans, airflow, the data centre's inlet temperature (`nvidia-smi -q -d TEMPERATURE`)."),
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
    Code("CD206", "error", "CUDA compiler older than the GPU",
         "The CUDA compiler ({detail}) does not know this GPU's architecture: the CUDA toolkit or NVRTC that "
         "compiles the kernels is older than the GPU.",
         "Use a CUDA toolkit that supports the GPU (`nvcc --list-gpu-arch` lists what one knows): install a newer "
         "toolkit and point CUDA_HOME and PATH at it, or build only for architectures it knows "
         "(TORCH_CUDA_ARCH_LIST, CMAKE_CUDA_ARCHITECTURES, -gencode). Where the compiler is a framework's own "
         "(NVRTC in PyTorch's wheels), install that framework's build for a newer CUDA."),
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
    Code("CD315", "error", "cuDNN could not initialise",
         "cuDNN was loaded but could not create its handle or initialise ({detail}). Almost always the GPU "
         "had too little free memory at that moment, or the cuDNN, CUDA runtime and driver loaded "
         "together do not belong together (a cuDNN of another CUDA major, a driver older than the runtime).",
         "Free GPU memory (other processes, framework preallocation: TensorFlow memory growth, "
         "`XLA_PYTHON_CLIENT_PREALLOCATE=false` for JAX), then check that the cuDNN the framework loads is "
         "the one it was built for: `cudnn-doctor check`."),
    Code("CD316", "error", "cuDNN refused or failed an operation",
         "A cuDNN call failed at run time ({detail}): the operation (its sizes, layout, data type or "
         "engine) is not supported by this cuDNN on this GPU, or a kernel failed while it ran.",
         "Update the framework and the cuDNN it uses to a current, matching pair (`cudnn-doctor check`); "
         "as a workaround, disable the failing cuDNN path (PyTorch: `torch.backends.cudnn.benchmark = "
         "False` or `torch.backends.cudnn.enabled = False` for that op; TensorFlow/JAX: "
         "`TF_CUDNN_USE_AUTOTUNE=0`) and re-run with `CUDA_LAUNCH_BLOCKING=1` to see the failing call."),
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
    Code("CD409", "error", "A framework's own GPU library fails to load",
         "{library}, the framework's own GPU layer, could not be loaded: {error}. When the message names "
         "the library it needed in turn, that one is the cause.",
         "Reinstall the framework's GPU build with its CUDA dependencies (`pip install --force-reinstall` "
         "of the same version, or the framework's 'and-cuda'/'-gpu'/'-cu12' variant), and make the CUDA "
         "and cuDNN majors it names visible to the loader."),
    Code("CD410", "error", "Built against another version",
         "{what} was built against {built}, but {found} is what it found here. Compiled code and the "
         "libraries it runs with must agree on the version (the CUDA major, the framework's exact release, "
         "the TensorRT version of an engine).",
         "Install the build that matches what is here (a wheel for this framework and CUDA version), or "
         "rebuild it against the installed version; set CUDA_HOME to the toolkit the framework was "
         "built with when compiling extensions."),
    # CD430-CD439: Deeplearning4j projects (Maven / Gradle)
    Code("CD430", "warning", "Project file not read",
         "{path}: {why}. What it declares (modules, properties, dependencies) was not used.",
         "{fix}"),
    Code("CD431", "warning", "Maven property cannot be expanded",
         "{path}: {why}; Maven itself fails on it, and the doctor left it unexpanded.",
         "Give the property a plain value, or one that refers only to other properties that do not refer back to it."),
    Code("CD432", "warning", "CUDA backend without cuDNN",
         "{where}: {backend} (DL4J {version}) runs on CUDA {cuda}, but {missing}, so DL4J uses its own CUDA "
         "kernels for convolutions and LSTMs instead of cuDNN.",
         "Add the dependency through which DL4J {version} uses cuDNN: {fix}."),
    Code("CD433", "warning", "GravesLSTM layers do not use cuDNN",
         "{where} builds GravesLSTM layers, which have no cuDNN implementation; on the CUDA backend {backend} "
         "they run without cuDNN.",
         "Use LSTM (org.deeplearning4j.nn.conf.layers.LSTM) instead of GravesLSTM: it has cuDNN support."),
    Code("CD434", "info", "Several GPUs, multi-GPU not enabled",
         "This machine has {count} GPUs and {where} uses the CUDA backend {backend}, but its sources never call "
         "allowMultiGPU(true); if DL4J then uses only one GPU, that is why.",
         "Add `CudaEnvironment.getInstance().getConfiguration().allowMultiGPU(true);` as the first line of main(), "
         "and train with ParallelWrapper (workers at least the number of GPUs)."),
    Code("CD435", "warning", "Several ND4J backends in one module",
         "{where} has {backends} on its classpath; ND4J loads one: {winner}.",
         "Keep one backend in the module (the nd4j-cuda-X.Y that matches your CUDA), or choose at run time with "
         "the BACKEND_PRIORITY_GPU / BACKEND_PRIORITY_CPU environment variables (the higher one wins)."),
    Code("CD436", "info", "Module built only with a Maven profile",
         "{where} is built only with the profile {profile} ({activation}), which is {state} here; its backend "
         "{backend} is used only then.",
         "{fix}"),
    Code("CD437", "warning", "DL4J without an ND4J backend",
         "{where} uses {artifacts} {version} but no ND4J backend (nd4j-native or nd4j-cuda-X.Y), so it fails at "
         "start with 'No ND4J backend is available'.",
         "Add org.nd4j:{suggestion}:{version} to its dependencies."),
    Code("CD438", "warning", "Maven parent is not the pom it points at",
         "{path}: {why}.",
         "Make <parent> name the pom it sits under (groupId, artifactId and version), or install that parent "
         "(`mvn install -N` in its folder)."),
    Code("CD440", "warning", "Framework configuration file not read",
         "{path} could not be read ({why}); the settings in it, such as Theano's dnn.library_path, "
         "are not checked, and the framework itself will fail on it or ignore it too.",
         "Fix or remove {path} (it must be a readable text file in INI format; `%` must be written "
         "`%%`), or set the options through THEANO_FLAGS instead."),
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
    Code("CD518", "error", "Another cuDNN major is in the prefix",
         "{prefix} holds cuDNN {current} ({files}). One prefix has one set of cuDNN headers: cuDNN {version} "
         "beside it would leave cuDNN {current_major}'s libraries with cuDNN {major}'s headers, which `check` "
         "reports as an error (CD303), and a program built there gets headers of one cuDNN and a library of "
         "the other. Nothing was changed.",
         "Choose one: add `--replace` to replace cuDNN {current_major} whole (every file of it is backed up, and "
         "`cudnn-doctor uninstall --prefix {prefix}` brings it back), or install cuDNN {major} into a prefix of "
         "its own (`--prefix {other_prefix}`, then put its {library_folder} on the loader's path)."),
    Code("CD519", "error", "cuDNN built for another CUDA major than the prefix's toolkit",
         "{archive} is cuDNN {version} built for CUDA {cudnn_cuda}, but the CUDA toolkit in {prefix} is CUDA "
         "{toolkit_version} (its {where}). A cuDNN build needs a CUDA runtime of its own major: programs "
         "built with this toolkit would load it beside the wrong libcudart, and `check` reports it (CD306). "
         "Nothing was changed.",
         "{fix}"),
    Code("CD520", "error", "No package build for this CUDA, Python or platform",
         "The package manager found no build that satisfies the request ({detail}): the package's "
         "CUDA variant is not published for this Python version or platform, or it lives on another index "
         "(PyTorch's download.pytorch.org/whl/cuXXX), or conda's virtual package __cuda says this machine's "
         "driver supports no such CUDA.",
         "Install from the index that hosts the CUDA build (`pip install torch --index-url "
         "https://download.pytorch.org/whl/cu128`), pick a version published for your Python, or for conda "
         "check `conda info` (the __cuda line) and set `CONDA_OVERRIDE_CUDA` only on a machine without a GPU."),
    Code("CD521", "error", "The package manager found the GPU stack's packages in conflict",
         "The package manager could not install a consistent set of the GPU stack's packages ({detail}). A CUDA "
         "build pins exact versions of NVIDIA's library wheels (nvidia-*-cuNN, cuda-toolkit), and companions such as "
         "torchvision and torchaudio are built for one torch release and CUDA variant; two requirements here pin "
         "different ones.",
         "Let one package choose the NVIDIA wheels: drop your own nvidia-*/cuda-toolkit pins (or pin the versions the "
         "framework requires), install the framework and its companions together from one index with one CUDA "
         "suffix (`pip install torch==X torchvision==Y --index-url https://download.pytorch.org/whl/cu128`), and keep "
         "every package on one CUDA major (all -cu12 or all -cu13). `pip check` lists what each installed package "
         "requires."),
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
    Code("CD608", "warning", "GPU slowed down during the benchmark",
         "GPU {device} slowed its clocks while the benchmark ran ({reasons}; SM clock down to {mhz} MHz of "
         "{max_mhz}): its figures are lower than the GPU can give.",
         "Check cooling and power (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`), then run the bench again."),
    Code("CD609", "warning", "GPU slower than a healthy one of its model",
         "{workload} on GPU {device} ({gpu}) took {ms} ms, {ratio}x the speed of a healthy {gpu} "
         "({reference_ms} ms, measured {measured}).",
         "Look for throttling, other processes or a narrow PCIe link (`cudnn-doctor check`), and compare "
         "with another node of the fleet."),
    Code("CD610", "warning", "GPU shared with other processes during the benchmark",
         "GPU {device} ({gpu}) was not the benchmark's alone: {others}. Its figures are what it gave while "
         "shared (the other work takes time slices that a median hides), so they were not compared with a "
         "healthy {gpu}.",
         "Run the bench when the GPU is idle (`nvidia-smi` lists what runs on it) or on a GPU of its own "
         "(`--device N`); a GPU that must stay shared is compared only with runs of its own under the same load."),
    # Requirements given with --require (one code per subject)
    Code("CD120", "error", "Driver requirement not met",
         "--require {spec}: {found}.", "Install an NVIDIA driver that satisfies {spec}."),
    Code("CD121", "error", "GPU requirement not met",
         "--require {spec}: {found}.", "Run on a machine with an NVIDIA GPU and driver."),
    Code("CD122", "error", "GPU health requirement not met",
         "--require {spec}: {found}.", "Fix the GPU health findings above, or drain the node."),
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
