"""The registry of finding codes: one permanent entry per code.

Renderers, `explain CODE` and the rules all read this table, so the text a user
sees for a code is the same everywhere. A code, once published, keeps its
meaning; a retired code is marked retired, never reused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.records import record

if TYPE_CHECKING:  # the model (some forty dataclasses) loads once a finding is made: a check starts NVML's child first
    from cudnn_doctor.model import Finding

ISSUES_URL = "https://github.com/cudnn-doctor/cudnn-doctor/issues"


@record(frozen=True)
class Code:
    """One entry of the finding registry."""

    code: str
    severity: str  # "error" | "warning" | "info"
    title: str
    explanation: str
    retired: bool = False  # a retired code is never reused and never produced again


_CODES = (
    # CD0xx: the command line and what it names: one code per class of a user's error (DoctorError's code); the
    # message and fix of each error are its own
    Code("CD001", "error", "A value the option does not take",
         "An option or argument was given a value the command does not take (not a version, not a known framework, "
         "not one of its choices, too long); the error names the option, the value and what it takes."),
    Code("CD002", "error", "Options that do not go together",
         "Two options ask for opposite things (-q and -v, --json and --format text), or one needs another that was "
         "not given (--os needs --prefix), or a change needs a yes that nobody can give (no terminal, no --yes)."),
    Code("CD003", "error", "Nothing to work on",
         "The command was given nothing to act on: no image, no message, no reports, no framework or table, no "
         "archive or version to install."),
    Code("CD004", "error", "No such file or folder",
         "A path given on the command line (or a name it looked up) does not exist."),
    Code("CD005", "error", "A file or folder that cannot be read as asked",
         "A path given exists but cannot be read as the command needs it: not readable, a folder where a file is "
         "needed (or the other way round), not the kind of file asked for, or cut short."),
    Code("CD006", "error", "A file or folder that cannot be written",
         "The command could not write where it was told to (--output, --junit-xml, --keep, GITHUB_STEP_SUMMARY, a "
         "temporary folder): a folder that does not exist, no permission, a full disk, or something there that is "
         "not replaced."),
    Code("CD007", "error", "A setting that is not valid",
         "A CUDNN_DOCTOR_* variable or the [tool.cudnn-doctor] table of pyproject.toml holds a value the doctor "
         "does not take, or pyproject.toml cannot be read."),
    Code("CD008", "error", "Not possible on this machine",
         "What was asked cannot be done here: nothing to install for this OS and architecture, no toolkit to "
         "install into, a GPU index this machine does not have, a library or program the command needs is missing."),
    Code("CD010", "error", "A limit of the process stopped it",
         "A limit set on the doctor's own process (ulimit -n, -v, -s, -t, -f, -u) left it too little to finish: too "
         "few open files for its own files and the children that ask the libraries, too little address space or "
         "stack, its CPU time spent, a file past the size limit. The error names the limit and the line that lifts "
         "it where the hard limit allows."),
    Code("CD011", "error", "A word the command line does not know",
         "The command line holds a word no part of it takes: a command that does not exist, an option the command "
         "does not have (or one given before the command it belongs to), an argument too many. The error says the "
         "closest word it knows."),
    Code("CD012", "error", "The doctor's own data is damaged",
         "A file of cudnn-doctor's own installed data (its compat/ tables or their schemas) cannot be read, is not "
         "valid TOML or JSON, does not hold its schema, or is not what the installer wrote: the install is damaged, "
         "not the machine. The error names the file; reinstalling the package repairs it."),
    Code("CD009", "error", "A program the doctor asked did not answer",
         "A program the doctor runs to answer (an interpreter given with --python, srun, a shell asked for its "
         "profile) could not start, failed, timed out, or answered something no real one would."),
    # CD1xx: GPU and driver
    Code("CD101", "error", "No NVIDIA driver found",
         "Neither NVML (libnvidia-ml.so.1; nvml.dll on Windows) nor the CUDA driver library (libcuda.so.1; "
         "nvcuda.dll) could be loaded, so no program on this machine can use an NVIDIA GPU."),
    Code("CD102", "error", "The driver sees no GPU",
         "The NVIDIA driver loaded but reported no GPU devices."),
    Code("CD103", "error", "Driver too old for the CUDA toolkit",
         "The driver supports CUDA {driver_cuda}, but the toolkit at {toolkit_path} is CUDA "
         "{toolkit_version}. Programs built with it fail with 'CUDA driver version is "
         "insufficient for CUDA runtime version'."),
    Code("CD104", "error", "NVML failed to initialise",
         "NVML was found but failed: {error}. A 'Driver/library version mismatch' means the "
         "kernel module and the user-space driver libraries are of different versions, usually "
         "after a driver upgrade without a reboot."),
    Code("CD105", "info", "Driver found without NVML",
         "NVML could not be used ({error}), so the driver's CUDA version was read from "
         "libcuda.so.1 (cuDriverGetVersion); GPU details are not available."),
    Code("CD106", "warning", "Toolkit newer than the driver, within the same major",
         "The driver supports CUDA {driver_cuda} and the toolkit at {toolkit_path} is CUDA "
         "{toolkit_version}. CUDA minor-version compatibility lets most programs run, but "
         "PTX JIT compilation of newer PTX and some new APIs fail."),
    Code("CD107", "info", "CUDA forward-compatibility package present",
         "{path} holds a CUDA forward-compatibility libcuda ({version}); it lets a newer CUDA "
         "run on an older data-centre driver, and only when it is on the loader's path."),
    Code("CD108", "error", "The GPU is not passed into the container",
         "The program runs in a container that was started without the NVIDIA Container Toolkit's GPU "
         "hooks (or they failed), so the driver's device files and libraries are missing or blocked inside "
         "it: {detail}"),
    Code("CD109", "error", "Out of GPU memory",
         "The GPU ran out of memory ({detail}). Other processes on the GPU, a too large batch or "
         "workspace, or a framework that reserves memory up front are the usual causes; cuDNN handle "
         "creation and algorithm search fail the same way when memory is short."),
    Code("CD110", "error", "The CUDA driver failed to initialise",
         "The CUDA driver was found but could not start ({detail}). Usual causes: the kernel module and the "
         "user-space driver are of different versions (an upgrade without a reboot), the GPU device files "
         "are missing or not accessible (containers, permissions, a suspended laptop's nvidia_uvm), or the "
         "GPU fell off the bus."),
    # CD111-CD119: what a program started in this environment gets (probes/process_env.py)
    Code("CD111", "error", "Programs load the CUDA driver's link stub",
         "A program started here loads {libcuda} as libcuda.so.1 (through {via}): the CUDA toolkit's stub, "
         "which exists only to link against. cuInit answers CUDA_ERROR_STUB_LIBRARY and every framework "
         "reports no GPU."),
    Code("CD112", "error", "The CUDA driver programs load is not the kernel module's release",
         "A program started here loads the user-space CUDA driver {libcuda} (release {libcuda_version}, through "
         "{via}) while the kernel module is {kernel_driver}: cuInit answers {status}. {cause}."),
    Code("CD113", "error", "Programs here see no GPU",
         "cuInit answers {status} in this environment although the driver lists {gpus} GPU(s): {cause}. "
         "Frameworks report no GPU (torch.cuda.is_available() is False; JAX runs on the CPU)."),
    Code("CD114", "warning", "CUDA_VISIBLE_DEVICES is only partly used",
         "CUDA_VISIBLE_DEVICES={value}: CUDA reads its entries in order and stops at the first it cannot use, so "
         "{ignored} {ignored_verb} ignored; programs see {visible}."),
    Code("CD115", "warning", "Other processes hold much of a GPU's memory",
         "GPU {gpu} has {free_mib} MiB free of {total_mib} MiB: {holders}. A program started now gets at most "
         "what is free{jax_note}."),
    Code("CD116", "error", "A process limit stops CUDA or a framework",
         "{limit}: {effect}."),
    Code("CD117", "info", "CUDA numbers the GPUs otherwise than nvidia-smi",
         "In a program started here {pairs}: CUDA orders GPUs of different kinds fastest first unless "
         "CUDA_DEVICE_ORDER=PCI_BUS_ID, while nvidia-smi (and NVML, and most schedulers) number them by PCI bus."),
    Code("CD118", "error", "Programs load an NVML that is not the driver's",
         "A program started here loads {library} as libnvidia-ml.so.1 (through {via}), and nvmlInit answers "
         "'{error}' there: {consequence}."),
    Code("CD119", "error", "NCCL could not connect the GPUs",
         "{detail}"),
    # CD13x-CD14x: GPU health, read through NVML (what a GPU does not support is never a finding)
    Code("CD130", "error", "Uncorrectable ECC errors on the GPU",
         "GPU {gpu} has {volatile} uncorrectable ECC error(s) since the driver loaded ({aggregate} over its "
         "life). Results computed on it may be wrong and CUDA calls fail with 'uncorrectable ECC error "
         "encountered'."),
    Code("CD131", "warning", "GPU memory repair waits for a reset",
         "GPU {gpu} has {what} waiting: the repair of its memory takes effect only after a GPU reset."),
    Code("CD132", "error", "GPU row remapping failed",
         "GPU {gpu} could not remap a failing memory row: its memory has errors it cannot repair."),
    Code("CD133", "warning", "GPU clocks slowed down",
         "GPU {gpu} is slowing its clocks now: {reasons}. Everything on it runs slower than it should."),
    Code("CD134", "warning", "PCIe link narrower than it can be",
         "GPU {gpu} runs its PCIe link at x{width} while x{width_max} is possible (generation {generation} of "
         "{generation_max}). Copies between host and GPU are slower by the same factor."),
    Code("CD135", "info", "Persistence mode off",
         "GPU {gpu} has persistence mode off: the driver tears the GPU down when no program uses it, so "
         "every program's start waits for it to be set up again."),
    Code("CD136", "warning", "MIG mode change waits for a GPU reset",
         "GPU {gpu} has MIG mode {current} but {pending} pending: the change takes effect at the next reset."),
    Code("CD137", "info", "MIG mode on",
         "GPU {gpu} is split into MIG instances; CUDA programs see an instance, not the whole GPU, and "
         "only one per process."),
    Code("CD138", "error", "Compute mode prohibits CUDA",
         "GPU {gpu} is in compute mode 'prohibited': no CUDA program can create a context on it."),
    Code("CD139", "info", "Other processes use the GPU",
         "GPU {gpu} runs {count} other compute process(es) ({processes}){exclusive}."),
    Code("CD140", "warning", "GPU near its slowdown temperature",
         "GPU {gpu} is at {temperature} °C; it slows down at {slowdown} °C.",
),
    Code("CD141", "error", "GPU fell off the bus or was lost",
         "The GPU stopped answering the driver ({detail}). The kernel driver can no longer reach it over PCIe: a "
         "power, thermal, riser/slot or hardware fault, rarely the driver; every program on it fails until it "
         "is back."),
    Code("CD142", "error", "The driver reported a GPU error (Xid)",
         "The NVIDIA kernel driver logged an Xid event ({detail})."),
    Code("CD143", "error", "PCIe errors on the GPU's link",
         "The PCIe layer reported errors on the link to the GPU ({detail}). Corrected errors cost speed; "
         "uncorrected (fatal) ones drop the GPU off the bus."),
    Code("CD144", "error", "The display watchdog reset the GPU (TDR)",
         "A kernel ran longer than the display driver's watchdog allows and the GPU was reset ({detail}); every "
         "CUDA context on it is lost."),
    # CD170-CD182: several GPUs, their links and NCCL (issue 42): probes/topology.py, probes/nccl.py, rules/multi_gpu.py
    Code("CD170", "error", "The NVSwitch fabric is not ready (fabric manager)",
         "{detail}. On an NVSwitch system (HGX, DGX) CUDA refuses to start (cuInit answers 802, "
         "CUDA_ERROR_SYSTEM_NOT_READY) until the NVIDIA Fabric Manager has configured the NVSwitches; the fabric "
         "manager here is {manager}."),
    Code("CD171", "warning", "NVLinks down",
         "GPU {gpu} has {active} of its {expected} NVLinks active ({down} down): traffic between GPUs over NVLink "
         "runs at {share} of its speed, or goes over PCIe."),
    Code("CD172", "warning", "PCIe link below its maximum while the GPU works",
         "GPU {gpu} is {utilization} % busy and its PCIe link runs at generation {generation} x{width} while "
         "generation {generation_max} x{width_max} is possible: copies between host and GPU are slower. (An idle "
         "GPU lowers its link to save power; that is no fault, and was not counted.)"),
    Code("CD173", "warning", "No peer-to-peer access between two GPUs",
         "{status} for peer-to-peer access between GPU {a} and GPU {b} (path {path}): NCCL and frameworks copy "
         "between them through host memory, several times slower."),
    Code("CD174", "warning", "IOMMU or ACS sends peer traffic through the CPU",
         "{detail}: PCIe peer-to-peer traffic between GPUs is redirected to the root complex (or blocked), which "
         "makes NCCL's all-reduce crawl or hang. Read from /sys; `cudnn-doctor bench --p2p` measures it."),
    Code("CD175", "warning", "NCCL_SOCKET_IFNAME leaves no network interface",
         "NCCL_SOCKET_IFNAME={value} matches none of this node's interfaces ({interfaces}). Set by the user, NCCL "
         "uses only the interfaces it names and fails at its start ('Bootstrap : no socket interface found')."),
    Code("CD176", "warning", "An NCCL setting NCCL cannot use",
         "{variable}={value}: {why}."),
    Code("CD177", "error", "/dev/shm refuses NCCL's shared memory",
         "{path} ({size_mib} MiB, {free_mib} MiB free) refused a segment of {segment_mib} MiB, the size NCCL's "
         "shared-memory transport makes for each peer: {refused}. NCCL fails ('Error while creating shared memory "
         "segment') and DataLoader workers fail to pass tensors."),
    Code("CD178", "warning", "/dev/shm is small",
         "{path} holds {size_mib} MiB (Docker's default is 64 MB): NCCL makes a segment of about 9 MiB per peer "
         "and channel, and DataLoader workers pass every batch through it; jobs over several GPUs or with workers "
         "run out of it."),
    Code("CD179", "error", "The NCCL all-reduce failed",
         "An all-reduce over {world} GPU(s) through torch.distributed with NCCL (one process per GPU, as torchrun) "
         "{outcome}. NCCL's last words: {words}.{cause}"),
    Code("CD180", "warning", "The framework loads another NCCL than it was built with",
         "{framework} loads {library} (NCCL {version}, through {via}) but was built with NCCL {built_with}: "
         "{effect}."),
    Code("CD181", "info", "An NCCL setting changes how GPUs talk",
         "{variable}={value}: {effect}."),
    Code("CD182", "warning", "The all-reduce is far slower than the links allow",
         "The all-reduce over {world} GPUs reached a bus bandwidth of {busbw} GB/s where the slowest link of the "
         "ring carries {predicted} GB/s ({ratio} of it)."),
    # CD150-CD159: the platform (WSL 2, containers and their images, Jetson): probes/platform.py, rules/platform.py
    Code("CD150", "error", "The image needs a newer driver than the node's",
         "The image needs CUDA {image_cuda} ({why}), but the node's driver {driver} supports CUDA "
         "{driver_cuda}. The NVIDIA runtime refuses to start such an image unless NVIDIA_DISABLE_REQUIRE is set, "
         "and CUDA programs in it fail with 'CUDA driver version is insufficient for CUDA runtime version'."),
    Code("CD151", "warning", "The image's CUDA is newer than the driver, within its major",
         "The image is CUDA {image_cuda} ({why}) and the node's driver supports CUDA "
         "{driver_cuda}. CUDA minor-version compatibility lets most programs run, but PTX JIT compilation of newer "
         "PTX and the newest APIs fail."),
    Code("CD152", "error", "A Linux NVIDIA driver shadows WSL's",
         "On WSL 2 the driver is the Windows one, mapped at {wsl_lib}; but the loader picks {library} for "
         "{soname}{via}: a Linux driver installed inside WSL, which cannot reach the GPU here."),
    Code("CD153", "info", "WSL's libcuda is a copy, not a link",
         "{copies} in {wsl_lib} are copies where ldconfig expects symbolic links, so every ldconfig run prints "
         "'ldconfig: {first} is not a symbolic link'. Harmless: the Windows driver ships them so."),
    Code("CD154", "error", "A server (SBSA) cuDNN on a Jetson",
         "{library} is NVIDIA's cuDNN for servers ({source}); on JetPack {jetpack} (L4T R{l4t}) the Jetson's "
         "integrated GPU runs only JetPack's own cuDNN {jetpack_cudnn}, and this one fails to load or finds no "
         "GPU."),
    Code("CD155", "error", "The image is built for another CPU architecture",
         "The image is {image_os}/{image_arch}; this node is {node_arch}. Its programs and libraries cannot run here "
         "(without an emulator, and never with the GPU)."),
    Code("CD156", "warning", "The image carries its own driver library",
         "{libraries} in the image: the NVIDIA runtime mounts the node's driver libraries into the container, and "
         "a copy baked into the image that the loader finds first is of another driver version ('driver/library "
         "version mismatch', 'CUDA driver version is insufficient')."),
    Code("CD157", "warning", "The CDI spec names another driver",
         "{spec} (the NVIDIA Container Toolkit's CDI specification) was made for driver {spec_driver}, and the driver "
         "is {driver} now: containers started through CDI (podman --device nvidia.com/gpu=..., containerd, "
         "Kubernetes with CDI) fail to mount libraries that no longer exist."),
    Code("CD158", "info", "Containers cannot get the GPU here",
         "Docker is installed and this machine has an NVIDIA driver, but not the NVIDIA Container Toolkit (no "
         "nvidia-ctk, nvidia-container-runtime-hook or nvidia-container-cli): `docker run --gpus all` fails with "
         "'could not select device driver \"\" with capabilities: [[gpu]]'."),
    Code("CD159", "warning", "No NVIDIA GPU in this machine",
         "No NVIDIA GPU is in this machine: the PCI bus lists no NVIDIA display controller (vendor 0x10de, class "
         "0x03), and there is no WSL 2 /dev/dxg nor a Jetson's integrated GPU. No program here can use CUDA or "
         "cuDNN; frameworks run on the CPU, and nothing is installed for the GPU unless asked (`--require cudnn` on "
         "a machine that builds against cuDNN)."),
    # CD2xx: CUDA toolkit and runtime
    Code("CD201", "warning", "No CUDA toolkit found",
         "No CUDA toolkit was found (CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda*, pip "
         "wheels, conda). Frameworks installed from pip bring their own CUDA runtime, but "
         "building CUDA code or installing cuDNN into a toolkit needs one."),
    Code("CD202", "warning", "CUDA toolkit version unreadable",
         "The toolkit at {path} has no readable version.json, version.txt, nvcc or libcudart."),
    Code("CD203", "error", "CUDA runtime library fails to load",
         "{library} failed to load: {error}"),
    Code("CD204", "warning", "CUDA_HOME or CUDA_PATH points nowhere",
         "{variable} is set to {path}, which is not a CUDA toolkit folder."),
    Code("CD205", "info", "Several CUDA toolkits installed",
         "Found CUDA {versions}. Build tools pick the one in CUDA_HOME/CUDA_PATH or the nvcc on "
         "PATH ({picked})."),
    Code("CD206", "error", "CUDA compiler older than the GPU",
         "The CUDA compiler ({detail}) does not know this GPU's architecture: the CUDA toolkit or NVRTC that "
         "compiles the kernels is older than the GPU."),
    Code("CD207", "error", "CUDA compiler older than the PTX it is given",
         "{detail}"),
    Code("CD208", "error", "A CUDA build tool or integration is missing",
         "{detail}"),
    Code("CD209", "error", "Host compiler not supported by this CUDA",
         "{detail}"),
    Code("CD210", "error", "CUDA toolkit no longer targets this GPU",
         "{detail}"),
    Code("CD211", "error", "cuBLAS refused an operation on this GPU",
         "{detail}"),
    Code("CD212", "error", "CUDA refused a call a library made",
         "{detail}: a library (NCCL, a framework's allocator) called CUDA and CUDA refused the operation. The CUDA "
         "error it names says why: an operation this driver, GPU or virtual machine does not offer (stream-ordered "
         "memory pools, cuMem virtual memory, peer access), or a fault the CUDA error under it names."),
    Code("CD213", "warning", "A helper program misbehaved when asked",
         "`{command}` {trouble}. cudnn-doctor asks it as a build does (its output read to the end, within "
         "CUDNN_DOCTOR_HELPER_TIMEOUT seconds) and stops whatever it leaves running; an answer that did not end is "
         "not taken."),
    # CD3xx: cuDNN installs
    Code("CD301", "error", "No cuDNN found",
         "No copy of cuDNN (libcudnn.so.N / cudnn64_N.dll) was found in the loader's search path, "
         "the CUDA toolkits, pip wheels, conda environments or the --search-path folders."),
    Code("CD302", "warning", "Several cuDNN versions visible to the loader",
         "The dynamic loader can reach cuDNN {versions}; which one a program gets depends on "
         "LD_LIBRARY_PATH order and soname, and a mix of versions causes 'version mismatch' "
         "errors."),
    Code("CD303", "error", "cuDNN headers and library disagree",
         "The headers in {header_path} say cuDNN {header_version}, but the library {library} "
         "reports {version}. Code compiled against these headers checks the version at run time "
         "and fails, or misbehaves."),
    Code("CD304", "error", "cuDNN sub-library missing",
         "{library} is cuDNN {version}, but its sub-libraries {missing} are not beside it. "
         "cuDNN loads them on first use, so programs fail only when they reach a convolution or "
         "RNN ('Unable to load any of {{libcudnn_cnn.so.9...}}'; on Windows 'Could not load library "
         "cudnn_cnn64_9.dll')."),
    Code("CD305", "error", "cuDNN sub-library of another version",
         "{library} is cuDNN {version}, but {mismatched} beside it are of another version "
         "(a partial upgrade). cuDNN refuses sub-libraries of another version at first use."),
    Code("CD306", "warning", "cuDNN built for another CUDA major",
         "{library} (cuDNN {version}) was built for CUDA {cudnn_cuda}, but the CUDA toolkit at "
         "{toolkit_path} is {toolkit_version}. A cuDNN build needs a CUDA runtime of its own "
         "major."),
    Code("CD307", "error", "cuDNN library fails to load",
         "{library} could not be loaded: {error}"),
    Code("CD308", "error", "cuDNN file is broken or for another platform",
         "{library} is not a loadable library for this machine: {error}"),
    Code("CD309", "error", "Loading cuDNN crashed, hung or broke the process",
         "Loading {library} in a child process {how}. Any program that loads it will do the same."),
    Code("CD310", "info", "cuDNN not on the dynamic loader's path",
         "cuDNN {version} at {path} is not found by an ordinary program's dynamic loader "
         "(LD_LIBRARY_PATH, ldconfig cache, system folders; on Windows System32 and PATH). Frameworks that know "
         "where it is "
         "(for example PyTorch with its pip wheel) still load it."),
    Code("CD311", "error", "GPU not supported by this cuDNN",
         "GPU {gpu} has compute capability {cc}; cuDNN {version} supports {supported}."),
    Code("CD312", "error", "cuDNN needs a newer driver",
         "{library} (cuDNN {version}) was built for CUDA {cudnn_cuda}, but the driver supports "
         "only CUDA {driver_cuda}."),
    Code("CD313", "warning", "Search folder unusable",
         "{path}: {error}"),
    Code("CD314", "warning", "cuDNN version unreadable",
         "{library} loaded, but cudnnGetVersion {error}."),
    Code("CD315", "error", "cuDNN could not initialise",
         "cuDNN was loaded but could not create its handle or initialise ({detail}). Almost always the GPU "
         "had too little free memory at that moment, or the cuDNN, CUDA runtime and driver loaded "
         "together do not belong together (a cuDNN of another CUDA major, a driver older than the runtime)."),
    Code("CD316", "error", "cuDNN refused or failed an operation",
         "A cuDNN call failed at run time ({detail}): the operation (its sizes, layout, data type or "
         "engine) is not supported by this cuDNN on this GPU, or a kernel failed while it ran."),
    Code("CD317", "error", "A preloaded cuDNN is not the one a framework needs",
         "LD_PRELOAD loads {library} (cuDNN {version}) into every program, so {framework} gets it in place of its "
         "own copy; {framework} needs cuDNN {expected}."),
    Code("CD318", "warning", "A cuDNN copy no program loads is incomplete",
         "{library} (cuDNN {version}): {problem}. No framework and no program started here loads this copy (the "
         "loader skips it or finds another first), so nothing fails because of it now."),
    Code("CD319", "warning", "A rarely used cuDNN sub-library is missing, broken or of another release",
         "{framework} loads {library} (cuDNN {version}); its {sublibrary} {problem}. {why}."),
    Code("CD321", "error", "The cuDNN loaded is another release than the one the program was built with",
         "The program was built against cuDNN {compiled_version} and the cuDNN it loaded is {runtime_version}: another "
         "copy of cuDNN (a system or toolkit folder on the library path, an older wheel) is found before the one it "
         "needs. The cause is the cuDNN on the path, not the program's build."),
    Code("CD330", "error", "A DLL that cuDNN imports is missing",
         "The DLLs of cuDNN {version} at {path} import {missing}, which is in none of the folders Windows "
         "searches for it (their own folder, System32, the Windows folder, PATH). Loading them fails with error 126 "
         "('The specified module could not be found', 'Could not locate zlibwapi.dll')."),
    # CD4xx: framework compatibility
    Code("CD401", "error", "Framework needs a cuDNN it will not find",
         "{framework} {framework_version} was built with cuDNN {expected}; {found}."),
    Code("CD402", "info", "Framework loads another cuDNN than the system's",
         "{framework} {framework_version} loads cuDNN {used_version} from {used_path}, not the "
         "cuDNN {system_version} that the dynamic loader finds at {system_path}."),
    Code("CD403", "error", "Framework built for a CUDA newer than the driver",
         "{framework} {framework_version} is built for CUDA {cuda}, but the driver supports CUDA "
         "{driver_cuda}."),
    Code("CD404", "error", "GPU not supported by the framework build",
         "{framework} {framework_version} (CUDA {cuda}) supports compute capabilities "
         "{supported}; GPU {gpu} is {cc}."),
    Code("CD405", "error", "DL4J backend has no matching CUDA toolkit",
         "{artifact} (ND4J {framework_version}) needs CUDA {cuda}{cudnn_part}; {found}."),
    Code("CD406", "warning", "Framework installed without GPU support",
         "{framework} {framework_version} is a CPU-only build; it never uses CUDA or cuDNN."),
    Code("CD407", "info", "Compatibility unknown",
         "{framework} {framework_version}: {why}"),
    Code("CD408", "error", "Framework and cuDNN incompatible",
         "{framework} {framework_version} accepts cuDNN {expected}; the cuDNN it will load is "
         "{found}."),
    Code("CD409", "error", "A framework's own GPU library fails to load",
         "{library}, the framework's own GPU layer, could not be loaded: {error}. When the message names "
         "the library it needed in turn, that one is the cause."),
    Code("CD410", "error", "Built against another version",
         "{what} was built against {built}, but {found} is what it found here. Compiled code and the "
         "libraries it runs with must agree on the version (the CUDA major, the framework's exact release, "
         "the TensorRT version of an engine)."),
    Code("CD411", "error", "A framework setting has a value the framework refuses",
         "{variable}={value}: {why}. {framework} {consequence}."),
    Code("CD412", "warning", "A setting keeps a framework off the GPU or slows it",
         "{variable}={value}: {effect}."),
    Code("CD413", "error", "A setting leaves a framework too little GPU memory",
         "{variable}={value} gives {framework} {share_mib} MiB of GPU {gpu}'s {total_mib} MiB: {effect}."),
    Code("CD414", "warning", "A setting has a value its framework does not take",
         "{variable}={value}: {why}. {framework} {consequence}."),
    Code("CD416", "error", "A CUDA setting breaks the frameworks' GPU work",
         "{variable}={value}: {effect}."),
    Code("CD418", "warning", "A setting no reader reads",
         "{variable}={value}: {why}. {framework} {consequence}."),
    Code("CD417", "warning", "A setting names a path its reader cannot use",
         "{variable}={value}: {problem}. Its reader: {writer}. What it sets: {effect}."),
    Code("CD419", "error", "Python imports another copy of a module than the one installed",
         "{framework}'s Python takes {library} from {entry}, not the copy installed with {framework}: {error}. Python "
         "imports the first copy it finds on sys.path (the working folder for `python -c` and scripts kept there, "
         "PYTHONPATH's folders and zip files, the user site, a .pth file's folder, cached bytecode used without its "
         "source), so a partial, stale or other release there is what every program imports."),
    Code("CD421", "error", "A plugin the framework loads at import fails",
         "{framework} loads every '{group}' plugin (a distribution's entry point) as it is imported and stops where "
         "one fails: {error}. {plugin} is declared by {dist}."),
    Code("CD415", "error", "A framework failed its first GPU steps",
         "{framework} was imported in a child with this environment (check --deep) and failed a tiny cuDNN "
         "convolution or LSTM: {error}"),
    # CD430-CD439: Deeplearning4j projects (Maven / Gradle)
    Code("CD430", "warning", "Project file not read",
         "{path}: {why}. What it declares (modules, properties, dependencies) was not used."),
    Code("CD431", "warning", "Maven property cannot be expanded",
         "{path}: {why}; Maven itself fails on it, and the doctor left it unexpanded."),
    Code("CD432", "warning", "CUDA backend without cuDNN",
         "{where}: {backend} (DL4J {version}) runs on CUDA {cuda}, but {missing}, so DL4J uses its own CUDA "
         "kernels for convolutions and LSTMs instead of cuDNN."),
    Code("CD433", "warning", "GravesLSTM layers do not use cuDNN",
         "{where} builds GravesLSTM layers, which have no cuDNN implementation; on the CUDA backend {backend} "
         "they run without cuDNN."),
    Code("CD434", "info", "Several GPUs, multi-GPU not enabled",
         "This machine has {count} GPUs and {where} uses the CUDA backend {backend}, but its sources never call "
         "allowMultiGPU(true); if DL4J then uses only one GPU, that is why."),
    Code("CD435", "warning", "Several ND4J backends in one module",
         "{where} has {backends} on its classpath; ND4J loads one: {winner}."),
    Code("CD436", "info", "Module built only with a Maven profile",
         "{where} is built only with the profile {profile} ({activation}), which is {state} here; its backend "
         "{backend} is used only then."),
    Code("CD437", "warning", "DL4J without an ND4J backend",
         "{where} uses {artifacts} {version} but no ND4J backend (nd4j-native or nd4j-cuda-X.Y), so it fails at "
         "start with 'No ND4J backend is available'."),
    Code("CD438", "warning", "Maven parent is not the pom it points at",
         "{path}: {why}."),
    Code("CD439", "warning", "Project bigger than the doctor reads",
         "{path}: {why}. The doctor stopped there, so what lies beyond (modules, properties, dependencies) "
         "was not used and its findings about this project may be incomplete."),
    Code("CD440", "warning", "Framework configuration file not read",
         "{path} could not be read ({why}); the settings in it, such as Theano's dnn.library_path, "
         "are not checked, and the framework itself will fail on it or ignore it too."),
    # CD5xx: install
    Code("CD501", "error", "Checksum mismatch",
         "{file}: expected sha256 {expected}, got {actual}."),
    Code("CD502", "error", "Unsafe archive refused",
         "{file}: {why}. Nothing was written."),
    Code("CD503", "error", "Permission denied",
         "Cannot write to {path}."),
    Code("CD504", "error", "Install or uninstall rolled back",
         "{why}. Every file in {prefix} was restored as it was."),
    Code("CD505", "error", "Installed cuDNN failed verification",
         "{why}"),
    Code("CD506", "error", "Archive is for another platform",
         "{file} holds {found} libraries; this install targets {target}."),
    Code("CD507", "error", "Not enough disk space",
         "{path} has {free} free, the install needs {needed}."),
    Code("CD508", "error", "Installed file changed since the install",
         "{count} files that cudnn-doctor installed into {prefix} were changed afterwards ({files}); "
         "uninstalling would remove someone's work."),
    Code("CD509", "error", "Install state unreadable",
         "{file} cannot be read ({why}); nothing was changed."),
    Code("CD510", "error", "Another install or uninstall is running",
         "Another cudnn-doctor install or uninstall is changing {prefix}."),
    Code("CD511", "error", "Download failed",
         "{url}: {why}. Nothing was written."),
    Code("CD512", "error", "Redistributable manifest unusable",
         "{where}: {why}."),
    Code("CD513", "error", "Archive not verifiable",
         "{where}: {why}, so the archive cannot be checked before it is installed."),
    Code("CD514", "error", "Cannot install into this folder",
         "{path}: {why}; nothing was changed."),
    Code("CD515", "error", "Archive cannot be read",
         "{file}: {why}."),
    Code("CD516", "error", "Not a cuDNN archive",
         "{file} holds no libcudnn library (libcudnn.so.N, cudnn64_N.dll)."),
    Code("CD517", "error", "Archive size mismatch",
         "{file}: expected {expected} bytes, got {actual}. Nothing was written."),
    Code("CD518", "error", "Another cuDNN major is in the prefix",
         "{prefix} holds cuDNN {current} ({files}). One prefix has one set of cuDNN headers: cuDNN {version} "
         "beside it would leave cuDNN {current_major}'s libraries with cuDNN {major}'s headers, which `check` "
         "reports as an error (CD303), and a program built there gets headers of one cuDNN and a library of "
         "the other. Nothing was changed."),
    Code("CD519", "error", "cuDNN built for another CUDA major than the prefix's toolkit",
         "{archive} is cuDNN {version} built for CUDA {cudnn_cuda}, but the CUDA toolkit in {prefix} is CUDA "
         "{toolkit_version} (its {where}). A cuDNN build needs a CUDA runtime of its own major: programs "
         "built with this toolkit would load it beside the wrong libcudart, and `check` reports it (CD306). "
         "Nothing was changed."),
    Code("CD520", "error", "No package build for this CUDA, Python or platform",
         "The package manager found no build that satisfies the request ({detail}): the package's "
         "CUDA variant is not published for this Python version or platform, or it lives on another index "
         "(PyTorch's download.pytorch.org/whl/cuXXX), or conda's virtual package __cuda says this machine's "
         "driver supports no such CUDA."),
    Code("CD521", "error", "The package manager found the GPU stack's packages in conflict",
         "The package manager could not install a consistent set of the GPU stack's packages ({detail}). A CUDA "
         "build pins exact versions of NVIDIA's library wheels (nvidia-*-cuNN, cuda-toolkit), and companions such as "
         "torchvision and torchaudio are built for one torch release and CUDA variant; two requirements here pin "
         "different ones."),
    Code("CD522", "error", "Retired or placeholder package",
         "{detail}"),
    Code("CD523", "error", "A framework's NVIDIA library wheels are not installed",
         "{detail}: the framework came from PyPI with NVIDIA's CUDA libraries as wheels of their own (nvidia-*-cuNN), "
         "and those wheels are not installed where its interpreter looks (skipped by --no-deps, a lock file or an "
         "extra that left them out, or installed for another Python)."),
    # CD6xx: bench
    Code("CD601", "error", "No GPU to benchmark",
         "{why}"),
    Code("CD602", "error", "cuDNN call failed",
         "{call} returned {status}: {meaning}"),
    Code("CD603", "error", "cuDNN gave a wrong answer",
         "{workload}: the GPU result differs from the CPU reference by {error} "
         "(tolerance {tolerance})."),
    Code("CD604", "error", "CUDA runtime not usable for the benchmark",
         "{why}"),
    Code("CD605", "error", "Out of GPU memory",
         "{workload} needs {needed} of GPU memory; {free} is free."),
    Code("CD607", "info", "Workload not available in this cuDNN",
         "{workload} was not run: {why}"),
    Code("CD606", "error", "The benchmark crashed or hung",
         "The benchmark process for GPU {device} {how}. cuDNN or the driver failed inside a call; "
         "any program that makes the same call will do the same."),
    Code("CD608", "warning", "GPU slowed down during the benchmark",
         "GPU {device} slowed its clocks while the benchmark ran ({reasons}; SM clock down to {mhz} MHz of "
         "{max_mhz}): its figures are lower than the GPU can give."),
    Code("CD609", "warning", "GPU slower than a healthy one of its model",
         "{workload} on GPU {device} ({gpu}) took {ms} ms, {ratio}x the speed of a healthy {gpu} "
         "({reference_ms} ms, measured {measured})."),
    Code("CD610", "warning", "GPU shared with other processes during the benchmark",
         "GPU {device} ({gpu}) was not the benchmark's alone: {others}. Its figures are what it gave while "
         "shared (the other work takes time slices that a median hides), so they were not compared with a "
         "healthy {gpu}."),
    Code("CD611", "warning", "Peer copies far below their link",
         "Copies from GPU {src} to GPU {dst} ran at {gbs} GB/s, {ratio} of the {peak} GB/s their link ({link}) "
         "carries one way."),
    # Requirements given with --require (one code per subject)
    Code("CD120", "error", "Driver requirement not met",
         "--require {spec}: {found}."),
    Code("CD121", "error", "GPU requirement not met",
         "--require {spec}: {found}."),
    Code("CD122", "error", "GPU health requirement not met",
         "--require {spec}: {found}."),
    Code("CD220", "error", "CUDA requirement not met",
         "--require {spec}: {found}."),
    Code("CD320", "error", "cuDNN requirement not met",
         "--require {spec}: {found}."),
    Code("CD420", "error", "Framework requirement not met",
         "--require {spec}: {found}."),
    # CD9xx: the doctor itself failed in one part; the rest of the report stands
    Code("CD901", "warning", "A rule of cudnn-doctor failed (a bug in cudnn-doctor)",
         "The rule {rule} raised {error}: this is a bug in cudnn-doctor {version}, not a problem of this machine. "
         "The rest of the report stands, but what {rule} judges was not judged. Please report it at "
         + ISSUES_URL + " with the output of `cudnn-doctor check --json`."),
    Code("CD902", "warning", "A probe of cudnn-doctor failed (a bug in cudnn-doctor)",
         "The probe {probe} raised {error}: this is a bug in cudnn-doctor {version}, not a problem of this machine. "
         "The rest of the report stands, but what {probe} looks for was not looked at. Please report it at "
         + ISSUES_URL + " with the output of `cudnn-doctor check --json`."),
)

CODES: dict[str, Code] = {code.code: code for code in _CODES}

# A code's explanation where the platform has none of the causes the plain one names (Platform.kind -> code ->
# text, filled as the registry's is): on WSL 2 the driver is the Windows one, reached through /dev/dxg, with no
# NVIDIA kernel module inside the distribution to reload and nothing to reboot but WSL's VM (NVIDIA's CUDA on WSL
# user guide, https://docs.nvidia.com/cuda/wsl-user-guide/). Every finding, and `explain CODE`, says these there.
ON_PLATFORM: dict[str, dict[str, str]] = {"wsl2": {
    "CD104": "NVML was found but failed: {error}. On WSL 2 NVML is the Windows driver's (/usr/lib/wsl/lib): a "
             "'Driver/library version mismatch' means a Linux driver's libraries inside the distribution shadow "
             "WSL's, or the Windows driver was updated while WSL ran.",
    "CD110": "The CUDA driver was found but could not start ({detail}). On WSL 2 the driver is the Windows one, "
             "reached through /dev/dxg: usual causes are a Windows driver too old for the GPU or for WSL's CUDA, a "
             "Linux driver's libcuda inside the distribution before WSL's, or a Windows driver updated or reset "
             "while WSL ran (its state is the WSL VM's until `wsl --shutdown`).",
}}


def explanation(code: str, platform_kind: str | None = None) -> str:
    """CODE's explanation (a template) on a platform of PLATFORM_KIND: its own there (ON_PLATFORM), else the
    registry's."""
    return ON_PLATFORM.get(platform_kind or "", {}).get(code) or CODES[code].explanation


def on_platform(found: Finding, platform_kind: str | None) -> Finding:
    """FOUND as it reads on a platform of PLATFORM_KIND: its detail from the platform's own explanation where the
    registry has one (ON_PLATFORM), filled from its values as codes.finding fills it; else FOUND."""
    text = ON_PLATFORM.get(platform_kind or "", {}).get(found.code)
    if text is None:
        return found
    from dataclasses import replace

    values = _Fields({key: "unknown" if value is None else value for key, value in found.values.items()})
    return replace(found, detail=text.format_map(values))


# What a code's error stands on (issue 45; DESIGN.md, Report). An error says a program will fail, so it needs the
# thing itself refusing or a rule proven against the real thing; what is only read from files is a warning that
# says how to prove it (rules.hold_to_evidence). A rule may say more of one finding (codes.finding's EVIDENCE):
# cuInit's own answer, a child's load, a framework's words under --deep.
SEEN = frozenset({
    "CD101", "CD102", "CD104", "CD108", "CD109", "CD110", "CD118", "CD130", "CD132", "CD138", "CD141", "CD142", "CD143",
    "CD144", "CD203", "CD307", "CD309", "CD315", "CD316", "CD409", "CD415", "CD419", "CD421", "CD901", "CD902", "CD119",
    "CD170", "CD177", "CD179", "CD211",
})  # the answer of the thing itself: NVML, cuInit, the loader in a child, the kernel's log, a framework's run
RULE = frozenset({
    "CD103", "CD150", "CD152", "CD154", "CD301", "CD155", "CD206", "CD207", "CD208", "CD209", "CD210", "CD311", "CD312", "CD403",
    "CD404", "CD405", "CD408", "CD410", "CD411", "CD413", "CD416", "CD120", "CD121", "CD122", "CD220", "CD320", "CD420",
})  # a rule NVIDIA or the framework states (compat/, each row sourced), its parser's grammar, or the user's --require;
# CD301: no copy of cuDNN anywhere the loader or a framework looks, so nothing can load one; CD152: NVIDIA's CUDA on
# WSL guide says a Linux driver inside WSL 2 cannot reach the GPU and must not be installed there
# CD159 (no NVIDIA GPU in the machine) is read from /sys (the PCI bus, /dev/dxg, a Jetson's files): "read", a warning
# everything else is "read" unless its rule says otherwise; install (CD5xx) and bench (CD6xx) report what happened


def evidence_of(code: str) -> str:
    """What a finding of CODE stands on when its rule says nothing more: "seen", "rule" or "read"."""
    if code in SEEN or code.startswith(("CD5", "CD6")):
        return "seen"
    return "rule" if code in RULE else "read"


def lookup(code: str) -> Code | None:
    """The registry entry for CODE (case-insensitive), or None."""
    return CODES.get(code.upper())


def finding(code: str, subject: str | None = None, refs: tuple[str, ...] = (), evidence: str | None = None,
            proof: str | None = None, **fields: Any) -> Finding:
    """The Finding for CODE, its registry text filled in from FIELDS: the one way any command makes one. Its
    fix is left empty: the plan writes it (plan/fixes.py), from a `fix` value among FIELDS where the rule read one.
    EVIDENCE ("seen" | "rule" | "read") and PROOF: what it stands on, where the rule knows more than the code's
    class (evidence_of)."""
    from cudnn_doctor.model import Finding

    entry = CODES[code]
    if entry.retired:
        raise ValueError(f"{code} is retired")
    values = _Fields({key: "unknown" if value is None else value for key, value in fields.items()})
    return Finding(
        code=code,
        severity=entry.severity,
        title=entry.title,
        detail=entry.explanation.format_map(values),
        fix="",
        refs=refs,
        subject=subject,
        values=dict(fields),
        evidence=evidence or evidence_of(code),
        proof=proof,
    )


class _Fields(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def doctor_error(code: str, exit_code: int = 2, subject: str | None = None, **values: Any) -> DoctorError:
    """The error for registry CODE, its explanation filled in from VALUES. An error stops its command before any
    plan, so its one line carries its remedy: the `fix` among VALUES, else its code's advice."""
    from dataclasses import replace

    from cudnn_doctor.knowledge.advice import advice

    made = finding(code, subject=subject, **values)
    fix = str(values["fix"]) if values.get("fix") else advice(code, values)
    made = replace(made, fix=fix)
    return DoctorError(f"{made.code} {made.title}: {made.detail}", fix, exit_code=exit_code, finding=made)
