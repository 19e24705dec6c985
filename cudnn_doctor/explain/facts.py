"""The facts a message is read for, as records: each library, symbol, status, pair of versions, architecture,
phrase, resolver conflict, CPU-only build, compiler, missing package and event, with the line it was read from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Library:
    file: str  # as written: libcudnn_cnn_infer.so.8, cudnn64_8.dll
    name: str  # its row in libraries.toml: cudnn_cnn_infer
    part: str  # driver | cuda | cudnn | framework
    component: str
    failure: str | None  # missing | symbol | version | wrong-arch | broken | init | load-failed | None
    cuda_major: str | None = None
    cudnn_major: str | None = None
    cuda_version: str | None = None  # 11.0 from cudart64_110.dll / libcudart.so.11.0
    framework: str | None = None
    finding: str | None = None  # the library's own finding, where libraries.toml gives one
    refused_finding: str | None = None  # its finding where the loader refuses its file itself (libraries.toml)
    line: int = 0
    source: str = ""
    gpu: bool = True  # part of the GPU stack (false: a framework's CPU-only library, libraries.toml `gpu`)


@dataclass(frozen=True)
class Symbol:
    name: str  # as the loader printed it
    owner: str  # what provides it, from libraries.toml [[symbol]]
    finding: str
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class Status:
    api: str  # cudnn | cudart | driver | nvml
    name: str
    number: int
    meaning: str
    finding: str  # "" when it is no problem of the installation
    how: str  # "name" | "number" | "message"
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class VersionPair:
    subject: str  # cudnn | cudnn-header | driver | cuda | tensorrt | framework
    built: str
    found: str
    line: int = 0


@dataclass(frozen=True)
class Arch:
    compute_capability: str  # "8.6"
    cue: str | None  # the words that say it does not fit, if any
    line: int = 0


@dataclass(frozen=True)
class Phrase:
    text: str
    finding: str
    meaning: str
    source: str
    line: int = 0
    fix: str = ""  # the phrase's own fix, where its row gives one (the finding's general advice does not fit it)


@dataclass(frozen=True)
class Conflict:
    tool: str  # pip | uv | poetry | conda: the package manager whose words say the set of packages is inconsistent
    packages: tuple[str, ...]  # the GPU stack's packages the conflict names (nvidia-cudnn-cu12, torch 2.1.0+cu121, ...)
    pins: tuple[str, ...]  # the resolver's lines that say which package requires which version
    line: int = 0
    source: str = ""
    fix: str = ""  # where the reading names the fix itself (a companion package that replaces the framework)


@dataclass(frozen=True)
class CpuBuild:
    framework: str | None  # the framework whose marker it is, None where the generic grammar read it
    text: str  # the words that say so
    line: int = 0
    source: str = ""
    part: str = "gpu"  # gpu: no GPU support at all; cudnn: a GPU build without its cuDNN support


@dataclass(frozen=True)
class Compiler:
    name: str  # nvcc | ptxas | nvrtc
    cue: str  # its words for an architecture it does not know
    bundled_by: str | None  # the framework that ships this compiler, where the message names it
    line: int = 0
    source: str = ""
    path_variable: str = ""  # the variable that points the framework at another copy of this compiler
    fix: str = ""  # the compiler's own fix ({cc}, {cc_digits}), where its row in libraries.toml gives one


@dataclass(frozen=True)
class NotFound:
    tool: str  # pip | conda | uv
    packages: tuple[str, ...]  # the requested packages of the GPU stack or with a CUDA tag
    line: int = 0
    source: str = ""
    fix: str = ""  # where the knowledge says why no build can exist here: what to do instead


@dataclass(frozen=True)
class Event:
    """A fact in the kernel's, the driver's or a tool's own fixed words (compat/errors.toml [[xid]], [[event]],
    [[ptx_isa]]): an Xid number, a GPU that fell off the bus, a PCIe error, a display watchdog reset, a
    missing compiler tool, a PTX ISA newer than the ptxas that reads it, a retired package."""

    kind: str  # xid | bus | module | aer | tdr | toolchain | budget | placeholder | ptx | host-compiler
    code: str
    text: str  # the words read
    meaning: str
    fix: str
    source: str
    values: tuple[tuple[str, str], ...] = ()
    line: int = 0


@dataclass(frozen=True)
class Facts:
    libraries: tuple[Library, ...] = ()
    symbols: tuple[Symbol, ...] = ()
    statuses: tuple[Status, ...] = ()
    versions: tuple[VersionPair, ...] = ()
    archs: tuple[Arch, ...] = ()
    phrases: tuple[Phrase, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    cpu_builds: tuple[CpuBuild, ...] = ()
    compilers: tuple[Compiler, ...] = ()
    not_found: tuple[NotFound, ...] = ()
    events: tuple[Event, ...] = ()
    frameworks: tuple[str, ...] = ()  # most mentioned first
    lines: tuple[str, ...] = field(default=(), repr=False)  # the lines that can carry a fact (for the catalog)

    @property
    def framework(self) -> str | None:
        return self.frameworks[0] if self.frameworks else None

    def any(self) -> bool:
        return bool(self.libraries or self.symbols or self.statuses or self.versions or self.archs or self.phrases
                    or self.conflicts or self.cpu_builds or self.compilers or self.not_found or self.events)
