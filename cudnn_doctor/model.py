"""Plain records shared by probes, rules and renderers.

Probes build these, rules read them, renderers print them. JSON comes from them
mechanically (`to_jsonable`), so the text report and the JSON never disagree.

The records of one run are plain dataclasses, not frozen ones: nothing hashes them, a rule changes a copy
(`dataclasses.replace`), and on Python 3.11 a frozen dataclass costs 1.6x a plain one to make (three more
generated methods, each compiled at import: this module's records take 98 M instructions frozen, 61 M
plain, a tenth of a check's start; benchmarks/README.md, issue 31). Tables of knowledge shared by every
run and values used as keys (codes.Code, knowledge.query.CudnnBuild, probes.child.Job, ...) stay frozen.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field, fields, is_dataclass
from typing import Any

from cudnn_doctor.records import record

REPORT_SCHEMA = "cudnn-doctor/report/1"

ERROR, WARNING, INFO = "error", "warning", "info"


@record
class Platform:
    """Where the doctor runs, with what showed it (probes/platform.py); facts only, no verdict."""

    kind: str  # "linux" | "wsl2" | "container" | "jetson" | "windows"
    evidence: tuple[str, ...] = ()  # each signal that counted, in words, with the file or variable it came from
    container: str | None = None  # the engine ("docker", "podman", "kubernetes", ...) when inside a container
    ignored: tuple[str, ...] = ()  # signals seen but not enough alone (a /.dockerenv on a VM)
    nvidia_env: dict[str, str] = field(default_factory=dict)  # NVIDIA_*, CUDA_VERSION, NV_CUDNN_VERSION
    driver_injected: bool | None = None  # container: whether the NVIDIA runtime put the driver in (devices, libcuda)
    wsl_lib: str | None = None  # /usr/lib/wsl/lib where present
    wsl_copies: tuple[str, ...] = ()  # libraries there that are copies where ldconfig wants links
    shadowing: tuple[str, ...] = ()  # WSL: driver libraries the loader picks outside /usr/lib/wsl/lib
    l4t: str | None = None  # Jetson Linux release, "36.4.3"
    jetpack: str | None = None  # the JetPack of that L4T (compat/platforms.toml), "6.2"
    board: str | None = None  # /proc/device-tree/model
    tegra_libcuda: str | None = None  # the integrated GPU's libcuda
    sbsa: bool | None = None  # Jetson: whether NVIDIA's SBSA builds run on this JetPack
    # a host's container engines and the NVIDIA Container Toolkit (read where not inside a container)
    docker: bool = False  # dockerd is installed
    container_toolkit: tuple[str, ...] = ()  # its programs found (nvidia-ctk, nvidia-container-runtime-hook, ...)
    cdi_specs: dict[str, str | None] = field(default_factory=dict)  # NVIDIA CDI spec -> driver it names
    # what shows an NVIDIA GPU in the machine (a PCI display controller of vendor 0x10de, WSL's /dev/dxg, a Jetson's
    # integrated GPU); () when the PCI bus lists devices and none is one; None when nothing could be asked
    nvidia_devices: tuple[str, ...] | None = None


@record
class Host:
    """The machine the report was made on."""

    os: str
    arch: str
    python: str
    hostname: str
    platform: Platform | None = None


@record
class GpuProcess:
    """A process holding GPU memory."""

    pid: int
    used_memory_mib: int | None
    name: str | None = None  # /proc/PID/comm, where this process can read it


@record
class GpuHealth:
    """NVML's health readings of one GPU; None where not read, named in not_supported where the
    GPU or driver does not support it, in errors where NVML failed."""

    ecc_enabled: bool | None = None
    ecc_errors_uncorrected_volatile: int | None = None
    ecc_errors_uncorrected_aggregate: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failed: bool | None = None
    throttle_reasons: tuple[str, ...] | None = None  # hw_slowdown, sw_thermal_slowdown, ...; idle left out
    pcie_link_generation: int | None = None
    pcie_link_generation_max: int | None = None
    pcie_link_width: int | None = None
    pcie_link_width_max: int | None = None
    persistence_mode: bool | None = None
    mig_mode: bool | None = None
    mig_mode_pending: bool | None = None
    compute_mode: str | None = None  # default | exclusive_process | prohibited | exclusive_thread
    processes: tuple[GpuProcess, ...] | None = None  # compute processes of others
    temperature_celsius: int | None = None
    temperature_slowdown_celsius: int | None = None
    not_supported: tuple[str, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)


@record
class Gpu:
    """One GPU as NVML sees it."""

    index: int
    name: str
    uuid: str | None
    compute_capability: str | None  # "9.0"
    memory_total_mib: int | None
    driver_version: str | None
    health: GpuHealth | None = None
    memory_used_mib: int | None = None  # by every process, this one's NVML child included (about 0)
    pci_bus_id: str | None = None  # "00000000:00:06.0", as NVML and nvidia-smi write it


@record
class Driver:
    """The NVIDIA driver, as NVML or libcuda answered."""

    version: str | None  # "580.159.04"
    cuda_driver_version: str | None  # "13.0"
    source: str  # "nvml" | "libcuda" | "none"
    library: str | None = None  # the libnvidia-ml / libcuda that answered
    error: str | None = None  # why it could not be read, when it could not


@record
class Toolkit:
    """One CUDA toolkit found on disk."""

    path: str
    version: str | None
    nvcc: str | None
    source: str  # "CUDA_HOME" | "CUDA_PATH" | "PATH" | "/usr/local/cuda" | "pip" | "conda" | ...
    cudart: str | None = None  # the libcudart in it
    version_from: str | None = None  # "version.json" | "version.txt" | "nvcc" | "cudart"
    compat_libcuda: str | None = None  # <cuda>/compat/libcuda.so.* (forward compatibility)
    links: tuple[str, ...] = ()  # symlinks that resolve to this toolkit (/usr/local/cuda)
    runtime_version: str | None = None  # cudaRuntimeGetVersion of its libcudart, "13.0"
    cudart_error: str | None = None  # why its libcudart failed to load


@record
class LibraryProbe:
    """What a child process saw when it loaded one vendor library."""

    path: str
    loaded: bool
    error: str | None = None  # the loader's message, or the crash/timeout
    crashed: bool = False
    timed_out: bool = False
    values: dict[str, Any] = field(default_factory=dict)  # function name -> returned value


@record
class CudnnInstall:
    """One copy of cuDNN: its library, version and who loads it."""

    path: str  # the folder
    library: str  # the file, e.g. /usr/lib/x86_64-linux-gnu/libcudnn.so.9
    major: int | None  # from the file name (libcudnn.so.9 -> 9)
    version: str | None  # "9.19.0" from cudnnGetVersion
    header_version: str | None
    header_path: str | None
    cuda_version: str | None  # from cudnnGetCudartVersion, "13.1"
    sublibraries: dict[str, bool]  # name -> present
    sublibrary_versions: dict[str, str | None]  # name -> version found in its file name/soname
    source: str  # "system" | "toolkit" | "pip:<dist>" | "conda" | "env" | "search-path"
    loaded_by: tuple[str, ...] = ()  # "ld.so", "torch", "tensorflow", "jax", ...
    load_error: str | None = None
    crashed: bool = False
    timed_out: bool = False
    arch: str | None = None  # ELF machine, e.g. "x86_64"
    file_error: str | None = None  # not a library for this platform, truncated, ...
    same_file_as: tuple[str, ...] = ()  # other paths (symlinks) to the same file
    real_library: str | None = None  # the file with every symlink resolved (the probe's realpath)
    real_path: str | None = None  # the folder with every symlink resolved
    file_version: str | None = None  # a DLL's version resource ("9.28.1.4"), read without loading it
    # Windows: DLLs its files import that are in none of the folders the loader searches (zlibwapi.dll, ...)
    missing_dlls: tuple[str, ...] = ()
    # what loading it took from the child's process, each 'STEP: what' (the environment cleared, standard output
    # pointed elsewhere, a limit lowered, ...): every program that loads it loses the same
    changed_process: tuple[str, ...] = ()


@record
class Framework:
    """A framework found in an environment (or assumed with --framework)."""

    name: str  # "torch" | "tensorflow" | "jax" | "theano" | "dl4j"
    version: str | None
    cuda_built_for: str | None
    cudnn_expected: str | None  # the cuDNN version it was built with or pins
    cudnn_used: str | None  # the install path it will load
    found_via: str  # "dist-info" | "pom.xml" | ...
    location: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@record
class Finding:
    """What a rule found: a registry code's text filled in; its fix rendered from the plan."""

    code: str
    severity: str
    title: str
    detail: str
    fix: str  # rendered from the plan (cudnn_doctor.plan): its actions for this finding, else the code's advice
    refs: tuple[str, ...] = ()
    subject: str | None = None  # the path or object it is about
    values: dict[str, Any] = field(default_factory=dict, compare=False)  # what the rule read, by name
    # what the verdict stands on (codes.EVIDENCE): "seen" (the thing itself refused: the loader, cuInit, NVML, a
    # framework under --deep), "rule" (a documented or measured rule), "read" (inferred from files: never an error)
    evidence: str = "read"
    proof: str | None = None  # seen: its words, quoted; rule: the proof's source; read: how to prove it


@record
class Summary:
    """The report's status, counts and exit code."""

    status: str  # "ok" | "warning" | "error"
    counts: dict[str, int]
    exit_code: int


@record
class Tool:
    """The doctor's own name and version."""

    name: str
    version: str


@record
class VisibleGpu:
    """A GPU as CUDA numbers it in this environment (after CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER)."""

    ordinal: int  # what a program passes as cuda:N
    uuid: str | None
    pci_bus_id: str | None
    name: str | None = None
    nvml_index: int | None = None  # nvidia-smi's index of the same GPU


@record
class SubLibrary:
    """One cuDNN sub-library as the loader resolves it for a copy a program loads."""

    name: str  # libcudnn_ops.so.9
    path: str | None  # the file the loader opens (None: none found)
    version: str | None  # its release, from its exported version symbol or its file name
    problem: str | None = None  # "missing" | "truncated: ..." | "another release" | None
    rarely_used: bool = False  # loaded only by cuDNN's legacy API (compat/process_env.toml [[sublibrary]])
    seen: str | None = None  # what the loader or cuDNN said loading it in a child (its evidence), where it failed
    refused_first: str | None = None  # the loader's words refusing the file it found first under this name, where
    refused_first_file: str | None = None  # cuDNN then went on with another file it took under another of its names


@record
class LoadStep:
    """One step of loading cuDNN as a program does, in a child (probes/loading.py): what it asked and what it got."""

    step: str  # "recipe" (the framework's own loading code), "open", a version check's name, or a later soname
    ok: bool
    said: str  # "ok", the status name (CUDNN_STATUS_...), the loader's words, or how the child died
    library: str | None = None  # the sub-library the step loads ("libcudnn_ops.so.9")
    mapped: tuple[str, ...] = ()  # files the step mapped
    refused: str | None = None  # the sub-library's file the loader itself refused (its words lead SAID)
    refused_first: str | None = None  # a step that went on: the loader's words refusing the file it found first
    refused_first_file: str | None = None  # under the sub-library's name (cuDNN then took another under another name)


@record
class SeenLibrary:
    """A CUDA library other than cuDNN as one program (a framework, or "ld.so") gets it, seen in its loading child
    (issue 45): the file the loader gave for its soname and how it came, or the loader's words refusing it."""

    soname: str  # libcublasLt.so.13
    how: str  # "mapped" (the framework's own code, or a library it loaded, had mapped it) | "LD_LIBRARY_PATH" |
    # "RUNPATH" | "by name" (the loader's cache and system folders)
    path: str | None  # the file mapped, or the one the loader refused; None where none was found
    said: str  # "ok", the loader's words refusing it, or how the copy that opened it died
    missing: tuple[str, ...] = ()  # functions every framework here calls that this copy lacks
    version: str | None = None  # its own answer (cublasGetProperty, cudaRuntimeGetVersion, ...), dotted
    stub: str | None = None  # the CUDA toolkit's link stub it is (its real file), where it is one
    own: str | None = None  # the copy the framework's own nvidia-* wheel holds under this soname
    pinned: str | None = None  # what the framework's metadata asks of that wheel ("nvidia-cublas==13.1.0.3")
    own_release: str | None = None  # that wheel's own release, from its dist-info
    own_wheel: str | None = None  # the wheel whose RECORD lists its own copy, pinned to what is installed ("nvidia-cublas==13.1.0.3")
    own_problem: str | None = None  # why the loader cannot use its own copy, read from its headers (None: it reads whole)
    own_replaced: str | None = None  # its own copy's size where its wheel's RECORD gives another (None: they agree)
    bound: int = 0  # how many symbols the framework's own libraries take from this soname were asked of it (dlvsym)
    unbound: tuple[str, ...] = ()  # those the loader binds nowhere here ("cudaFoo@libcudart.so.13"; "+N": N more)
    binder: str | None = None  # the framework's own library that needs them (libtorch_cuda.so)
    real: str | None = None  # PATH resolved (its links followed), by the probe: rules touch no files
    own_real: str | None = None  # OWN resolved, likewise
    via: str = ""  # how the copy came into the program: LD_PRELOAD | LD_LIBRARY_PATH | its own wheel | RUNPATH | ...
    via_entry: str | None = None  # the LD_PRELOAD entry as the user wrote it, where it came so

    @property
    def ok(self) -> bool:
        return self.said == "ok"


@record
class ObservedLoad:
    """cuDNN as one framework (or any program asking the loader by name: "ld.so") really loads it here, seen in a
    child with the user's environment: its own loading code run, the front library opened, each sub-library loaded
    by cuDNN's own version checks, the engines opened; what was mapped, from /proc/self/maps."""

    user: str  # a framework's name, or "ld.so"
    front: str | None  # the libcudnn.so.N mapped
    version: str | None  # cudnnGetVersion of it, dotted
    steps: tuple[LoadStep, ...] = ()
    mapped: tuple[str, ...] = ()  # every file the child mapped, in order
    recipe: str | None = None  # the framework's loading code that ran ("torch/__init__.py: _load_global_deps")
    died: str | None = None  # the child crashed or hung: in which step, and how
    libraries: tuple[SeenLibrary, ...] = ()  # the CUDA libraries other than cuDNN, as it gets them (issue 45)
    library_recipe: str | None = None  # its own code that preloads them, and what it said ("ok", its exception)
    needed: tuple[str, ...] = ()  # the sonames its own libraries need (DT_NEEDED): refused, its import fails
    library_recipe_died_at: str | None = None  # the file its own preloading code was opening when the child died
    library_recipe_died_wheel: str | None = None  # the wheel whose RECORD lists that file ("nvidia-cublas==13.1.0.3")
    library_recipe_died_folder: str | None = None  # the working folder it was in (`python -c` searches it first)


@record
class LoadedCudnn:
    """The cuDNN a framework (or any program, "ld.so") loads in this environment, and its sub-libraries."""

    user: str  # a framework's name, or "ld.so"
    library: str
    version: str | None
    via: str  # "LD_PRELOAD" | "LD_LIBRARY_PATH" | "RUNPATH" | "the loader's cache or a system folder"
    sublibraries: tuple[SubLibrary, ...] = ()
    entry: str | None = None  # the LD_PRELOAD or LD_LIBRARY_PATH entry, as written there, that brought it
    real_library: str | None = None  # LIBRARY with its links resolved
    observed: bool = False  # LIBRARY and the sub-libraries' problems are what a child saw loading them (ObservedLoad)


@record(frozen=True)
class EnvironmentCure:
    """A framework failed in a child with this environment and worked in one that differed in one part only
    (doctor/bisect.py): that part (kind: preload, library_path, path, pythonpath, limits, variable), in words, the
    changes as (variable, op, value) that fix writes, the entries taken out, and the frameworks it cured."""

    kind: str
    words: str
    changes: tuple[tuple[str, str, str], ...]
    removed: tuple[str, ...] = ()
    variable: str | None = None
    frameworks: tuple[str, ...] = ()
    said: str = ""  # what the frameworks said with this environment
    libraries: tuple[str, ...] = ()  # the CUDA, cuDNN and NVIDIA library names the removed folders held
    cause: str = ""  # the Python-level class the failure's own frames name (CD419, CD421), where they name one


@record(frozen=True)
class SettingAnswer:
    """What the installed files say of one setting: the option's kind as its framework defines it ("bool", "enum",
    "integer", "float", "string"; "unknown": none of them reads such a name; "alloc_conf": VALUES are the keys of
    the setting that its parser's library knows; "made": the files whose own code makes the folder it names;
    "pjrt_options": FILES the parser's file and the CUDA plugin's library, VALUES the plugin's other option names;
    "compared": a switch its file compares with words, VALUES the operator, "lower" or "exact", its default, the
    words),
    an enum's values (an integer's: "int()" or "float()" where Python's parser reads it, "list:SEP" for a list,
    "when used" where a function reads it), and the files asked."""

    kind: str
    values: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


# what probes/process_env.py writes into ProcessView.broken_cuda for a toolkit's link stub, and its source: the
# rule (rules/process_env.broken_cuda) reads the same words back
STUB_WORDS = "it is the CUDA toolkit's link stub"
STUB_SOURCE = ("NVIDIA CUDA toolkit layout: lib64/stubs (targets/<arch>/lib/stubs) holds link-only stubs under bare "
               "names (libcublas.so), their soname versioned, so that no program loads them at run time "
               "(ofiwg/libfabric#10365, 'hmem/cuda: avoid stub loading at runtime'; CUDA_ERROR_STUB_LIBRARY: a "
               "stub's functions do no work)")
# a library child past its deadline, in the probe's words (probes/library_jobs.py); the rules read them
HANGS = "(it hangs while loading or in its first call)"
# a preload entry the loader could not load, in the start-cost probe's words (probes/start_cost.loader_refused)
LOADER_REFUSED = "was refused by the loader"


@record
class ProcessView:
    """What a program started in the user's own environment gets: the CUDA driver the loader maps and
    cuInit's answer, the GPUs left visible, LD_PRELOAD, the frameworks' settings, process limits."""

    asked_because: tuple[str, ...] = ()  # why CUDA itself was asked (empty: nothing here can change its answer)
    libcuda: str | None = None  # the file the loader mapped for libcuda.so.1
    libcuda_with_nvml: bool = False  # its folder holds libnvidia-ml.so.1 too: the driver's own folder
    libcuda_version: str | None = None  # its release, from its file name (libcuda.so.580.159.04)
    libcuda_via: str | None = None  # "LD_PRELOAD" | "LD_LIBRARY_PATH" | "the loader's cache or a system folder"
    libcuda_entry: str | None = None  # the LD_PRELOAD or LD_LIBRARY_PATH entry, as written there, that brought it
    kernel_driver: str | None = None  # the kernel module's release (/proc/driver/nvidia/version)
    cuda_driver_version: str | None = None  # cuDriverGetVersion, as "13.0"
    cuinit: int | None = None  # cuInit(0)'s status (0: CUDA_SUCCESS); None: not asked
    cuinit_name: str | None = None
    # cuInit's status in a child holding the descriptors a program started here holds, where it failed there and
    # answered CUDA_SUCCESS without them (cuinit is then that answer): the descriptors stop CUDA itself
    cuinit_held: str | None = None
    # the first context a program's first CUDA work makes on the first visible GPU, made where a CUDA variable set
    # here is one the data cannot vouch for (context_variables): "ok", or the step that failed and CUDA's name for it
    context: str | None = None
    context_variables: tuple[str, ...] = ()
    # where it was refused: the same context made again in a child without those variables ("ok": they are the cause)
    context_without: str | None = None
    context_without_unset: tuple[str, ...] = ()  # the variables that child was started without (context_retry_unset)
    # where made without them: those whose absence alone made it (each left out alone, side by side), else all of them
    context_blamed: tuple[str, ...] = ()
    load_error: str | None = None  # why libcuda.so.1 could not be loaded at all
    # the child that loads libcuda.so.1 and calls cuInit as a program does crashed, hung or ended before it answered
    probe_failure: str | None = None
    visible: tuple[VisibleGpu, ...] | None = None  # None: not known (cuInit failed or not asked)
    # torch's own NVML-based count of the GPUs CUDA_VISIBLE_DEVICES selects, its functions run from the installed
    # torch/cuda/__init__.py in torch's Python (probes/visible_devices.py): (that file, the count, its parse)
    torch_visible: tuple[str, int, tuple[str, ...]] | None = None
    visible_from: str | None = None  # "cuda" (cuInit's answer) | "nvml" (NVML's GPUs at CUDA_VISIBLE_DEVICES's indices)
    cuda_visible_devices: str | None = None  # as set (None: unset)
    ignored_entries: tuple[str, ...] = ()  # CUDA_VISIBLE_DEVICES entries after the first one CUDA cannot use
    cuda_device_order: str | None = None
    preload: tuple[str, ...] = ()  # LD_PRELOAD's entries
    mapped: tuple[str, ...] = ()  # the shared objects a fresh program maps before its first dlopen
    # a sanitizer's run-time the CUDA child had mapped (compat/process_env.toml [[sanitizer]]): (its file, the
    # variable of its options, that variable's value as set, "" where unset)
    sanitizers: tuple[tuple[str, str, str], ...] = ()
    settings: dict[str, str] = dataclasses.field(default_factory=dict)  # the variables compat/ knows that are set
    # each path a setting names that its reader cannot use as it needs (compat/ path_must): variable -> what is wrong
    setting_paths: dict[str, str] = dataclasses.field(default_factory=dict)
    setting_answers: dict[str, SettingAnswer] = dataclasses.field(default_factory=dict)  # the installed files' word
    # settings whose readers take them only where they name a folder that exists, set to something else: skipped
    settings_skipped: tuple[str, ...] = ()
    limits: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # RLIMIT_AS: (soft, hard); -1 unlimited
    cudnn: tuple[LoadedCudnn, ...] = ()
    loads: tuple[ObservedLoad, ...] = ()  # cuDNN as each framework, and the loader by name, really loads it
    xla_flags_unknown: tuple[str, ...] | None = None  # XLA_FLAGS's names no library of the installed jaxlib defines
    xla_flag_files: tuple[str, ...] = ()  # the jaxlib libraries asked for their flags' names
    xla_flags_said: tuple[str, ...] = ()  # jaxlib's own words refusing XLA_FLAGS, JAX run on the CPU with them
    # LD_PRELOAD's CUDA libraries of another release than the same soname in a framework's wheels:
    # (entry, soname, release, framework, the wheel's release)
    preloaded_cuda: tuple[tuple[str, ...], ...] = ()
    # PYTHONPATH folders (and the working folder) holding a package or module an installed framework imports:
    # (entry, package, framework, "PYTHONPATH" | "working folder" | "user site" | "sys.path" | "stale bytecode"[,
    # "seen" where the framework's own Python found it there: probes/python_finder.py])
    python_shadows: tuple[tuple[str, ...], ...] = ()
    # CUDA libraries on LD_LIBRARY_PATH the loader cannot use as their name says: (file, what is wrong)
    broken_cuda: tuple[tuple[str, ...], ...] = ()
    # C++ runtimes LD_PRELOAD or LD_LIBRARY_PATH gives before the system's that the loader refuses for a framework's
    # own library: (runtime, via, entry, framework, library, versions missing, the loader's words)
    cxx_runtime: tuple[tuple[str, ...], ...] = ()
    # the frameworks' Pythons that did not start with this environment: (python, its words, the variable without
    # which it started or "" where none alone did, that variable's value, the Python variables set)
    python_refused: tuple[tuple[str, ...], ...] = ()
    # the frameworks' Pythons whose numpy failed with a CPU-kernel variable (compat [[cpu_kernel]]) and worked without
    # it: (python, numpy's words, the variable, its value), seen (probes/cpu_kernels.py)
    cpu_kernels: tuple[tuple[str, ...], ...] = ()
    # (framework, a GPU library its Python had mapped when a program's first line ran, the start-up hooks that may
    # have loaded it, the framework wheels' own copy of that soname or "", its release or "", "own" where it is the
    # framework's own copy, the PYTHONPATH entries holding a hook): seen in the started Python (probes/python_start.py)
    python_preloaded: tuple[tuple[str, ...], ...] = ()
    # plugins a framework's import loads that its own Python cannot load (probes/python_finder.py): (framework, entry
    # point group, plugin or "" where the metadata itself was refused, its module, Python's words, the distribution's
    # folder, the variable that turns the group off)
    python_plugins: tuple[tuple[str, ...], ...] = ()
    # cuDNN sub-libraries in LD_PRELOAD (libcudnn_adv.so.9): (entry, the folder its real file is in, the release its
    # real file's name carries or ""), read by the probe (rules touch no file)
    preloaded_cudnn_parts: tuple[tuple[str, str, str], ...] = ()
    # LD_PRELOAD's entries no row of the data knows and what they cost one process's start, asked of the loader: a
    # bare Python started with and without them side by side (probes/start_cost.py): (the entries joined by ' ', its
    # milliseconds with them or -1 where it passed the probe's deadline, without them, that deadline in seconds); None
    # where not asked
    preload_start: tuple[str, float, float, float] | None = None
    # what that start with them was given otherwise than the one without them, in words (cleared the environment,
    # ignored SIGINT, lowered a limit, armed an alarm, ...): what every program started here loses the same way
    preload_takes: tuple[str, ...] = ()
    # variables a Python start-up hook set or changed inside Python, as every Python program here gets them
    # (sitecustomize, usercustomize, a .pth line; seen: os.environ against /proc/self/environ in the doctor's own
    # process): (variable, its value there, the hook files whose text names it, os.pathsep-joined)
    set_in_python: tuple[tuple[str, ...], ...] = ()
    cured_by: EnvironmentCure | None = None  # --deep: the one part of the environment without which they work
    ptxas: str | None = None  # the first ptxas on PATH, which XLA compiles with before its own (where JAX is installed)
    ptxas_release: str | None = None  # what it said it is (`ptxas --version`)
    nvml_library: str | None = None  # the libnvidia-ml.so.1 a program loads here, where nvmlInit refused
    nvml_error: str | None = None  # what nvmlInit answered there
    nvml_stub: bool = False  # that file carries NVIDIA's notice of the toolkit's link stub ("is a stub library")
    nvml_via: str | None = None  # how it came in: "LD_PRELOAD" | "LD_LIBRARY_PATH" | the loader's cache or a system folder
    nvml_entry: str | None = None  # the LD_PRELOAD or LD_LIBRARY_PATH entry, as written there, that brought it
    # a FIFO where the loader looks first for libcuda.so.1 / libnvidia-ml.so.1 (LD_LIBRARY_PATH): ld.so opens it and
    # waits for a writer for ever, so the probe that loads it hung, as every program that loads it does
    libcuda_fifo: str | None = None
    # what the libcuda.so.1 a program loads took from the CUDA probe's process, each as 'STEP: what' (loading
    # libcuda.so.1, cuInit, the device queries): descriptors it held closed, the environment cleared, standard output
    # pointed elsewhere, a limit lowered, an alarm armed; a program loses the same at its first CUDA call
    changed_process: tuple[str, ...] = ()
    nvml_fifo: bool = False
    nvml_died: str | None = None  # how the child that loads NVML ended before it answered (crashed, hung, exited)
    # the release in the name of the file nvml_library is (links followed): the driver installs its NVML named for the
    # kernel module's release, so a copy that hung under load but is the driver's own is not 'another NVML'
    nvml_release: str | None = None
    nvml_changed: tuple[str, ...] = ()  # what loading that NVML took from the child's process ('STEP: what')
    # XLA_FLAGS naming a file of flags that would stop every JAX program at start: (file, what is wrong with it)
    xla_flags_file: tuple[str, str] | None = None
    # what the shell gave every program it starts, read from this process's own /proc/self/status (probes/
    # process_start.py): "umask" (octal), "ignored" (signals ignored at exec, comma-separated: SIGCHLD...), "uid"
    shell: dict[str, str] = dataclasses.field(default_factory=dict)
    # where `import torch` (jax, tensorflow) finds each at a program's first line, asked of the frameworks' Pythons
    # started with this environment (probes/python_start.py): (framework, python, its file ('' a namespace portion,
    # '-' none), "installed" | "other" | "none")
    python_imports: tuple[tuple[str, ...], ...] = ()
    # each GLIBC_TUNABLES entry as this machine's glibc took it (ld.so --list-tunables under that value: probes/
    # process_start.glibc_tunables): (name, value set, value glibc holds, "taken" | "unknown" | "refused")
    tunables: tuple[tuple[str, ...], ...] = ()


@record
class NvLink:
    """One NVLink of a GPU, as NVML answers for it."""

    link: int
    active: bool
    version: int | None = None  # nvmlDeviceGetNvLinkVersion's answer, as given
    remote_pci_bus_id: str | None = None  # the GPU or NVSwitch at its other end


@record
class GpuLinks:
    """How one GPU connects: its PCIe link, NUMA node, NVLinks, fabric state (NVSwitch systems) and PCIe path."""

    index: int
    name: str
    pci_bus_id: str | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None  # "0-15,32-47"
    utilization_percent: int | None = None  # now; an idle GPU lowers its PCIe link to save power
    pcie_generation: int | None = None
    pcie_generation_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    nvlinks: tuple[NvLink, ...] = ()
    nvlinks_active: int = 0
    nvlinks_expected: int | None = None  # this model's links (compat/multi_gpu.toml), None: not known
    nvlink_form: str | None = None  # "sxm" (always linked) | "bridge" (linked where a bridge is fitted)
    nvlink_gbs_per_link: float | None = None  # one direction, one link
    fabric_state: str | None = None  # "not_started" | "in_progress" | "completed"; None: not an NVSwitch system
    fabric_status: int | None = None  # the nvmlReturn_t of the fabric's training, 0 success
    iommu_group: str | None = None  # /sys/bus/pci/devices/BUS/iommu_group
    acs_redirect: tuple[str, ...] = ()  # bridges on its PCIe path that send peer traffic up to the root complex
    not_supported: tuple[str, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)


@record
class GpuPair:
    """Two GPUs: how their traffic goes (nvidia-smi topo -m's words) and whether they may reach each other."""

    gpus: tuple[int, int]
    path: str  # "NV18" | "PIX" | "PXB" | "PHB" | "NODE" | "SYS" (as nvidia-smi topo -m)
    nvlinks: int = 0  # links between the two (an NVSwitch system: the fewer active of the two)
    p2p_read: str | None = None  # NVML's P2P status for reads: "ok" | "chipset not supported" | ...
    p2p_nvlink: str | None = None
    can_access_peer: bool | None = None  # cuDeviceCanAccessPeer both ways (--deep)
    peak_gbs: float | None = None  # one direction, by its link (NVLink or the slower PCIe link)


@record
class NcclLibrary:
    """The libnccl a framework loads, and what it was built with."""

    user: str  # "torch"
    library: str | None
    version: str | None  # ncclGetVersion of that file, "2.27.5"
    built_with: str | None  # the framework's own pin (its wheel's Requires-Dist on nvidia-nccl-*)
    via: str | None = None  # "LD_PRELOAD" | "LD_LIBRARY_PATH" | "RUNPATH" | "the loader's cache or a system folder" (probes/origin)
    entry: str | None = None  # the LD_LIBRARY_PATH entry that brought it
    error: str | None = None
    library_real: str | None = None  # LIBRARY resolved (its links followed), by the probe
    # where LIBRARY is preloaded: the LD_LIBRARY_PATH entry that would bring another libnccl.so.2 (before the
    # framework's RUNPATH) once LD_PRELOAD is without it, which a fix takes out with the preload
    after_preload: str | None = None


@record
class AllReduce:
    """`check --deep`'s NCCL all-reduce over the visible GPUs, one process per GPU, through torch.distributed."""

    world_size: int
    ok: bool
    bytes: int = 0
    ms: float | None = None
    algbw_gbs: float | None = None
    busbw_gbs: float | None = None  # nccl-tests: algbw * 2 (n - 1) / n
    predicted_busbw_gbs: float | None = None  # from the slowest link of the ring (the topology)
    nccl_version: str | None = None
    library: str | None = None  # the libnccl the ranks mapped
    last_words: tuple[str, ...] = ()  # NCCL's own WARN lines and the error, as printed
    timed_out: bool = False
    error: str | None = None
    can_access_peer: dict[str, bool] = field(default_factory=dict)  # "0-1": cuDeviceCanAccessPeer


@record
class MultiGpu:
    """What several GPUs and NCCL need from this node (issue 42)."""

    gpus: list[GpuLinks] = field(default_factory=list)
    pairs: list[GpuPair] = field(default_factory=list)
    nccl_libraries: list[NcclLibrary] = field(default_factory=list)
    nccl_settings: dict[str, str] = field(default_factory=dict)  # NCCL_* variables that are set
    interfaces: tuple[str, ...] = ()  # /sys/class/net
    infiniband: tuple[str, ...] = ()  # /sys/class/infiniband
    # each adapter's port numbers (/sys/class/infiniband/NAME/ports): NCCL_IB_HCA's ':port' names one of them
    infiniband_ports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    shm_mib: int | None = None  # /dev/shm's size
    shm_free_mib: int | None = None
    shm_refused: str | None = None  # the kernel's answer where one segment of NCCL's size could not be reserved
    iommu: str | None = None  # "on" | "off" | None (not known)
    fabric_manager: str | None = None  # "running" | "installed" | "absent" | None (not asked)
    allreduce: AllReduce | None = None


@record
class CompilerCandidate:
    """One place XLA looks for a CUDA compiler tool (ptxas, nvlink), in its order, and what it made of the file there
    (probes/first_use.py): the one it uses, or why it went on to the next."""

    path: str
    how: str  # "xla_gpu_cuda_data_dir" (JAX's CUDA path or XLA_FLAGS) | "PATH" | "CUDA root"
    verdict: str  # "used" | "not executable" | "did not run" | "hangs" | "no version" | "too old" | "excluded"
    said: str = ""  # its version (V12.6.85), or its words / why it did not run
    version: str | None = None  # dotted, from `TOOL --version` (V12.6.85 -> 12.6.85)


@record
class XlaCompiler:
    """What JAX's XLA compiles its first kernels with, found as XLA finds it (issue 45, p17): its CUDA data folder,
    the ptxas and nvlink candidates it looks at in order, and the libdevice it links math functions from."""

    framework: str  # "jax"
    data_dir: str  # the folder XLA looks in first (xla_gpu_cuda_data_dir as JAX sets it)
    data_dir_from: str  # "CUDA_ROOT" | "nvidia.cu13" | "nvidia.cuda_nvcc" | "XLA_FLAGS" | "XLA's default"
    flag_data_dir: str | None = None  # --xla_gpu_cuda_data_dir in XLA_FLAGS, where set (JAX's own path outranks it)
    ptxas: tuple[CompilerCandidate, ...] = ()  # the files looked at, in XLA's order, up to the one used
    places: int = 0  # the places XLA looks for ptxas in (each a file name; most hold none)
    ptxas_used: str | None = None
    ptxas_version: str | None = None
    path_ptxas_used: bool = False  # the ptxas XLA uses is the first one on PATH (what probes/ptxas.py asked)
    nvlink: str | None = None  # the nvlink XLA would find (needed only for parallel compilation)
    # where parallel compilation is asked: the nvlink files XLA looks at, in its order, each asked `--version` as XLA
    # asks it, up to the one it takes (verdict "used") or waits on for ever ("hangs")
    nvlink_candidates: tuple[CompilerCandidate, ...] = ()
    parallel: bool = False  # XLA_FLAGS asks for parallel compilation (xla_gpu_enable_llvm_module_compilation_parallelism)
    driver_fallback: bool = False  # XLA_FLAGS lets the driver compile where no ptxas is found
    libdevice_dir: str | None = None  # the first root holding nvvm/libdevice: where XLA takes libdevice.10.bc from
    libdevice: str | None = None  # that folder's libdevice.10.bc, where it is a file
    # what stands there that XLA's FileExists (access F_OK) finds but LLVM cannot read as bitcode: "a FIFO", "a
    # folder", "a file that is not LLVM bitcode (empty)"; None where nothing is there or it is bitcode
    libdevice_unusable: str | None = None
    roots: tuple[str, ...] = ()  # the CUDA roots XLA searches for nvvm/libdevice, in its order


@record
class NvrtcBuiltins:
    """The builtins library the NVRTC a framework gets opens by name when it first compiles a kernel (torch's
    fusers, cuDNN's runtime-compiled engines), found as the loader finds it from that NVRTC (probes/first_use.py)."""

    framework: str
    nvrtc: str  # the libnvrtc.so.N the framework gets
    nvrtc_release: str  # major.minor
    wanted: str  # libnvrtc-builtins.so.12.6
    found: str | None  # the file the loader gives for it, None where none
    how: str  # "preloaded" (the framework's own code loads its wheel's copy first) | "LD_LIBRARY_PATH" | "RUNPATH" |
    # "the loader's cache or a system folder" | "nowhere"
    problem: str = ""  # what is wrong with it ("" where nothing): not found, another library, no entry functions
    said: str = ""  # NVRTC's own words, compiling a kernel in a child where a problem was read (seen)
    searched: tuple[str, ...] = ()  # the folders searched, in the loader's order
    nvrtc_via: str = ""  # how that libnvrtc came in, where its loading child saw it ("LD_LIBRARY_PATH", ...)


@record
class FirstUse:
    """What fails only at a framework's first compilation or first use of a CUDA library, after import (p17)."""

    xla: XlaCompiler | None = None
    nvrtc: tuple[NvrtcBuiltins, ...] = ()


@record
class Report:
    """Everything check found and judged (`cudnn-doctor/report/1`)."""

    tool: Tool
    host: Host
    gpus: list[Gpu] = field(default_factory=list)
    driver: Driver = field(default_factory=lambda: Driver(None, None, "none"))
    toolkits: list[Toolkit] = field(default_factory=list)
    cudnn: list[CudnnInstall] = field(default_factory=list)
    frameworks: list[Framework] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ignored: list[Finding] = field(default_factory=list)  # left out by --select/--ignore: no part of summary
    selection: dict[str, Any] = field(default_factory=dict)  # the select/ignore applied, and where they came from
    summary: Summary | None = None
    loader_path: list[str] = field(default_factory=list)  # folders the loader searches, in order
    loader_path_real: list[str] = field(default_factory=list)  # the same folders, symlinks resolved
    ld_library_path: list[str] = field(default_factory=list)  # LD_LIBRARY_PATH's folders, as given
    ld_library_path_real: list[str] = field(default_factory=list)  # the same folders, symlinks resolved
    # the folders of each list variable a plan's line may take one out of (PATH, PYTHONPATH, the loader's), as read
    # here: a line that removes a folder writes the variable's own new value, never another's
    variable_folders: dict[str, list[str]] = field(default_factory=dict)
    search_errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    # (a helper program's command, what it did that a program reading its output would meet): CD213 each
    helper_troubles: list[tuple[str, str]] = field(default_factory=list)
    dangling_variables: list[tuple[str, str]] = field(default_factory=list)  # (CUDA_HOME, path)
    unreadable_files: list[tuple[str, str]] = field(default_factory=list)  # (a framework's config file, why)
    nvml_error: str | None = None
    process: ProcessView | None = None  # what a program started in this environment gets
    first_use: FirstUse | None = None  # what a framework needs at its first compilation or library use (p17)
    multi_gpu: MultiGpu | None = None  # links, NCCL and /dev/shm (issue 42)
    plan: Any = None  # the treatment (cudnn_doctor.plan.Plan) every finding's fix was rendered from
    timings_ms: dict[str, float] = field(default_factory=dict)
    doctor_bugs: list[tuple[str, str]] = field(default_factory=list)  # (a probe that raised, the error): CD902 each


def to_jsonable(value: Any) -> Any:
    """Turn records, tuples and dicts into plain JSON types."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    return value
