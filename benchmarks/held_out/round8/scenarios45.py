"""Round 8's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5, 6 and 7 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round8/scenarios45.py --out "$OUT/s8" \
        --quiet-cases --budget-s 540

Every scenario bends ONE shell's environment: variables, soft limits and other shell settings (umask, an ignored
signal), files it writes under /tmp/cudnn-doctor-scenarios/s8-* (copies, links, small scripts, a socket), the working
folder. Sources are found on the machine at build time (torch's pip NVIDIA libraries under site-packages/nvidia, the
loader's cache, the system cuDNN, the CUDA toolkit under /usr/local, the loader's own --help for its glibc-hwcaps
levels); a scenario whose source is missing is left out, and a prediction that depends on the machine (the glibc
release, whether the run is root, the interpreter's platlibdir) is made from the machine. No installed file is
written, nothing outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only, as of round 8) that a right answer
names if the setup fails. Where no code fits, `causes` is empty and `cause_class` says the class in words; where a
code fits only partly, both are given. `predicted` is the author's guess before any run; the judges decide. Each
scenario also carries `source` (an attribute the harness ignores): where users meet the class.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

from gpu_scenarios import SCRATCH, Scenario, scratch

GONE = "/proc/cudnn-doctor-s8-nowhere"  # a folder nobody (root included) can create files in
LOADER = "/lib64/ld-linux-x86-64.so.2"


# ------------------------------------------------------------------------------------------------ helpers
def _ldconfig() -> dict[str, str]:
    """soname -> path from the loader's cache (x86-64 entries; the first listed wins)."""
    try:
        text = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if match and "x86-64" in match.group(2):
            found.setdefault(match.group(1), match.group(3))
    return found


def _glibc() -> tuple[int, ...]:
    """The C library's release, e.g. (2, 39); () if unknown."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        text = ""
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else ()


def _hwcaps_levels() -> list[str]:
    """The glibc-hwcaps subfolders this machine's loader searches, best first (glibc >= 2.33), from its --help."""
    try:
        text = subprocess.run([LOADER, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    part = text.split("Subdirectories of glibc-hwcaps directories", 1)
    if len(part) < 2:
        return []
    block = part[1].split("\n\n", 1)[0]
    return re.findall(r"^\s+(x86-64-v\d)\s+\(supported, searched\)", block, re.M)


def _fresh(name: str) -> Path:
    """scratch(NAME), after giving back the modes a previous build took away (a folder of mode 0111 or 000 cannot be
    emptied by a non-root user otherwise)."""
    path = SCRATCH / name
    if path.exists():
        for root, dirs, _files in os.walk(path):
            for entry in dirs:
                try:
                    os.chmod(os.path.join(root, entry), 0o755)
                except OSError:
                    pass
    return scratch(name)


def _script(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


def _in_venv() -> bool:
    """The harness's python runs in a virtual environment without the user site (the judges run the same python)."""
    if sys.prefix == getattr(sys, "base_prefix", sys.prefix):
        return False
    config = Path(sys.prefix) / "pyvenv.cfg"
    try:
        return "include-system-site-packages = true" not in config.read_text().lower()
    except OSError:
        return True


def _head_copy(source: str, target: Path, size: int) -> None:
    """The first SIZE bytes of SOURCE written to TARGET (SOURCE is only read)."""
    with open(source, "rb") as reader, open(target, "wb") as writer:
        writer.write(reader.read(size))


class _Elf:
    """The program headers and dynamic section of an x86-64 ELF file opened for update (a copy of ours: the source
    is only read)."""

    def __init__(self, handle) -> None:  # type: ignore[no-untyped-def]
        self.f = handle
        head = handle.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise ValueError("not an ELF64 little-endian file")
        self.phoff, = struct.unpack_from("<Q", head, 32)
        self.phentsize, self.phnum = struct.unpack_from("<HH", head, 54)
        handle.seek(self.phoff)
        table = handle.read(self.phentsize * self.phnum)
        self.headers: list[tuple[int, int, int, int, int]] = []  # (index, type, flags, offset, vaddr/filesz)
        self.loads: list[tuple[int, int, int]] = []
        dynamic = None
        for i in range(self.phnum):
            p_type, p_flags, off, vaddr, _pa, filesz, _mem, _al = struct.unpack_from("<IIQQQQQQ", table,
                                                                                      i * self.phentsize)
            self.headers.append((i, p_type, p_flags, off, filesz))
            if p_type == 1:
                self.loads.append((vaddr, off, filesz))
            elif p_type == 2:
                dynamic = (off, filesz)
        self.entries: list[tuple[int, int]] = []
        self.strtab = 0
        if dynamic is None:
            return
        handle.seek(dynamic[0])
        raw = handle.read(dynamic[1])
        for i in range(0, len(raw) - 15, 16):
            tag, value = struct.unpack_from("<qQ", raw, i)
            if tag == 0:
                break
            self.entries.append((tag, value))
        self.strtab = self.offset(self.value(5))

    def value(self, tag: int) -> int:
        found = [v for t, v in self.entries if t == tag]
        if not found:
            raise ValueError(f"no dynamic tag {tag:#x}")
        return found[0]

    def offset(self, vaddr: int) -> int:
        for start, off, size in self.loads:
            if start <= vaddr < start + size:
                return off + vaddr - start
        raise ValueError("address outside the file")

    def string(self, index: int) -> bytes:
        self.f.seek(self.strtab + index)
        return self.f.read(256).split(b"\0", 1)[0]

    def rewrite(self, index: int, new: bytes) -> None:
        self.f.seek(self.strtab + index)
        self.f.write(new)


def _ask_executable_stack(path: Path) -> None:
    """Set PF_X on PATH's PT_GNU_STACK header (what an object built from assembly without .note.GNU-stack gets): the
    library then asks for an executable stack. glibc before 2.41 grants it at dlopen; 2.41 and later refuse
    ("cannot enable executable stack as shared object requires: Invalid argument")."""
    with open(path, "r+b") as handle:
        elf = _Elf(handle)
        for index, p_type, p_flags, _off, _size in elf.headers:
            if p_type == 0x6474E551:  # PT_GNU_STACK
                handle.seek(elf.phoff + index * elf.phentsize + 4)
                handle.write(struct.pack("<I", p_flags | 0x1))
                return
        raise ValueError("no PT_GNU_STACK header")


def _make_old_libstdcxx(path: Path) -> int:
    """Make PATH (a copy of libstdc++.so.6) look like the C++ runtime of GCC 4.8 (CentOS 7, old conda environments):
    every version it defines from GLIBCXX_3.4.20 and CXXABI_1.3.8 on is renamed in place (GLIBCXX_9.4.N, CXXABI_9.3.N),
    so the loader answers "version `GLIBCXX_3.4.21' not found" to whatever needs them. Returns how many were renamed."""
    renamed = 0
    with open(path, "r+b") as handle:
        elf = _Elf(handle)
        at = elf.offset(elf.value(0x6FFFFFFC))  # DT_VERDEF
        count = elf.value(0x6FFFFFFD)  # DT_VERDEFNUM
        for _ in range(count):
            handle.seek(at)
            _ver, _flags, _ndx, cnt, _hash, vd_aux, vd_next = struct.unpack("<HHHHIII", handle.read(20))
            if cnt:
                handle.seek(at + vd_aux)
                name_index, _next = struct.unpack("<II", handle.read(8))
                name = elf.string(name_index)
                glibcxx = re.fullmatch(rb"GLIBCXX_3\.4\.(\d+)", name)
                cxxabi = re.fullmatch(rb"CXXABI_1\.3\.(\d+)", name)
                if glibcxx and int(glibcxx.group(1)) >= 20:
                    elf.rewrite(name_index, name.replace(b"GLIBCXX_3.", b"GLIBCXX_9.", 1))
                    renamed += 1
                elif cxxabi and int(cxxabi.group(1)) >= 8:
                    elf.rewrite(name_index, name.replace(b"CXXABI_1.", b"CXXABI_9.", 1))
                    renamed += 1
            if not vd_next:
                break
            at += vd_next
    return renamed


def _stale_socket(path: Path) -> bool:
    """A Unix socket file at PATH that nobody listens on (what a killed daemon leaves)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        return False
    finally:
        listener.close()
    return path.exists()


# ------------------------------------------------------------------------------------------------ the set
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    pip_cudnn = str(machine.get("pip_cudnn") or "")
    cache = _ldconfig()
    pip_libs = sorted(glob.glob(os.path.join(pip_cudnn, "libcudnn*.so.9"))) if pip_cudnn else []
    pip_names = [os.path.basename(p) for p in pip_libs]
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    system_libs = {n: os.path.join(system_dir, n) for n in pip_names}
    system_libs = {n: p for n, p in system_libs.items() if system_dir and os.path.exists(p)}
    glibc = _glibc()
    levels = _hwcaps_levels()
    root = os.geteuid() == 0
    stub = str(machine.get("stub") or "")
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    def link_all(folder: Path, libs: dict[str, str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name, path in libs.items():
            os.symlink(os.path.realpath(path), folder / name)

    pip_map = dict(zip(pip_names, pip_libs, strict=True))
    old_cudnn = ("CD305", "CD317", "CD401", "CD408")

    # ======================================================== glibc-hwcaps subfolders of a folder on the path
    if pip_map and system_libs and len(system_libs) >= 3:
        d = _fresh("s8-hwcaps-old-cudnn")
        link_all(d, pip_map)
        level = "x86-64-v2" if "x86-64-v2" in levels else (levels[-1] if levels else "x86-64-v2")
        link_all(d / "glibc-hwcaps" / level, system_libs)
        add(Scenario("s8-hwcaps-old-cudnn", "a cuDNN folder first on LD_LIBRARY_PATH holds links to torch's own 9.19 "
                     f"files, and its glibc-hwcaps/{level}/ subfolder (searched first by glibc >= 2.33) holds the "
                     "system's 9.14", old_cudnn, env={"LD_LIBRARY_PATH": str(d)},
                     predicted="fails" if levels else "works",
                     cause_class="glibc-hwcaps subfolders of an LD_LIBRARY_PATH folder, searched before the folder "
                                 "itself"),
            "https://sourceware.org/pipermail/glibc-cvs/2020q4/071139.html (elf: Add glibc-hwcaps support for "
            "LD_LIBRARY_PATH) and https://man7.org/linux/man-pages/man8/ld.so.8.html")

    graph = pip_map.get("libcudnn_graph.so.9", "")
    if graph:
        d = _fresh("s8-hwcaps-truncated-graph")
        link_all(d, pip_map)
        level = levels[0] if levels else "x86-64-v3"
        (d / "glibc-hwcaps" / level).mkdir(parents=True)
        _head_copy(os.path.realpath(graph), d / "glibc-hwcaps" / level / "libcudnn_graph.so.9", 1 << 20)
        add(Scenario("s8-hwcaps-truncated-graph", "a folder first on LD_LIBRARY_PATH with links to torch's own cuDNN; "
                     f"its glibc-hwcaps/{level}/ subfolder holds an interrupted copy (1 MiB) of libcudnn_graph.so.9",
                     ("CD308", "CD307"), env={"LD_LIBRARY_PATH": str(d)},
                     predicted="fails" if levels else "works",
                     cause_class="a broken library hidden in a glibc-hwcaps subfolder of an LD_LIBRARY_PATH folder"),
            "https://sourceware.org/pipermail/glibc-cvs/2020q4/071139.html (glibc-hwcaps support for LD_LIBRARY_PATH)")

    if system_libs and len(system_libs) >= 3:
        d = _fresh("s8-hwcaps-other-arch")
        (d / "README").write_text("cuDNN 9.14 builds for the POWER10 and z16 partitions of the cluster\n")
        link_all(d / "glibc-hwcaps" / "power10", system_libs)
        link_all(d / "glibc-hwcaps" / "z16", system_libs)
        add(Scenario("s8-hwcaps-other-arch", "a shared folder first on LD_LIBRARY_PATH whose only cuDNN (9.14) sits in "
                     "glibc-hwcaps/power10/ and glibc-hwcaps/z16/ (subfolders an x86-64 loader never searches)",
                     old_cudnn, env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                     cause_class="glibc-hwcaps subfolders of another architecture"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (Hardware capabilities)")

    # ======================================================== folder permissions on the path
    if system_libs and len(system_libs) >= 3:
        d = _fresh("s8-search-only-folder")
        link_all(d / "cudnn-9.14", system_libs)
        (d / "cudnn-9.14").chmod(0o111)
        add(Scenario("s8-search-only-folder", "LD_LIBRARY_PATH's first folder has mode 0111 (it can be searched, not "
                     "listed, as a site's software tree often is) and holds the system's cuDNN 9.14",
                     old_cudnn, env={"LD_LIBRARY_PATH": str(d / "cudnn-9.14")}, predicted="fails",
                     cause_class="a library folder that cannot be listed but can be searched by name"),
            "https://man7.org/linux/man-pages/man7/path_resolution.7.html (search permission on a folder)")

        d = _fresh("s8-closed-folder")
        link_all(d / "cudnn-9.14", system_libs)
        (d / "cudnn-9.14").chmod(0)
        add(Scenario("s8-closed-folder", "LD_LIBRARY_PATH's first folder has mode 000 and holds the system's cuDNN 9.14 "
                     "(the loader skips a folder it may not search; root may search every folder)",
                     old_cudnn, env={"LD_LIBRARY_PATH": str(d / "cudnn-9.14")},
                     predicted="fails" if root else "works",
                     cause_class="a library folder without permissions (what it hides depends on who runs)"),
            "https://man7.org/linux/man-pages/man7/capabilities.7.html (CAP_DAC_READ_SEARCH)")

    # ======================================================== LD_PRELOAD as ld.so reads it
    if "libcudnn_graph.so.9" in cache and "libcudnn_graph.so.9" in system_libs:
        add(Scenario("s8-preload-bare-soname", "LD_PRELOAD=libcudnn_graph.so.9, a bare name (ld.so looks it up like a "
                     "dependency: the loader's cache answers with the system's 9.14)",
                     ("CD317", "CD305", "CD401", "CD408"), env={"LD_PRELOAD": "libcudnn_graph.so.9"}, predicted="fails",
                     cause_class="LD_PRELOAD entries without a slash, resolved through the search path and the cache"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD: names are searched for like "
            "DT_NEEDED)")

    if pip_map.get("libcudnn.so.9"):
        add(Scenario("s8-preload-bare-soname-pip", "LD_PRELOAD=libcudnn.so.9 (a bare name) with LD_LIBRARY_PATH naming "
                     "torch's own cuDNN folder: the name resolves to the 9.19 torch loads anyway", ("CD317", "CD305"),
                     env={"LD_PRELOAD": "libcudnn.so.9", "LD_LIBRARY_PATH": pip_cudnn}, predicted="works",
                     cause_class="LD_PRELOAD entries without a slash, resolved through the search path"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD)")

    libz = cache.get("libz.so.1", "")
    if system_main and libz:
        add(Scenario("s8-preload-space-list", "LD_PRELOAD as a space-separated list (a helper library, then the "
                     "system's libcudnn.so.9 9.14), as `export LD_PRELOAD=\"$LD_PRELOAD lib\"` builds it",
                     ("CD317", "CD305", "CD401", "CD408"),
                     env={"LD_PRELOAD": f"{os.path.realpath(libz)} {os.path.realpath(system_main)}"},
                     predicted="fails", cause_class="LD_PRELOAD lists separated by spaces"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD: separated by spaces or colons)")

        d = _fresh("s8-preload-path-with-space")
        (d / "cudnn 9.14").mkdir()
        os.symlink(os.path.realpath(system_main), d / "cudnn 9.14" / "libcudnn.so.9")
        add(Scenario("s8-preload-path-with-space", "LD_PRELOAD names the system's libcudnn.so.9 (9.14) by a path "
                     "with a space in a folder name: ld.so splits it in two, preloads nothing and goes on",
                     ("CD317",), env={"LD_PRELOAD": str(d / "cudnn 9.14" / "libcudnn.so.9")}, predicted="works",
                     cause_class="LD_PRELOAD paths with spaces (split by ld.so)"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD: separated by spaces or colons)")

    # ======================================================== LD_LIBRARY_PATH entries that only look like the system's
    if system_dir and system_libs:
        add(Scenario("s8-ld-path-trailing-space", "LD_LIBRARY_PATH='<system cuDNN folder> ' with a trailing space "
                     "(an env file or a systemd Environment= line): the folder with the space does not exist",
                     old_cudnn, env={"LD_LIBRARY_PATH": system_dir + " "}, predicted="works",
                     cause_class="LD_LIBRARY_PATH entries with white space that the loader keeps"),
            "https://github.com/moby/moby/issues/36110 (trailing spaces from an env file kept in the variables)")

        versioned = {os.path.basename(os.path.realpath(p)): os.path.realpath(p) for p in system_libs.values()}
        versioned = {n: p for n, p in versioned.items() if not n.endswith(".so.9")}
        if versioned:
            d = _fresh("s8-versioned-names-only")
            for name, path in versioned.items():
                os.symlink(path, d / name)
            add(Scenario("s8-versioned-names-only", "a folder first on LD_LIBRARY_PATH holds the system's cuDNN 9.14 "
                         "under its full file names only (libcudnn*.so.9.14.x, copied without the .so.9 links)",
                         old_cudnn, env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                         cause_class="library files present only under names the loader never asks for"),
                "https://tldp.org/HOWTO/Program-Library-HOWTO/shared-libraries.html (soname, real name, linker name)")

    d = _fresh("s8-dev-names-only")
    (d / "libcudnn.so").write_text("/* GNU ld script: link against the cuDNN of the build image */\n"
                                   "INPUT ( /opt/cudnn-9.1/lib/libcudnn.so.9 )\n")
    (d / "libcuda.so").write_text("/* GNU ld script */\nINPUT ( /usr/local/cuda-11.8/lib64/stubs/libcuda.so )\n")
    (d / "libnvidia-ml.so").write_text("")
    add(Scenario("s8-dev-names-only", "a build folder first on LD_LIBRARY_PATH with unversioned development names only "
                 "(libcudnn.so and libcuda.so as GNU ld scripts, an empty libnvidia-ml.so): no program asks the "
                 "loader for these names", ("CD308", "CD111", "CD118"), env={"LD_LIBRARY_PATH": str(d)},
                 predicted="works", cause_class="development-only (unversioned) library names on the loader's path"),
        "https://sourceware.org/binutils/docs/ld/File-Commands.html (INPUT in linker scripts)")

    # ======================================================== copies whose own headers decide
    main = pip_map.get("libcudnn.so.9", "")
    if main and "libcudnn_graph.so.9" in system_libs:
        d = _fresh("s8-lone-main-copy")
        shutil.copyfile(os.path.realpath(main), d / "libcudnn.so.9")
        add(Scenario("s8-lone-main-copy", "a copy of torch's own libcudnn.so.9 (9.19) alone in a folder first on "
                     "LD_LIBRARY_PATH: its RUNPATH $ORIGIN now names the copy's folder, so its sub-libraries come from "
                     "the loader's cache (the system's 9.14)", ("CD305", "CD304", "CD401", "CD408"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                     cause_class="a library copied away from its siblings ($ORIGIN in its RUNPATH follows the copy)"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html ($ORIGIN, DT_RUNPATH)")

    if graph:
        d = _fresh("s8-execstack-graph")
        shutil.copyfile(os.path.realpath(graph), d / "libcudnn_graph.so.9")
        try:
            _ask_executable_stack(d / "libcudnn_graph.so.9")
            marked = True
        except (OSError, ValueError, struct.error):
            marked = False
        if marked:
            refuses = bool(glibc) and glibc >= (2, 41)
            add(Scenario("s8-execstack-graph", "a copy of torch's own libcudnn_graph.so.9 (the same 9.19) marked as "
                         "needing an executable stack (PT_GNU_STACK RWE), first on LD_LIBRARY_PATH",
                         ("CD307", "CD308"), env={"LD_LIBRARY_PATH": str(d)},
                         predicted="fails" if refuses else "works",
                         cause_class="a library that asks for an executable stack (refused at dlopen from glibc 2.41; "
                                     "granted before)"),
                "https://github.com/ValveSoftware/Source-1-Games/issues/6978 (glibc 2.41: cannot enable executable "
                "stack as shared object requires)")

    libstdcxx = cache.get("libstdc++.so.6", "")
    if libstdcxx and os.path.exists(libstdcxx):
        d = _fresh("s8-old-libstdcxx-first")
        shutil.copyfile(os.path.realpath(libstdcxx), d / "libstdc++.so.6")
        try:
            renamed = _make_old_libstdcxx(d / "libstdc++.so.6")
        except (OSError, ValueError, struct.error):
            renamed = 0
        if renamed:
            add(Scenario("s8-old-libstdcxx-first", "an old C++ runtime (a libstdc++.so.6 of GCC 4.8's era: nothing "
                         "newer than GLIBCXX_3.4.19 / CXXABI_1.3.7) in a conda-style lib folder first on "
                         "LD_LIBRARY_PATH", ("CD409", "CD307"), env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                         cause_class="an older C++ runtime (libstdc++) first on the loader's path (GLIBCXX_3.4.x not "
                                     "found)"),
                "https://github.com/pytorch/pytorch/issues/115138 (version `GLIBCXX_3.4.20' not found) and "
                "https://github.com/pytorch/pytorch/issues/87279 (conda's libstdc++ first)")

        add(Scenario("s8-preload-system-libstdcxx", "LD_PRELOAD of the system's own libstdc++.so.6 (the usual advice "
                     "for a GLIBCXX error, applied where there is none)", ("CD317", "CD409"),
                     env={"LD_PRELOAD": os.path.realpath(libstdcxx)}, predicted="works",
                     cause_class="a C++ runtime preloaded"),
            "https://github.com/pytorch/pytorch/issues/157709 (GLIBCXX errors and the libstdc++ workarounds users apply)")

    # ======================================================== shell start-up files of non-interactive bash
    if system_dir and system_libs:
        d = _fresh("s8-bash-env-ld-path")
        (d / "batch-env.sh").write_text(
            "# sourced by every non-interactive bash (CI steps, job scripts): the site's cuDNN\n"
            f"export LD_LIBRARY_PATH=\"{system_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\n")
        add(Scenario("s8-bash-env-ld-path", "BASH_ENV names a file that every non-interactive bash sources; it puts the "
                     "system's cuDNN 9.14 folder first on LD_LIBRARY_PATH (the shell itself shows no such setting)",
                     old_cudnn, env={"BASH_ENV": str(d / "batch-env.sh")}, predicted="fails",
                     cause_class="BASH_ENV: a start-up file that every non-interactive bash sources"),
            "https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html (BASH_ENV)")

    # ======================================================== Python's own start-up
    conda = _fresh("s8-python-home-gone") / "miniconda3"
    (conda / "bin").mkdir(parents=True)
    add(Scenario("s8-python-home-gone", "PYTHONHOME left from a removed conda install (the folder holds no standard "
                 "library): no Python program starts (\"No module named 'encodings'\")", (),
                 env={"PYTHONHOME": str(conda)}, predicted="fails",
                 cause_class="Python's own start-up variables (PYTHONHOME, PYTHONPLATLIBDIR) that stop every Python "
                             "interpreter"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHOME")

    platlib = getattr(sys, "platlibdir", "lib")
    add(Scenario("s8-python-platlibdir", "PYTHONPLATLIBDIR=lib64 from an RPM-based distribution's shell profile on a "
                 "shared home", (), env={"PYTHONPLATLIBDIR": "lib64"},
                 predicted="works" if platlib == "lib64" else "fails",
                 cause_class="Python's own start-up variables (PYTHONHOME, PYTHONPLATLIBDIR) that stop every Python "
                             "interpreter"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPLATLIBDIR")

    d = _fresh("s8-pythonstartup")
    (d / "startup.py").write_text("# interactive sessions only get the CPU\nimport os\n"
                                  "os.environ['CUDA_VISIBLE_DEVICES'] = ''\nos.environ['JAX_PLATFORMS'] = 'cpu'\n")
    add(Scenario("s8-pythonstartup", "PYTHONSTARTUP names a script that hides the GPUs (Python runs it only for "
                 "interactive sessions, never for a script or -c)", ("CD113", "CD412"),
                 env={"PYTHONSTARTUP": str(d / "startup.py")}, predicted="works",
                 cause_class="a Python start-up script that only interactive sessions run"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONSTARTUP")

    if not _in_venv():
        base = _fresh("s8-startup-hook-raises")
        env = dict(PYTHONUSERBASE=str(base))
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        user_site = base / "lib" / f"python{version}" / "site-packages"
        user_site.mkdir(parents=True)
        (user_site / "zz-cluster-env.pth").write_text(
            "import os; import cluster_env; os.environ['CUDA_VISIBLE_DEVICES'] = cluster_env.gpus()\n")
        (user_site / "usercustomize.py").write_text("import cluster_env  # removed last year\n")
        hook = "a .pth file and a usercustomize.py in the user site (PYTHONUSERBASE) that import a removed module"
    else:
        base = _fresh("s8-startup-hook-raises")
        env = dict(PYTHONPATH=str(base))
        (base / "sitecustomize.py").write_text("import cluster_env  # removed last year\n")
        hook = "a sitecustomize.py on PYTHONPATH that imports a removed module"
    add(Scenario("s8-startup-hook-raises", f"{hook}: Python prints the error and goes on", ("CD113", "CD409"), env=env,
                 predicted="works", cause_class="a Python start-up hook that raises (Python reports it and goes on)"),
        "https://docs.python.org/3/library/site.html (.pth import lines; usercustomize)")

    # ======================================================== the working folder
    work = _fresh("s8-cwd-startup-files")
    (work / "sitecustomize.py").write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\n")
    (work / "usercustomize.py").write_text("import os\nos.environ['JAX_PLATFORMS'] = 'cpu'\n")
    (work / ".env").write_text(f"CUDA_VISIBLE_DEVICES=-1\nLD_LIBRARY_PATH={system_dir or '/opt/cudnn-9.14/lib'}\n"
                               "XLA_PYTHON_CLIENT_MEM_FRACTION=.01\n")
    add(Scenario("s8-cwd-startup-files", "started in a project folder holding sitecustomize.py, usercustomize.py and a "
                 ".env that would hide the GPUs: Python imports neither from the working folder, and no program reads "
                 ".env", ("CD113", "CD412", "CD413"), cwd=str(work), predicted="works",
                 cause_class="start-up and environment files in the working folder that nothing reads"),
        "https://docs.python.org/3/library/site.html (sitecustomize is imported before the script's folder is on "
        "sys.path) and https://github.com/theskumar/python-dotenv (.env is read only by programs that ask)")

    if system_libs:
        work = _fresh("s8-cwd-libraries")
        link_all(work, system_libs)
        if stub:
            os.symlink(stub, work / "libcuda.so.1")
        add(Scenario("s8-cwd-libraries", "started in a folder holding the system's cuDNN 9.14" + (" and the toolkit's "
                     "stub libcuda.so.1" if stub else "") + " (the habit of Windows, where a program's folder is "
                     "searched); LD_LIBRARY_PATH does not name it", old_cudnn + ("CD111",), cwd=str(work),
                     predicted="works", cause_class="libraries in the working folder, which the loader never searches "
                                                    "unless told"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (search order: no working folder)")

    gone = SCRATCH / "s8-cwd-deleted"
    shutil.rmtree(gone, ignore_errors=True)
    gone.mkdir(parents=True)
    add(Scenario("s8-cwd-deleted", "the shell's working folder was deleted under it (rm -rf of the build folder one "
                 "is in)", (), shell=f'D={gone}/$$; mkdir -p "$D" && cd "$D" && rmdir "$D"', predicted="works",
                 cause_class="a working folder that no longer exists"),
        "https://github.com/pypa/pip/issues/4255 (a removed working folder: getcwd fails)")

    # ======================================================== shell settings other than limits
    add(Scenario("s8-stack-unlimited", "ulimit -s unlimited (from an HPC .bashrc: the kernel then lays out mmap "
                 "bottom-up, and threads get glibc's default stack size)", ("CD116",),
                 shell="ulimit -S -s unlimited 2>/dev/null || ulimit -S -s hard", predicted="works",
                 cause_class="an unlimited stack (legacy mmap layout)"),
        "https://man7.org/linux/man-pages/man3/pthread_create.3.html (RLIMIT_STACK unlimited: 2 MB thread stacks) "
        "and https://www.kernel.org/doc/html/latest/admin-guide/sysctl/vm.html (legacy_va_layout)")

    add(Scenario("s8-umask-0777", "umask 0777 (every new file and folder without permissions)", (),
                 shell="umask 0777", predicted="works", cause_class="a umask that leaves new files unusable"),
        "https://man7.org/linux/man-pages/man2/umask.2.html")

    add(Scenario("s8-sigchld-ignored", "SIGCHLD ignored by the shell (trap '' CHLD, as some daemons and launchers "
                 "leave it): every program started from it inherits SIG_IGN, so children are reaped at once and "
                 "waitpid has no exit status to give", (), shell="trap '' CHLD", predicted="works",
                 cause_class="SIGCHLD ignored and inherited (children's exit statuses are lost)"),
        "https://github.com/baskerville/bspwm/pull/1534 (SIGCHLD ignored survives execve on Linux; waitpid loses "
        "child statuses)")

    add(Scenario("s8-path-without-system", "PATH=/opt/site/bin only (an `export PATH=~/bin` typo): no nvidia-smi, no "
                 "ldconfig, no compiler on PATH; the programs are started by full path", (),
                 env={"PATH": "/opt/site/bin"}, predicted="works",
                 cause_class="a PATH without the system's folders"),
        "https://www.gnu.org/software/bash/manual/html_node/Bourne-Shell-Variables.html (PATH)")

    # ======================================================== locale
    add(Scenario("s8-locale-macos-ctype", "LC_CTYPE=UTF-8 and LANG=en_US.UTF-8 forwarded by ssh from a Mac "
                 "(LC_CTYPE=UTF-8 is no locale on Linux: setlocale fails)", (),
                 env={"LC_CTYPE": "UTF-8", "LANG": "en_US.UTF-8"}, unset=("LC_ALL",), predicted="works",
                 cause_class="a locale that does not exist on this machine"),
        "https://github.com/manaflow-ai/cmux/issues/13945 (macOS sends LC_CTYPE=UTF-8 over ssh)")

    # ======================================================== the C library's own settings
    add(Scenario("s8-glibc-tunables", "GLIBC_TUNABLES with malloc and loader tunables from a tuning guide, one name "
                 "that does not exist, and MALLOC_ARENA_MAX=1 / MALLOC_PERTURB_=165", (),
                 env={"GLIBC_TUNABLES": "glibc.malloc.arena_max=1:glibc.malloc.tcache_count=0:"
                                        "glibc.rtld.optional_static_tls=0:glibc.rtld.nns=1:glibc.malloc.no_such=1",
                      "MALLOC_ARENA_MAX": "1", "MALLOC_PERTURB_": "165"}, predicted="works",
                 cause_class="the C library's tunables (GLIBC_TUNABLES, MALLOC_*)"),
        "https://www.gnu.org/software/libc/manual/html_node/Tunables.html")

    # ======================================================== CUDA's MPS client
    d = _fresh("s8-mps-stale-socket")
    (d / "pipe").mkdir()
    (d / "log").mkdir()
    if _stale_socket(d / "pipe" / "control"):
        add(Scenario("s8-mps-stale-socket", "CUDA_MPS_PIPE_DIRECTORY names the pipe folder of an MPS control daemon "
                     "that was killed: its 'control' socket is still there, nobody answers", ("CD110", "CD113"),
                     env={"CUDA_MPS_PIPE_DIRECTORY": str(d / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(d / "log")},
                     predicted="fails",
                     cause_class="a stale MPS control socket (the client finds the daemon's pipe and cannot connect)"),
            "https://docs.nvidia.com/deploy/mps/index.html (CUDA_MPS_PIPE_DIRECTORY; clients connect to the "
            "control daemon's pipe)")

    # ======================================================== PyTorch's and the compile stack's variables
    triton_file = _fresh("s8-compile-stack-vars") / "triton-cache"
    triton_file.write_text("not a folder\n")
    add(Scenario("s8-compile-stack-vars", "torch.compile stack settings pointing nowhere: TORCHINDUCTOR_CACHE_DIR "
                 "unwritable, TRITON_CACHE_DIR a file, TRITON_PTXAS_PATH and TRITON_LIBCUDA_PATH missing (the "
                 "programs compile nothing)", ("CD417", "CD411"),
                 env={"TORCHINDUCTOR_CACHE_DIR": f"{GONE}/inductor", "TRITON_CACHE_DIR": str(triton_file),
                      "TRITON_PTXAS_PATH": "/opt/triton-nowhere/bin/ptxas",
                      "TRITON_LIBCUDA_PATH": "/opt/triton-nowhere/lib", "TORCHINDUCTOR_FX_GRAPH_CACHE": "1"},
                 predicted="works", cause_class="compiler-stack (Inductor, Triton) variables naming unusable paths"),
        "https://github.com/triton-lang/triton (README: TRITON_PTXAS_PATH, TRITON_LIBCUDA_PATH, TRITON_CACHE_DIR)")

    add(Scenario("s8-torch-rtld-global", "TORCH_USE_RTLD_GLOBAL=1 (torch loads its C++ libraries with RTLD_GLOBAL, as "
                 "some extension READMEs advise)", ("CD409", "CD411"), env={"TORCH_USE_RTLD_GLOBAL": "1"},
                 predicted="works", cause_class="torch's library-loading mode"),
        "https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (USE_RTLD_GLOBAL_WITH_LIBTORCH, "
        "TORCH_USE_RTLD_GLOBAL)")

    # ======================================================== JAX's variables
    add(Scenario("s8-xla-client-mem-fraction", "XLA_CLIENT_MEM_FRACTION=.001 (the new name of the memory fraction: "
                 "JAX gets 0.1 % of the GPU)", ("CD413",), env={"XLA_CLIENT_MEM_FRACTION": ".001"}, alone=True,
                 predicted="fails"),
        "https://docs.jax.dev/en/latest/201/gpu-memory.html (XLA_CLIENT_MEM_FRACTION; the old name is deprecated)")

    add(Scenario("s8-unified-memory-oversubscribe", "TF_FORCE_UNIFIED_MEMORY=1 with XLA_PYTHON_CLIENT_MEM_FRACTION=2.0 "
                 "(ColabFold's and AlphaFold's advice: a fraction above 1 in unified memory)", ("CD411", "CD413"),
                 env={"TF_FORCE_UNIFIED_MEMORY": "1", "XLA_PYTHON_CLIENT_MEM_FRACTION": "2.0"}, predicted="works",
                 cause_class="a memory fraction above 1 made valid by unified memory"),
        "https://github.com/google-deepmind/alphafold3/blob/main/docs/performance.md (unified memory)")

    add(Scenario("s8-jax-transfer-guard", "JAX_TRANSFER_GUARD=disallow (left from a test suite: every implicit "
                 "host-to-device transfer is an error)", ("CD411", "CD412"), env={"JAX_TRANSFER_GUARD": "disallow"},
                 predicted="fails",
                 cause_class="a JAX debugging guard that makes the program's own implicit transfers errors"),
        "https://docs.jax.dev/en/latest/transfer_guard.html")

    add(Scenario("s8-jax-debug-modes", "JAX_DISABLE_JIT=1, JAX_DEBUG_NANS=1 and JAX_ENABLE_CHECKS=1 left on (slow, "
                 "op by op)", ("CD411", "CD412"),
                 env={"JAX_DISABLE_JIT": "1", "JAX_DEBUG_NANS": "1", "JAX_ENABLE_CHECKS": "1"}, predicted="works",
                 cause_class="JAX's debugging modes"),
        "https://docs.jax.dev/en/latest/debugging/flags.html")

    add(Scenario("s8-jax-platform-name-cpu", "JAX_PLATFORM_NAME=cpu (the old name of the default-platform setting, in "
                 "an old .bashrc)", ("CD412",), env={"JAX_PLATFORM_NAME": "cpu"}, on_purpose=True,
                 predicted="fails"),
        "https://docs.jax.dev/en/latest/config_options.html (jax_platform_name, deprecated for jax_platforms)")

    d = _fresh("s8-pjrt-plugin-gone")
    plugin = d / "xla" / "bazel-bin" / "xla" / "pjrt" / "c" / "pjrt_c_api_gpu_plugin.so"
    add(Scenario("s8-pjrt-plugin-gone", "PJRT_NAMES_AND_LIBRARY_PATHS=cuda:<a self-built XLA GPU plugin> left from an "
                 "XLA build whose output folder was cleaned (the .so is gone)", ("CD409", "CD411"),
                 env={"PJRT_NAMES_AND_LIBRARY_PATHS": f"cuda:{plugin}"}, predicted="fails",
                 cause_class="a PJRT plugin variable that names a missing plugin library for the GPU platform"),
        "https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (PJRT_NAMES_AND_LIBRARY_PATHS: "
        "'name1:path1,name2:path2')")

    # ======================================================== launchers' variables in a plain shell
    add(Scenario("s8-launcher-rank-vars", "torchrun/Slurm/Open MPI rank variables left in an interactive shell "
                 "(LOCAL_RANK=3, WORLD_SIZE=4, an unreachable MASTER_ADDR, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK) "
                 "on a one-GPU machine", ("CD113", "CD119"),
                 env={"LOCAL_RANK": "3", "RANK": "3", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "4",
                      "MASTER_ADDR": "10.255.255.1", "MASTER_PORT": "29500", "SLURM_PROCID": "3",
                      "SLURM_LOCALID": "3", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "4711",
                      "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "PMI_RANK": "3"},
                 predicted="works", cause_class="distributed launchers' rank variables outside a launch"),
        "https://pytorch.org/docs/stable/elastic/run.html (LOCAL_RANK, WORLD_SIZE, MASTER_ADDR)")
    return scenarios
