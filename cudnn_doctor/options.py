"""Every command's options, declared once, as data: one table per command. From these tables cli.py builds the
argparse parser and its help (grouped, defaults and variables shown), completion offers names and values,
`fix` takes check's targets (the same rows), and render/next_step.py writes `fix --yes` with check's targets.
Pure data: it imports nothing of the package. Each row is a NamedTuple (immutable, as a table of knowledge is):
its class costs a tenth of a frozen dataclass's to make, on the start of every command."""

from __future__ import annotations

from typing import Any, NamedTuple

# how an option takes its value
FLAG = "flag"  # store_true
VALUE = "value"  # one value
REPEATED = "repeated"  # repeatable, a list of values
SWITCH = "switch"  # --strict / --no-strict: True, False or None (not given)
ARGUMENT = "argument"  # positional, optional (nargs="?")
ARGUMENTS = "arguments"  # positional, one or more (nargs="+")

# the help groups, in the order help shows them
GENERAL, OUTPUT, TARGETS, WHAT, WHERE, SAFETY = ("Options", "Output", "What is checked and judged", "What is run",
                                                 "Where and from what", "Safety")


class Option(NamedTuple):
    """One option of one command: its names (a positional's name is its dest), where its value goes (DEST, the
    parameter of the command's body), how it takes a value, its help, and what help and completion show."""

    names: tuple[str, ...]
    dest: str
    help: str
    takes: str = VALUE
    metavar: str | None = None
    default: Any = None
    convert: str | None = None  # "integer" | "decimal": knowledge/inputs.py's readers
    complete: str | None = None  # completion.py's complete_<NAME>
    group: str = GENERAL
    env: str | None = None  # the CUDNN_DOCTOR_* variable that also sets it
    config: str | None = None  # its key in [tool.cudnn-doctor]
    show_default: bool = False

    @property
    def positional(self) -> bool:
        return self.takes in (ARGUMENT, ARGUMENTS)


def _json(schema: str, more: str = "") -> Option:
    return Option(("--json",), "json_output", f"Print one JSON object ({schema}){more}.", FLAG, group=OUTPUT)


QUIET = Option(("-q", "--quiet"), "quiet", "Print nothing when the command succeeds (exit 0); its whole output when "
               "it does not.", FLAG, group=OUTPUT)
VERBOSE = Option(("-v", "--verbose"), "verbose", "Show every detail (and the traceback of a bug of ours).", FLAG,
                 group=OUTPUT)
YES = Option(("-y", "--yes"), "yes", "Do not ask before changing anything.", FLAG, group=SAFETY)
DRY_RUN = Option(("--dry-run",), "dry_run", "Show the plan and stop.", FLAG, group=SAFETY)

# ------------------------------------------------------------------------------------------------ check and fix
# What a check looks at and judges: check's and fix's (the same targets, the same meaning); `fix --yes` written
# after a check report carries these (render/next_step.py)
CHECK_TARGETS: tuple[Option, ...] = (
    Option(("--require",), "require", "Fail (exit 1) unless met: 'cudnn>=9.1', 'cuda>=12.4', 'driver>=550', 'gpu', "
           "'torch>=2.4'. Repeatable; the variable takes ';' between specs.", REPEATED, "SPEC", group=TARGETS,
           env="CUDNN_DOCTOR_REQUIRE", config="require"),
    Option(("--select",), "select", "Only these findings count (CD306, or a prefix: CD3). Repeatable.", REPEATED,
           "CODE|PREFIX", complete="code", group=TARGETS, env="CUDNN_DOCTOR_SELECT", config="select"),
    Option(("--ignore",), "ignore", "These findings do not count: not shown, not in the exit code or CI formats, "
           "listed as ignored in the JSON. Repeatable.", REPEATED, "CODE|PREFIX", complete="code", group=TARGETS,
           env="CUDNN_DOCTOR_IGNORE", config="ignore"),
    Option(("--search-path",), "search_path", "Another folder to look for cuDNN in. Repeatable.", REPEATED, "DIR",
           group=TARGETS),
    Option(("--framework",), "framework", "Check a framework that is not installed, e.g. tensorflow==2.15.0.",
           REPEATED, "NAME[==VER]", group=TARGETS),
    Option(("--project",), "project", "Maven/Gradle project to read DL4J backends from: its folder, its pom.xml or "
           "build.gradle, or a folder of projects (default: the working folder; its subfolders too at a "
           "repository's top).", VALUE, "DIR|FILE", group=TARGETS),
    Option(("--python",), "python", "Inspect this Python environment's packages (a folder like .venv, or its "
           "bin/python) instead of the environments around; for fix, the environment treated (its pip installs).",
           VALUE, "ENV|PATH", group=TARGETS),
)

CHECK: tuple[Option, ...] = (
    _json("schema cudnn-doctor/report/1", "; the same as --format json"),
    Option(("--format",), "output_format", "{formats}", VALUE, "FORMAT", complete="format", group=OUTPUT,
           env="CUDNN_DOCTOR_FORMAT", config="format"),
    Option(("-o", "--output"), "output", "Write the {documents} output to FILE, atomically (a temporary file beside "
           "it, then a rename), instead of stdout.", VALUE, "FILE", group=OUTPUT),
    Option(("--junit-xml",), "junit_xml", "Also write JUnit XML (one test case per area) to FILE.", VALUE, "FILE",
           group=OUTPUT),
    Option(("-q", "--quiet"), "quiet", "Print only errors and warnings (nothing when healthy).", FLAG, group=OUTPUT),
    VERBOSE,
    Option(("--strict",), "strict", "Warnings fail too (exit 1).", SWITCH, group=TARGETS, env="CUDNN_DOCTOR_STRICT",
           config="strict"),
    *CHECK_TARGETS,
    Option(("--deep",), "deep", "Also import each framework in a child process to confirm which cuDNN it really "
           "loads (slow).", FLAG, group=TARGETS),
)

FIX: tuple[Option, ...] = (
    Option(("-y", "--yes"), "yes", "Apply the steps the doctor can run, then check again.", FLAG, group=SAFETY),
    _json("schema cudnn-doctor/plan/1"),
    Option(("--shell",), "shell", "The shell the environment lines are written for.", VALUE,
           "bash|zsh|fish|powershell|cmd|user", default="bash", complete="shell", group=OUTPUT, show_default=True),
    QUIET, VERBOSE,
    *CHECK_TARGETS,
)

# ------------------------------------------------------------------------------------------ compat, explain, image
COMPAT: tuple[Option, ...] = (
    Option(("framework",), "framework", "e.g. tensorflow==2.15.0, torch==2.5.1+cu124, jax==0.9.2, "
           "onnxruntime-gpu==1.23.2, cudnn==9.19.0", ARGUMENT, "FRAMEWORK[==VERSION]"),
    Option(("--cuda",), "cuda", "CUDA version to judge, e.g. 12.2 (12: any 12.x).", group=WHAT),
    Option(("--cudnn",), "cudnn", "cuDNN version to judge, e.g. 8.9.7 (9: any 9.x).", group=WHAT),
    Option(("--driver",), "driver", "Driver version to judge, e.g. 535.54.03.", group=WHAT),
    Option(("--compute-capability",), "compute_capability", "GPU compute capability, e.g. 8.6 or sm_86.", group=WHAT),
    Option(("--os",), "os_name", "linux, windows or macos.", default="linux", complete="os", group=WHAT,
           show_default=True),
    Option(("--artifact",), "artifact", "DL4J backend, e.g. nd4j-cuda-10.2.", group=WHAT),
    Option(("--list",), "list_table", "Print a whole table: a framework's (tensorflow, pytorch, ...: each of "
           "compat/rules.toml), cudnn or cuda.", VALUE, "TABLE", complete="table", group=OUTPUT),
    _json("schema cudnn-doctor/compat/1"),
    QUIET,
    Option(("-v", "--verbose"), "verbose", "Show the source of every row.", FLAG, group=OUTPUT),
)

EXPLAIN: tuple[Option, ...] = (
    Option(("query",), "query", "A finding code (CD301) or an error message; - reads standard input.", ARGUMENT,
           "CODE_OR_MESSAGE", complete="code"),
    Option(("--from-file",), "from_file", "Read the message from a file.", VALUE, "LOG"),
    Option(("--list",), "list_all", "List the finding codes (those starting with CODE_OR_MESSAGE, if given: CD3).",
           FLAG),
    Option(("--offline-only",), "offline_only", "Only the catalog: do not probe this machine.", FLAG),
    Option(("--by-resemblance",), "by_resemblance", "Where no rule reads the message, answer by its resemblance to "
           "known reports (marked so, with their threads; measured to transfer little: off by default).", FLAG),
    _json("schema cudnn-doctor/explain/1"),
    QUIET,
    Option(("-v", "--verbose"), "verbose", "Show every related finding.", FLAG, group=OUTPUT),
)

IMAGE: tuple[Option, ...] = (
    Option(("ref",), "ref", "A `docker save` archive, an OCI layout folder (or its tar), or a registry reference "
           "as docker reads it: nvidia/cuda:TAG, docker.io/..., HOST[:PORT]/NAME[:TAG][@DIGEST].", ARGUMENT, "IMAGE"),
    Option(("--platform",), "platform", "Which image of a multi-platform one: linux/amd64, linux/arm64 (default: "
           "this machine's).", VALUE, "OS/ARCH"),
    Option(("--strict",), "strict", "Warnings fail too (exit 1).", FLAG),
    _json("schema cudnn-doctor/image/1"),
    QUIET,
    Option(("-v", "--verbose"), "verbose", "Show the image's variables and labels.", FLAG, group=OUTPUT),
)

# --------------------------------------------------------------------------------------------------------- fleet
FLEET_MERGE: tuple[Option, ...] = (
    Option(("reports",), "reports", "Nodes' `check --json` reports, or folders of *.json reports.", ARGUMENTS,
           "REPORT.json... | DIR"),
    _json("schema cudnn-doctor/fleet/1"),
    QUIET, VERBOSE,
)

FLEET_RUN: tuple[Option, ...] = (
    Option(("--slurm",), "slurm", "Run through srun, once per node (the only engine for now).", FLAG),
    Option(("--command",), "command", "How a node runs the check (default: this Python, `-m cudnn_doctor check "
           "--json`).", VALUE, "CMD"),
    Option(("--deadline",), "deadline_s", "Stop waiting for nodes after this.", VALUE, "SECONDS", default=600.0,
           convert="decimal", show_default=True),
    Option(("--keep",), "keep", "Keep every node's report in DIR.", VALUE, "DIR"),
    _json("schema cudnn-doctor/fleet/1"),
    QUIET, VERBOSE,
)

# --------------------------------------------------------------------------------------------------------- bench
BENCH: tuple[Option, ...] = (
    Option(("--workload",), "workload", "Convolution (forward, backward-data, backward-filter), LSTM, or both.",
           VALUE, "conv|lstm|all", default="all", complete="workload", group=WHAT, show_default=True),
    Option(("--dtype",), "dtype", "Data type; tf32 is float32 data on TF32 tensor cores.", VALUE,
           "fp32|tf32|fp16|bf16", default="fp32", complete="dtype", group=WHAT, show_default=True),
    Option(("--layout",), "layout", "Convolution tensor layout.", VALUE, "nchw|nhwc", default="nchw",
           complete="layout", group=WHAT, show_default=True),
    Option(("--size",), "size", "tiny: a smoke test; small: CIFAR-10 layer, LSTM 512; medium: ResNet 3x3 layer "
           "32x64x56x56, LSTM 512 (seq 100, batch 64); large: ResNet conv4 layer, LSTM 1024.", VALUE,
           "tiny|small|medium|large", default="medium", complete="size", group=WHAT, show_default=True),
    Option(("--workspace-limit",), "workspace_limit", "Largest cuDNN workspace to allow; 0 picks only algorithms "
           "that need none (NO_WORKSPACE).", VALUE, "MB", convert="decimal", group=WHAT),
    Option(("--api",), "api", "Convolution API: graph (cuDNN's backend API, autotuned, as PyTorch), legacy "
           "(cudnnFind*, as TensorFlow and cuDNN 7), or auto: graph where it works.", VALUE, "auto|graph|legacy",
           default="auto", complete="api", group=WHAT, show_default=True),
    Option(("--repeats",), "repeats", "Timed samples per workload (median).", VALUE, "N", default=20,
           convert="integer", group=WHAT, show_default=True),
    Option(("--no-cpu",), "no_cpu", "Skip the CPU baseline (results are still checked, on a slice of the output).",
           FLAG, group=WHAT),
    Option(("--device",), "device", "Which GPU, or all of them in turn.", VALUE, "N|all", default="0",
           group=WHERE, show_default=True),
    Option(("--cudnn",), "cudnn", "Use this libcudnn.so.", VALUE, "PATH", group=WHERE),
    Option(("--cudart",), "cudart", "Use this libcudart.so.", VALUE, "PATH", group=WHERE),
    Option(("--p2p",), "peer_copies", "Copy bandwidth between every pair of GPUs and direction, against each pair's "
           "link (one GPU: its device-to-device copy, as a reference).", FLAG, group=WHAT),
    _json("schema cudnn-doctor/bench/1; with --p2p cudnn-doctor/p2p/1"),
    QUIET, VERBOSE,
)

# ------------------------------------------------------------------------------------------- install, uninstall
INSTALL: tuple[Option, ...] = (
    Option(("--from",), "location", "A cuDNN archive (.tar.xz, .tgz, .zip) or wheel (.whl), as a local path or a "
           "URL.", VALUE, "PATH_OR_URL", group=WHAT),
    Option(("--version",), "version", "A cuDNN release from NVIDIA's redistributable manifest.", VALUE, "X.Y.Z",
           group=WHAT),
    Option(("--cuda",), "cuda", "The CUDA major of the build (default: the toolkit's, else the driver's, else the "
           "newest).", VALUE, "MAJOR", convert="integer", group=WHAT),
    Option(("--mirror",), "mirror", "Base URL, or a local folder, that replaces NVIDIA's redist site (air-gapped "
           "sites).", VALUE, "URL", group=WHAT, env="CUDNN_DOCTOR_MIRROR"),
    Option(("--sha256",), "sha256", "Refuse the archive unless it has this sha256.", VALUE, "HEX", group=SAFETY),
    Option(("--no-verify",), "no_verify", "Install an archive whose manifest entry lists no sha256 or size "
           "(unchecked; a warning says so).", FLAG, group=SAFETY),
    Option(("--prefix",), "prefix", "Where to install (default: the CUDA toolkit check picks).", VALUE, "DIR",
           group=WHERE),
    Option(("--os",), "os_name", "Plan for another OS's layout (plan only).", VALUE, "linux|windows|macos",
           complete="os", group=WHERE),
    DRY_RUN, YES,
    Option(("--replace",), "replace_majors", "Replace another cuDNN major in the prefix whole (backed up; uninstall "
           "restores it) instead of refusing.", FLAG, group=SAFETY),
    Option(("--force",), "force", "Install a cuDNN built for another CUDA major than the prefix's toolkit (check "
           "will call it CD306).", FLAG, group=SAFETY),
    _json("cudnn-doctor/install/1"),
    QUIET,
    Option(("-v", "--verbose"), "verbose", "List every file of the plan.", FLAG, group=OUTPUT),
)

UNINSTALL: tuple[Option, ...] = (
    Option(("--prefix",), "prefix", "The prefix an install was made into (required).", VALUE, "DIR", group=WHERE),
    DRY_RUN, YES,
    Option(("--force",), "force", "Remove installed files even if changed since.", FLAG, group=SAFETY),
    _json("cudnn-doctor/install/1"),
    QUIET, VERBOSE,
)

REQUIRED = {("uninstall", "prefix")}  # options a command cannot run without


def option_words(options: tuple[Option, ...]) -> dict[str, Option]:
    """Each option string of OPTIONS (`-o`, `--output`), with its option."""
    return {name: option for option in options if not option.positional for name in option.names}
