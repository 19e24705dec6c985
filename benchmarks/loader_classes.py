"""Scenarios of the libraries a program maps, for benchmarks/gpu_scenarios.py (issue 45, round nine): what real
torch and JAX do on the GPU machine when the loader is handed a glibc-hwcaps subfolder, a name it never matches, a
lone copy, an ELF flag, an older C++ runtime, or a broken copy of a library the frameworks load lazily; and whether
`check` names it, `--deep` proves it and `fix` cures it. Every copy is made in /tmp from the machine's own files.

  python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/loader_classes.py --out DIR

Each scenario's `predicted` is what tests/test_loader_classes.py expects of the loader on a CPU machine; the judges
say what happens on the GPU, and the figures are DIR/summary.json.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from gpu_scenarios import Scenario, scratch  # type: ignore[import-not-found]


def _levels() -> list[str]:
    """The glibc-hwcaps levels this machine's ld.so searches, best first (its own --help)."""
    loader = next(iter(sorted(glob.glob("/lib64/ld-linux-*.so.*") + glob.glob("/lib/ld-linux-*.so.*"))), None)
    if loader is None:
        return []
    text = subprocess.run([loader, "--help"], capture_output=True, text=True).stdout
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Subdirectories of glibc-hwcaps")), None)
    found = []
    for line in lines[start + 1:] if start is not None else []:
        if not line.startswith("  "):
            break
        name, _, marks = line.strip().partition(" ")
        if "searched" in marks:
            found.append(name)
    return found


def _copy_of(folder: Path, pip_cudnn: str) -> Path:
    for library in glob.glob(os.path.join(pip_cudnn, "libcudnn*.so*")):
        shutil.copy2(library, folder)
    return folder


def _cut(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _exec_stack(path: Path) -> None:
    import struct

    data = bytearray(path.read_bytes())
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    size, count = struct.unpack_from("<HH", data, 0x36)
    for index in range(count):
        at = phoff + index * size
        if struct.unpack_from("<I", data, at)[0] == 0x6474E551:
            struct.pack_into("<I", data, at + 4, 7)
    path.write_bytes(bytes(data))


def _older_cxx(folder: Path) -> Path | None:
    """This machine's libstdc++ with the versions from GLIBCXX_3.4.26 on renamed at the same length: what a GCC 8
    runtime (an old conda environment's lib folder) lacks."""
    system = next(iter(sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.*"))), None)
    if system is None:
        return None
    data = re.sub(rb"GLIBCXX_3\.4\.(2[6-9]|3[0-9])\x00", lambda m: m.group(0).replace(b"GLIBCXX_3", b"GLIBCXX_9"),
                  Path(system).read_bytes())
    (folder / "libstdc++.so.6").write_bytes(data)
    return folder / "libstdc++.so.6"


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    pip_cudnn = str(machine["pip_cudnn"])
    site = str(machine["site"])
    system_cudnn = machine.get("system_cudnn")
    levels = _levels()
    out: list[Scenario] = []
    if levels:
        level = levels[-1]  # the lowest level this CPU has: ld.so searches it on every machine that searches any
        cut = scratch("hwcaps-cut-graph")
        (cut / "glibc-hwcaps" / level).mkdir(parents=True)
        shutil.copy2(os.path.join(pip_cudnn, "libcudnn_graph.so.9"), cut / "glibc-hwcaps" / level)
        _cut(cut / "glibc-hwcaps" / level / "libcudnn_graph.so.9")
        text = scratch("hwcaps-text-ops")
        (text / "glibc-hwcaps" / level).mkdir(parents=True)
        (text / "glibc-hwcaps" / level / "libcudnn_ops.so.9").write_text(
            "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
        whole = scratch("hwcaps-whole")
        (whole / "glibc-hwcaps" / level).mkdir(parents=True)
        _copy_of(whole / "glibc-hwcaps" / level, pip_cudnn)
        out += [
            Scenario("hwcaps-cut-graph", f"a cut-short libcudnn_graph.so.9 in glibc-hwcaps/{level} of a folder first "
                     "on LD_LIBRARY_PATH", ("CD307", "CD308", "CD309"), env={"LD_LIBRARY_PATH": str(cut)},
                     predicted="fails"),
            Scenario("hwcaps-text-ops", f"a Git LFS pointer as glibc-hwcaps/{level}/libcudnn_ops.so.9 first on the "
                     "path", ("CD307", "CD308"), env={"LD_LIBRARY_PATH": str(text)}, predicted="fails"),
            Scenario("hwcaps-whole-copy", f"the pip cuDNN copied whole into glibc-hwcaps/{level} of a folder first "
                     "on the path", env={"LD_LIBRARY_PATH": str(whole)}, predicted="works"),
        ]
    renamed = _copy_of(scratch("renamed-graph"), pip_cudnn)
    os.rename(renamed / "libcudnn_graph.so.9", renamed / "libcudnn_graph.so.9.0")
    blank = _copy_of(scratch("blank-adv"), pip_cudnn)
    os.rename(blank / "libcudnn_adv.so.9", blank / "libcudnn_adv.so.9 ")
    lone = scratch("lone-front")
    shutil.copy2(os.path.join(pip_cudnn, "libcudnn.so.9"), lone)
    execstack = _copy_of(scratch("execstack-graph"), pip_cudnn)
    _exec_stack(execstack / "libcudnn_graph.so.9")
    cxx = scratch("older-cxx")
    older = _older_cxx(cxx)
    own_cxx = scratch("system-cxx")
    system_cxx = next(iter(sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libstdc++.so.6*"))), None)
    if system_cxx:
        shutil.copy2(os.path.realpath(system_cxx), own_cxx / "libstdc++.so.6")
    out += [
        Scenario("renamed-graph-on-path", "a copy whose graph library is named libcudnn_graph.so.9.0, first on the "
                 "path (the front library's own folder has the graph library)", env={"LD_LIBRARY_PATH": str(renamed)},
                 predicted="works"),
        Scenario("renamed-graph-preloaded", "the front library of a copy whose graph library is named "
                 "libcudnn_graph.so.9.0, preloaded", ("CD304", "CD305", "CD317"),
                 env={"LD_PRELOAD": str(renamed / "libcudnn.so.9")}, predicted="fails"),
        Scenario("blank-adv-preloaded", "the front library of a copy whose libcudnn_adv.so.9 has a trailing blank, "
                 "preloaded", ("CD304", "CD305", "CD317", "CD319"), env={"LD_PRELOAD": str(blank / "libcudnn.so.9")},
                 predicted="fails"),
        Scenario("lone-front-preloaded", "libcudnn.so.9 copied alone into a folder and preloaded ($ORIGIN holds no "
                 "sub-library)", ("CD304", "CD305", "CD317"), env={"LD_PRELOAD": str(lone / "libcudnn.so.9")},
                 predicted="fails"),
        Scenario("lone-front-on-path", "libcudnn.so.9 copied alone into a folder first on LD_LIBRARY_PATH (torch and "
                 "JAX load their own by path)", env={"LD_LIBRARY_PATH": str(lone)}, predicted="works"),
        Scenario("execstack-graph", "a whole copy whose graph library asks for an executable stack, first on the "
                 "path (glibc 2.41 and later refuse it)", ("CD307",), env={"LD_LIBRARY_PATH": str(execstack)}),
        Scenario("system-cxx-on-path", "this machine's own libstdc++ copied into a folder first on the path",
                 env={"LD_LIBRARY_PATH": str(own_cxx)}, predicted="works"),
    ]
    if older is not None:
        out += [
            Scenario("older-cxx-on-path", "an older libstdc++ (no GLIBCXX_3.4.26 and later) first on LD_LIBRARY_PATH",
                     ("CD409", "CD307"), env={"LD_LIBRARY_PATH": str(cxx)}, predicted="fails"),
            Scenario("older-cxx-preloaded", "an older libstdc++ preloaded", ("CD409", "CD307"),
                     env={"LD_PRELOAD": str(older)}, predicted="fails"),
        ]
    lazily = scratch("lazy-libraries")
    for pattern, how in (("libcublasLt.so.*[0-9]", "cut"), ("libnvJitLink.so.*[0-9]", "text"),
                         ("libnccl.so.2", "cut"), ("libnvrtc.so.*[0-9]", "cut")):
        found = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", pattern)))
        if not found:
            continue
        folder = lazily / Path(found[0]).name.split(".so")[0]
        folder.mkdir()
        target = folder / Path(found[0]).name
        if how == "text":
            target.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
        else:
            shutil.copy2(found[0], target)
            _cut(target)
        out.append(Scenario(f"lazy-{target.name.split('.so')[0]}-{how}", f"{target.name} {how} first on "
                            "LD_LIBRARY_PATH (a library the frameworks load lazily)", ("CD203",),
                            env={"LD_LIBRARY_PATH": str(folder)}))
    if system_cudnn:
        out += [
            Scenario("preload-bare-soname", "LD_PRELOAD=libcudnn.so.9 (a bare soname: the loader's cache gives the "
                     "system's cuDNN)", ("CD317", "CD408"), env={"LD_PRELOAD": "libcudnn.so.9"}),
            Scenario("preload-space-separated", "LD_PRELOAD with two entries separated by a space, the second the "
                     "system's cuDNN", ("CD317", "CD408"), env={"LD_PRELOAD": f"libm.so.6 {system_cudnn}"}),
        ]
    return out
