"""What a framework needs only at its first compilation or first use of a CUDA library, after its import succeeded
(issue 45, p17), found as the framework's own code finds it (compat/first_use.toml):

- JAX's XLA: the CUDA data folder JAX gives it, the ptxas it runs (each candidate in XLA's order asked `--version`,
  as XLA asks it, side by side, until one XLA would take), the nvlink parallel compilation needs, the libdevice it
  links math functions from;
- NVRTC: the builtins library the libnvrtc a framework gets opens by name at its first compilation, found as the
  loader finds it from that libnvrtc, and its entry function looked for; where one is wrong, NVRTC itself compiles a
  kernel in a child (it needs no GPU) and its words are kept.

Nothing is run where JAX (or a GPU framework with NVRTC) is not installed."""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Sequence
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import CompilerCandidate, FirstUse, Framework, NvrtcBuiltins, ObservedLoad, XlaCompiler

TIMEOUT_S = 5.0  # each ptxas's --version, unless CUDNN_DOCTOR_HELPER_TIMEOUT says (the helper programs' time)
MAX_ASKED = 8  # ptxas files asked --version at the most (XLA stops at the first it takes)
ELF_MAGIC = b"\x7fELF"
MAX_BUILTINS_BYTES = 256 << 20  # a builtins library is a few MB
BY_NAME = "ld.so"  # the loading child's user for a program that opens a library by its soname


def _data() -> dict[str, Any]:
    return load("first_use")


def _jax(frameworks: Sequence[Framework]) -> Framework | None:
    return next((f for f in frameworks if f.name == "jax" and not f.details.get("cpu_only")
                 and not f.details.get("assumed") and f.details.get("site_packages")), None)


def xla_flag(value: str, name: str) -> str | None:
    """The last value XLA_FLAGS (VALUE) gives flag NAME, read as XLA's own parser reads it (variables.
    xla_flag_values: split at XLA's white space, a quoted value whole, nothing after a word that is not a flag);
    "true" for a bare --name, None where it is not there."""
    from cudnn_doctor.variables import xla_flag_values

    found = None
    for flag, _written, given in xla_flag_values(value):
        if flag == name:
            found = "true" if given is None else given
    return found


def jax_cuda_path(site: str, env: dict[str, str]) -> tuple[str | None, str]:
    """(the folder JAX sets as XLA's CUDA data folder, where it came from), as jax/_src/lib's _cuda_path finds it:
    CUDA_ROOT, else the nvidia.cu13 or nvidia.cuda_nvcc package of its Python (a regular package: its folder; a
    namespace package: the first of its folders holding bin/ptxas, else Python's str(None)), else (None, "")."""
    row = _data()["jax_cuda_path"]
    if row["variable"] in env:
        return env[row["variable"]], row["variable"]
    for package in row["packages"]:
        folder = os.path.join(site, "nvidia", package)
        if not os.path.isdir(folder):
            continue
        if os.path.isfile(os.path.join(folder, "__init__.py")) or os.path.isfile(os.path.join(folder, "bin", "ptxas")):
            return folder, f"nvidia.{package}"
        return "None", f"nvidia.{package}"  # JAX's own str(None): a folder of that name, relative to the working one
    return None, ""


def _plugin_folder(site: str) -> tuple[str | None, str]:
    """(the folder of JAX's CUDA plugin library, its CUDA major), where XLA's own code lives."""
    for folder in sorted(glob.glob(os.path.join(glob.escape(site), "jax_plugins", "xla_cuda*")), reverse=True):
        major = re.search(r"xla_cuda(\d+)$", folder)
        if major and os.path.isdir(folder):
            return folder, major.group(1)
    jaxlib = os.path.join(site, "jaxlib")
    return (jaxlib, "12") if os.path.isdir(jaxlib) else (None, "12")


def cuda_roots(site: str, prefix_system: Any) -> list[str]:
    """XLA's CandidateCudaRoots() for the JAX in SITE: the system roots (PREFIX_SYSTEM maps them under the doctor's
    system root), then the folders beside its own library."""
    row = _data()["xla_ptxas"]
    roots = [prefix_system(root) for root in row["system_roots"]]
    plugin, major = _plugin_folder(site)
    if plugin is not None:
        relative = row["plugin_roots"].get(major) or row["plugin_roots"]["12"]
        roots += [os.path.normpath(os.path.join(plugin, path)) for path in relative]
    return list(dict.fromkeys(roots))


def _looks(path: str) -> str:
    """Why XLA would pass over the file at PATH without running it, "" where it is a program to ask."""
    try:
        status = os.stat(path)
    except OSError:
        return "missing"
    if not stat.S_ISREG(status.st_mode):
        return "not a file"
    if not os.access(path, os.X_OK):
        return "not executable"
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError as error:
        return f"not readable ({error.strerror})"
    if head[:4] == ELF_MAGIC:
        from cudnn_doctor.elf import ElfError, host_arch, parse_header

        try:
            header = parse_header(head, status.st_size)
        except ElfError:
            return ""
        if header.arch and header.arch != host_arch():
            return f"built for {header.arch}, not this machine's {host_arch()}"
    return ""


class XlaCompilerSearch:
    """XLA's search for ptxas, started now (its candidates asked `--version` side by side); read later."""

    def __init__(self, frameworks: Sequence[Framework], env: dict[str, str], prefix_system: Any,
                 cwd: str | None = None, also: str | None = None) -> None:
        """ALSO: a ptxas asked in any case (PATH's first, probes/ptxas.py), so that one answer serves both."""
        from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, helper_request, timeout_from_env

        self.view: XlaCompiler | None = None
        self.batch: ChildBatch | None = None
        self.asked: list[tuple[str, str]] = []  # (path, how) asked --version, in XLA's order
        self.same: dict[str, str] = {}  # a place whose file is one asked already (a link to it): that file's answer
        self.before: list[CompilerCandidate] = []  # passed over without running, each at its place
        self.order: list[tuple[str, str]] = []
        jax = _jax(frameworks)
        if jax is None:
            return
        row = _data()["xla_ptxas"]
        site = str(jax.details["site_packages"])
        flags = env.get("XLA_FLAGS", "")
        flag_dir = xla_flag(flags, "xla_gpu_cuda_data_dir")
        cuda_path, cuda_from = jax_cuda_path(site, env)
        if cuda_path is not None:
            data_dir, data_from = cuda_path, cuda_from
        elif flag_dir is not None:
            data_dir, data_from = flag_dir, "XLA_FLAGS"
        else:
            data_dir, data_from = row["default_data_dir"], "XLA's default"
        base = cwd or os.getcwd()

        def here(path: str) -> str:
            return os.path.normpath(os.path.join(base, path))

        roots = cuda_roots(site, prefix_system)
        places = [(here(os.path.join(data_dir, "bin", "ptxas")), "xla_gpu_cuda_data_dir")]
        places += [(here(os.path.join(folder, "ptxas")), "PATH") for folder in env.get("PATH", "").split(os.pathsep)]
        places += [(os.path.join(root, "bin", "ptxas"), "CUDA root") for root in roots]
        self.order = places
        library_roots = [here(data_dir), *roots]
        folder = next((r for r in library_roots if os.path.isdir(os.path.join(r, *_data()["xla_libdevice"]["folder"]
                                                                                .split("/")))), None)
        libdevice_dir = os.path.join(folder, *_data()["xla_libdevice"]["folder"].split("/")) if folder else None
        libdevice = os.path.join(libdevice_dir, _data()["xla_libdevice"]["file"]) if libdevice_dir else None
        parallel = (xla_flag(flags, row["parallel_flag"]) or "false").lower() in ("true", "1")
        nvlink = next((os.path.join(os.path.dirname(path), "nvlink") for path, _how in places
                       if not _looks(os.path.join(os.path.dirname(path), "nvlink"))), None)
        # where parallel compilation is asked, XLA finds nvlink as it finds ptxas and runs its `--version`
        # (compat/first_use.toml [xla_nvlink]): each nvlink in that order is asked it here, in the same batch
        self.nvlink_asked: list[tuple[str, str]] = []
        self.nvlink_before: list[CompilerCandidate] = []
        if parallel:
            for path, how in dict.fromkeys((os.path.join(os.path.dirname(p), "nvlink"), h) for p, h in places):
                why = _looks(path)
                if why == "missing":
                    continue
                if why:
                    self.nvlink_before.append(CompilerCandidate(path, how, "did not run" if "built for" in why or
                                                                "not a file" in why else "not executable", why))
                    continue
                if len(self.nvlink_asked) < MAX_ASKED:
                    self.nvlink_asked.append((path, how))
        self.view = XlaCompiler(
            framework="jax", data_dir=here(data_dir), data_dir_from=data_from, flag_data_dir=flag_dir,
            places=len(places), nvlink=nvlink,
            parallel=parallel,
            driver_fallback=(xla_flag(flags, row["driver_fallback_flag"]) or "false").lower() in ("true", "1"),
            libdevice_dir=libdevice_dir, libdevice=libdevice if libdevice and os.path.isfile(libdevice) else None,
            libdevice_unusable=_unusable(libdevice), roots=tuple(library_roots))
        requests: list[ChildRequest] = []
        seconds = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", TIMEOUT_S)
        seen: set[str] = set()
        asked_real: dict[str, str] = {}
        asked_also = False
        for path, how in places:
            if path in seen:
                continue
            if len(requests) >= MAX_ASKED and (also is None or asked_also):
                break
            if len(requests) >= MAX_ASKED and os.path.realpath(path) != os.path.realpath(also or ""):
                continue
            seen.add(path)
            why = _looks(path)
            if why == "missing":
                continue
            real = os.path.realpath(path)
            if not why and real in asked_real:  # /usr/local/cuda/bin/ptxas and /usr/local/cuda-13.0/bin/ptxas
                self.same[path] = asked_real[real]
                continue
            asked_real.setdefault(real, path)
            if why:
                self.before.append(CompilerCandidate(path, how, "did not run" if "built for" in why or "not a file" in
                                                     why else "not executable", why))
                continue
            self.asked.append((path, how))
            asked_also = asked_also or (also is not None and real == os.path.realpath(also))
            # as XLA starts it (tsl::SubProcess, posix_spawnp, compat/first_use.toml [xla_ptxas] `start`): the file
            # itself, in this environment; one without '#!' that is no ELF fails to start (ENOEXEC), as in XLA
            requests.append(helper_request((path, "--version"), env, f"{path} --version", seconds))
        self.ptxas_requests = len(requests)
        requests += [helper_request((path, "--version"), env, f"{path} --version", seconds)
                     for path, _how in self.nvlink_asked]
        if requests:
            self.batch = ChildBatch(requests, deadline=deadline_in(seconds))

    def has(self, path: str) -> bool:
        """Whether PATH's file (or the file a link there names) is one this search looks at: asked, or passed over
        without running."""
        real = os.path.realpath(path)
        return any(os.path.realpath(p) == real for p, _how in self.asked) or \
            any(os.path.realpath(c.path) == real for c in self.before)

    def answer_of(self, path: str) -> Any:
        """The answer PATH's file gave this search's `--version` (a ChildAnswer), or None where it was not run."""
        real = os.path.realpath(path)
        answers = self.batch.answers() if self.batch is not None else []
        return next((a for (p, _how), a in zip(self.asked, answers, strict=False) if os.path.realpath(p) == real),
                    None)

    def result(self, path_ptxas: str | None = None) -> XlaCompiler | None:
        """The search as XLA makes it: the candidates looked at up to the one it takes. PATH_PTXAS: the first ptxas
        on PATH (probes/ptxas.py), to say whether it is the one used."""
        import dataclasses

        if self.view is None:
            return None
        row = _data()["xla_ptxas"]
        every = self.batch.answers() if self.batch is not None else []
        answers, nvlink_answers = every[:self.ptxas_requests], every[self.ptxas_requests:]
        judged: dict[str, CompilerCandidate] = {c.path: c for c in self.before}
        for (path, how), answer in zip(self.asked, answers, strict=False):
            judged[path] = _judged(path, how, answer, row)
        hows = dict(self.order)
        for path, first in self.same.items():
            if first in judged:
                judged[path] = dataclasses.replace(judged[first], path=path, how=hows.get(path, judged[first].how))
        looked: list[CompilerCandidate] = []
        used = None
        for path, _how in self.order:
            candidate = judged.get(path)
            if candidate is None or candidate in looked:
                continue
            looked.append(candidate)
            if candidate.verdict == "used":
                used = candidate
                break
            if candidate.verdict == "hangs":  # XLA waits there: it never looks further
                break
        nvlinks = self._nvlinks(nvlink_answers)
        linker = next((c for c in nvlinks if c.verdict == "used"), None)
        return dataclasses.replace(
            self.view, nvlink_candidates=nvlinks, nvlink=linker.path if linker else None if nvlinks else self.view.nvlink,
            ptxas=tuple(looked), ptxas_used=used.path if used else None,
            ptxas_version=used.version if used else None,
            path_ptxas_used=bool(used and path_ptxas and os.path.realpath(used.path) == os.path.realpath(path_ptxas)))


    def _nvlinks(self, answers: list[Any]) -> tuple[CompilerCandidate, ...]:
        """The nvlink files XLA looks at, in its order, up to the one whose `--version` it takes (FindNvlinkExecutable:
        11.8.0 or later, compat/first_use.toml [xla_nvlink]) or one it would wait on for ever."""
        row = {**_data()["xla_ptxas"], **_data()["xla_nvlink"]}
        judged = {c.path: c for c in self.nvlink_before}
        for (path, how), answer in zip(self.nvlink_asked, answers, strict=False):
            judged[path] = _judged(path, how, answer, row)
        looked: list[CompilerCandidate] = []
        for path, _how in dict.fromkeys((os.path.join(os.path.dirname(p), "nvlink"), h) for p, h in self.order):
            candidate = judged.get(path)
            if candidate is None or candidate in looked:
                continue
            looked.append(candidate)
            if candidate.verdict in ("used", "hangs"):
                break
        return tuple(looked)


def _hang_words(answer: Any, row: dict[str, Any]) -> str:
    if answer.timed_out:
        said = f"its `--version` did not end within {answer.wall_ms / 1000:.1f} s (stopped there, with what it started)"
    else:
        said = (f"its `--version` exited ({_exit_words(answer.exit_code)}) but left a process holding its output "
                f"still {answer.wall_ms / 1000:.1f} s after it started (stopped then, with the rest of what it started)")
    return (f"{said}: {row['hang']}")


def _unusable(path: str | None) -> str | None:
    """What stands at PATH that XLA's FileExists finds (access(F_OK): through links) but LLVM cannot read as bitcode,
    in words: a FIFO, a folder, a device, or a file whose first bytes are not a bitcode magic (compat/first_use.toml
    [xla_libdevice] magic: empty, cut, another file); None where nothing is there (a dangling link or a loop
    included, which XLA's FileExists does not find either) or the file begins as bitcode does."""
    import stat

    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(mode):
        return "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "a device file" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "no regular file"
    from cudnn_doctor.user_files import UnreadableFile, read_user_head

    try:
        head = read_user_head(path, 4)
    except (UnreadableFile, OSError):
        return None  # not readable here (another user's file): not judged
    magics = [bytes.fromhex(magic) for magic in _data()["xla_libdevice"]["magic"]]
    if any(head.startswith(magic) for magic in magics):
        return None
    return f"a file that is not LLVM bitcode ({'empty' if not head else 'it begins ' + head.hex(' ')})"


def _exit_words(code: int | None) -> str:
    from cudnn_doctor.child import describe_exit

    return "status 0" if code == 0 else describe_exit(code)


def _judged(path: str, how: str, answer: Any, row: dict[str, Any]) -> CompilerCandidate:
    """What XLA makes of PATH's answer to --version (GetToolVersion, then FindCudaExecutable's checks)."""
    from cudnn_doctor.versions import version_tuple

    if answer.timed_out and not (answer.error or "").startswith(("the doctor was stopped", "not started")) or \
            "stdout" in answer.held:
        # XLA reads the output of `--version` to its end, then waits for the program (tsl::SubProcess::Communicate,
        # poll() with no timeout): one that never ends, or that leaves a process holding its output, holds XLA there
        return CompilerCandidate(path, how, "hangs", _hang_words(answer, row))
    if answer.exit_code != 0 or answer.error and answer.exit_code is None:
        words = (answer.stderr_tail or answer.error or answer.stdout or "").strip().splitlines()
        said = words[-1][:200] if words else f"exit status {answer.exit_code}"
        return CompilerCandidate(path, how, "did not run", f"`--version` failed ({said})")
    found = re.search(row["version_pattern"], answer.stdout or "", re.ASCII)  # RE2's \d and \b, as XLA's: 0-9 only
    if found is None:
        return CompilerCandidate(path, how, "no version", "its `--version` names no V<major>.<minor>.<patch>")
    version = ".".join(found.groups())
    if (version_tuple(version) or ()) < (version_tuple(row["minimum"]) or ()):
        return CompilerCandidate(path, how, "too old", f"V{version}, older than XLA's minimum {row['minimum']}",
                                 version)
    if version in row["excluded"]:
        return CompilerCandidate(path, how, "excluded", f"V{version}, a release XLA passes over (known bugs)", version)
    return CompilerCandidate(path, how, "used", f"V{version}", version)


# --- NVRTC's builtins ---------------------------------------------------------------------------------------------

def nvrtc_builtins(frameworks: Sequence[Framework], loads: Sequence[ObservedLoad], env: dict[str, str],
                   default_dirs: Sequence[str], cache: dict[str, list[str]]) -> tuple[NvrtcBuiltins, ...]:
    """For each GPU framework with an NVRTC: the builtins its libnvrtc opens at its first compilation, as the loader
    finds it (LD_LIBRARY_PATH, then libnvrtc's RUNPATH, then the cache and the system folders), unless the
    framework's own code loaded its wheel's copy first; where one is wrong, NVRTC's own words compiling a kernel."""
    data = _data()
    users = {row["framework"]: row for row in data["nvrtc_user"]}
    out = []
    for framework in frameworks:
        row = users.get(framework.name)
        site = str(framework.details.get("site_packages") or "")
        if row is None or not site or framework.details.get("cpu_only") or framework.details.get("assumed"):
            continue
        own = _own_nvrtc(site)
        seen = next((lib for load in loads if load.user == framework.name for lib in load.libraries
                     if lib.soname.startswith(data["nvrtc"]["stem"]) and lib.ok and lib.path), None)
        nvrtc = seen.path if seen is not None and seen.path else own
        if not nvrtc or not _regular(nvrtc):
            continue  # a FIFO under its name is never opened (the loader's own findings say what it is)
        release = (seen.version if seen is not None and seen.version else None) or _nvrtc_release(nvrtc, site)
        if not release:
            continue
        major, minor = release.split(".")[:2]
        wanted = data["nvrtc"]["builtins"].format(major=major, minor=minor)
        entry = data["nvrtc"]["entry"].format(major=major, minor=minor)
        own_builtins = os.path.join(os.path.dirname(own), wanted) if own else ""
        found: str | None
        searched: tuple[str, ...]
        if row["preloads_builtins"] and own and os.path.realpath(nvrtc) == os.path.realpath(own) and \
                os.path.isfile(own_builtins):
            # its own code loads its wheel's copy by full path first: the loader answers NVRTC's open with it
            found, how, searched = own_builtins, "preloaded", (os.path.dirname(own_builtins),)
        else:
            found, how, searched = _as_loader_finds(wanted, nvrtc, env, default_dirs, cache)
        problem = _builtins_problem(found, wanted, entry)
        # NVRTC asked only where what it would open is a file: a FIFO would hold its open (and the child) for ever
        said = _nvrtc_said(nvrtc, env, found if how == "preloaded" else None) \
            if problem and (found is None or _regular(found)) else ""
        out.append(NvrtcBuiltins(framework.name, nvrtc, f"{major}.{minor}", wanted, found, how, problem, said,
                                 searched, seen.via if seen is not None and seen.path == nvrtc else ""))
    by_name = next((lib for load in loads if load.user == BY_NAME for lib in load.libraries
                    if lib.soname.startswith(data["nvrtc"]["stem"]) and lib.ok and lib.path and _regular(lib.path)),
                   None)
    if by_name is not None and by_name.path and not any(seen.nvrtc == by_name.path for seen in out):
        release = by_name.version or _nvrtc_release(by_name.path, "")
        if release and release.count(".") >= 1:
            major, minor = release.split(".")[:2]
            wanted = data["nvrtc"]["builtins"].format(major=major, minor=minor)
            found, how, searched = _as_loader_finds(wanted, by_name.path, env, default_dirs, cache)
            problem = _builtins_problem(found, wanted, data["nvrtc"]["entry"].format(major=major, minor=minor))
            said = _nvrtc_said(by_name.path, env) if problem and (found is None or _regular(found)) else ""
            out.append(NvrtcBuiltins(BY_NAME, by_name.path, f"{major}.{minor}", wanted, found, how, problem, said,
                                     searched, by_name.via))
    return tuple(out)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _own_nvrtc(site: str) -> str | None:
    found = sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib", "libnvrtc.so.[0-9]*")))
    return next((path for path in found if re.search(r"libnvrtc\.so\.\d+$", path)), None)


def _nvrtc_release(path: str, site: str) -> str | None:
    """NVRTC's major.minor without reading its 60 MB: its real file's name (a toolkit's libnvrtc.so.12.6.85), the
    release of the nvidia-* wheel whose RECORD lists it, or the builtins file beside it (a wheel's
    libnvrtc-builtins.so.12.6); None where none says."""
    from cudnn_doctor.probes.loading import _owner
    from cudnn_doctor.versions import release_in_file_name

    named = release_in_file_name(os.path.basename(os.path.realpath(path)))
    if named and named.count(".") >= 1:
        return ".".join(named.split(".")[:2])
    owner = _owner(site, path) if site and path.startswith(site) else None
    if owner and re.match(r"\d+\.\d+", owner[1]):
        return ".".join(owner[1].split(".")[:2])
    beside = sorted(glob.glob(os.path.join(glob.escape(os.path.dirname(path)), "libnvrtc-builtins.so.[0-9]*.[0-9]*")))
    found = re.search(r"\.so\.(\d+)\.(\d+)$", beside[0]) if beside else None
    return f"{found.group(1)}.{found.group(2)}" if found else None


def _as_loader_finds(name: str, nvrtc: str, env: dict[str, str], default_dirs: Sequence[str],
                     cache: dict[str, list[str]]) -> tuple[str | None, str, tuple[str, ...]]:
    """The file the loader gives libnvrtc (at NVRTC) for NAME: LD_LIBRARY_PATH, then its DT_RUNPATH ($ORIGIN
    expanded), then the cache, then the system folders; (file or None, how, the folders searched)."""
    from cudnn_doctor.elf import ElfError, read_elf

    origin = os.path.dirname(nvrtc)
    try:
        info = read_elf(nvrtc)
        runpath = [entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) or "."
                   for entry in (info.runpath or info.rpath)]
    except (ElfError, OSError):
        runpath = []
    order = [(folder or ".", "LD_LIBRARY_PATH") for folder in re.split(r"[:;]", env.get("LD_LIBRARY_PATH", ""))
             if env.get("LD_LIBRARY_PATH")]
    order += [(folder, "RUNPATH") for folder in runpath if folder]
    for folder, how in order:
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate):
            return candidate, how, tuple(f for f, _ in order)
    for candidate in cache.get(name, []):
        if os.path.exists(candidate):
            return candidate, "the loader's cache or a system folder", tuple(f for f, _ in order)
    for folder in default_dirs:
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate):
            return candidate, "the loader's cache or a system folder", tuple(f for f, _ in order)
    return None, "nowhere", tuple([*(f for f, _ in order), *default_dirs])


def _builtins_problem(found: str | None, wanted: str, entry: str) -> str:
    """What NVRTC would refuse in FOUND: none found, not a library, or no entry function of its release."""
    if found is None:
        return f"no {wanted} where the loader looks for it from this NVRTC"
    try:
        status = os.stat(found)
        if not stat.S_ISREG(status.st_mode):
            return f"{found} is not a file"
        if status.st_size > MAX_BUILTINS_BYTES:
            return ""
        with open(found, "rb") as stream:
            import mmap

            if status.st_size < 64:
                return f"{found} is not a library (too short)"
            with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data[:4] != ELF_MAGIC:
                    return f"{found} is not a library (not ELF)"
                if data.find(entry.encode() + b"\0") < 0 and data.find(entry.encode() + b"@") < 0:
                    return f"{found} has no {entry} (another release's builtins, or another library)"
    except (OSError, ValueError) as error:
        return f"{found} cannot be read ({getattr(error, 'strerror', None) or error})"
    return ""


NVRTC_CHILD = r"""
import ctypes, os, sys
if len(sys.argv) > 2:  # the framework's own code loads its builtins by full path first (torch); it ignores a failure
    try:
        ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass
lib = ctypes.CDLL(sys.argv[1])
prog = ctypes.c_void_p()
source = b'extern "C" __global__ void k(float *x) { x[0] = 1.0f; }'
lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"k.cu", 0, None, None)
status = lib.nvrtcCompileProgram(prog, 0, None)
size = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(max(size.value, 1))
lib.nvrtcGetProgramLog(prog, log)
lib.nvrtcGetErrorString.restype = ctypes.c_char_p
words = (lib.nvrtcGetErrorString(status) or b"").decode(errors="replace")
data = (words + ": " + " ".join(log.value.decode(errors="replace").split()) + "\n").encode()
fd = _stdio["answer_fd"]()  # its own channel: what a preloaded library prints on stdout is not the answer
while data:
    data = data[os.write(fd, data):]
"""


def _nvrtc_said(nvrtc: str, env: dict[str, str], preloaded: str | None = None) -> str:
    """NVRTC's own answer compiling one tiny kernel (no GPU needed) in a child with ENV, PRELOADED (the framework's
    own builtins, where its code loads them first) loaded before it: its status and log."""
    import sys

    from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, timeout_from_env, with_stdio

    # a library child: CUDNN_DOCTOR_PROBE_TIMEOUT where it is set (as for each library child), else 5 s
    seconds = timeout_from_env("CUDNN_DOCTOR_PROBE_TIMEOUT", TIMEOUT_S)
    argv = (sys.executable, "-I", "-c", with_stdio(NVRTC_CHILD), nvrtc, *((preloaded,) if preloaded else ()))
    batch = ChildBatch([ChildRequest(argv, env, seconds, "NVRTC's first compilation", answer_channel=True)],
                       deadline=deadline_in(seconds), background=False)
    [answer] = batch.answers()
    text = (answer.answer or "").strip()
    if text:
        return text.splitlines()[-1][:400]
    return (answer.error or answer.stderr_tail or "").strip()[:400]


def first_use(xla: XlaCompiler | None, nvrtc: tuple[NvrtcBuiltins, ...]) -> FirstUse | None:
    return FirstUse(xla=xla, nvrtc=nvrtc) if xla is not None or nvrtc else None
