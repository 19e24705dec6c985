#!/usr/bin/env python3
"""Compare compat/ with the machine-readable sources and print what differs.

    python maintenance/refresh_compat.py              # every source, a report on stdout
    python maintenance/refresh_compat.py --only torch,jax
    python maintenance/refresh_compat.py --toml        # also print draft [[build]] rows for what is new
    python maintenance/refresh_compat.py --cudnn-wheel nvidia_cudnn_cu13-...whl  # GPU architectures of cuDNN
    python maintenance/refresh_compat.py --torch-wheel torch-2.11.0-...whl   # GPU architectures of a torch
                                        # wheel (`pip download --no-deps torch==X`), against compat/pytorch.toml

Sources: PyPI's JSON API (https://pypi.org/pypi/<name>/json and /<name>/<version>/json, whose
`requires_dist` is the wheel's Requires-Dist) for torch, tensorflow (its and-cuda extra), the JAX
CUDA plugins (cuda11/12/13), onnxruntime-gpu, cupy, tensorrt (and -cu11/-cu12/-cu13), paddlepaddle-gpu, vllm
(its torch pin),
nvidia-cudnn-cu11/12/13 (new releases, and which platforms each has wheels for: compat/cudnn.toml
[[wheel]]) and cuda-toolkit; NVIDIA's cuDNN
redistributable manifests (https://developer.download.nvidia.com/compute/cudnn/redist/). Nothing is
written: a maintainer reviews the report, edits compat/ and cites the package==version metadata
(or manifest) each new row comes from. Standard library only; exit 0 when compat/ is up to date,
1 when something differs, 2 when a source could not be read at all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

COMPAT = Path(__file__).resolve().parents[1] / "compat"
PYPI = os.environ.get("CUDNN_DOCTOR_PYPI", "https://pypi.org/pypi")  # a mirror's JSON API
NVIDIA_REDIST = os.environ.get("CUDNN_DOCTOR_NVIDIA_REDIST", "https://developer.download.nvidia.com/compute/cudnn/redist/")
TIMEOUT = 20
CUDNN_PIN = re.compile(r"^(nvidia-cudnn-cu\d+)\s*\(?([^;)]*)\)?\s*(?:;\s*(.*))?$", re.IGNORECASE)
CUDA_PIN = re.compile(r"^(?:cuda-toolkit(?:\[[^]]*\])?|nvidia-cuda-runtime(?:-cu\d+)?)\s*\(?([^;)]*)\)?", re.IGNORECASE)


@dataclass(frozen=True)
class Package:
    name: str  # PyPI name
    table: str  # compat/<table>.toml
    rows: str  # the array of rows in it
    key: str = "version"  # how a row names its release
    cuda: str | None = None  # the CUDA major every release of this package is for
    recent: int = 12  # the newest releases read (older ones were reviewed by hand and are not re-read)


PACKAGES = (
    Package("torch", "pytorch", "build"),
    Package("tensorflow", "tensorflow", "and_cuda"),
    Package("jax-cuda13-plugin", "jax", "build", cuda="13", recent=40),
    Package("jax-cuda12-plugin", "jax", "build", cuda="12", recent=40),
    Package("jax-cuda11-plugin", "jax", "build", cuda="11", recent=10),
    Package("onnxruntime-gpu", "onnxruntime", "build", recent=40),
    Package("cupy-cuda13x", "cupy", "build", cuda="13", recent=20),
    Package("cupy-cuda12x", "cupy", "build", cuda="12", recent=20),
    Package("tensorrt", "tensorrt", "build", recent=60),
    Package("tensorrt-cu13", "tensorrt", "build", cuda="13", recent=40),
    Package("tensorrt-cu12", "tensorrt", "build", cuda="12", recent=40),
    Package("tensorrt-cu11", "tensorrt", "build", cuda="11", recent=20),
    Package("paddlepaddle-gpu", "paddle", "build"),
    Package("vllm", "vllm", "build", recent=20),
    Package("nvidia-cudnn-cu13", "cudnn", "release", cuda="13"),
    Package("nvidia-cudnn-cu12", "cudnn", "release", cuda="12"),
    Package("nvidia-cudnn-cu11", "cudnn", "release", cuda="11"),
    Package("cuda-toolkit", "cuda", "toolkit"),
)


class Unreachable(Exception):
    """A source could not be read (no network, a proxy, a 404 for a whole project)."""


def fetch_json(url: str) -> Any:
    request = urllib.request.Request(url, headers={"User-Agent": "cudnn-doctor-refresh (compat maintenance)"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.load(response)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as error:
        raise Unreachable(f"{url}: {getattr(error, 'reason', error)}") from None


def fetch_range(url: str, start: int, length: int) -> bytes:
    """LENGTH bytes of URL from START (a negative START counts from the end): one HTTP range request."""
    what = f"bytes={start}-{start + length - 1}" if start >= 0 else f"bytes={start}"
    request = urllib.request.Request(url, headers={"User-Agent": "cudnn-doctor-refresh", "Range": what})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return bytes(response.read(max(length, -start)))
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise Unreachable(f"{url}: {getattr(error, 'reason', error)}") from None


def wheel_metadata(url: str) -> str:
    """The METADATA inside a wheel on PyPI, read with range requests (the wheel itself can be 1 GB).

    PyPI's per-release JSON is not served by every mirror and its requires_dist is one file's;
    the wheel's own METADATA is what pip installs from."""
    return wheel_member(url, r"[^/]+\.dist-info/METADATA")


def wheel_member(url: str, pattern: str) -> str:
    """The text of the first file in the wheel at URL whose name matches PATTERN (range requests only)."""
    tail = fetch_range(url, -65536, 65536)
    end = tail.rfind(b"PK\x05\x06")
    if end < 0:
        raise Unreachable(f"{url}: no zip directory at its end")
    directory_size, directory_offset = struct.unpack("<II", tail[end + 12:end + 20])
    directory = fetch_range(url, directory_offset, directory_size)
    position = 0
    while position + 46 <= len(directory) and directory[position:position + 4] == b"PK\x01\x02":
        method, = struct.unpack("<H", directory[position + 10:position + 12])
        compressed, = struct.unpack("<I", directory[position + 20:position + 24])
        name_length, extra_length, comment_length = struct.unpack("<HHH", directory[position + 28:position + 34])
        local_offset, = struct.unpack("<I", directory[position + 42:position + 46])
        name = directory[position + 46:position + 46 + name_length].decode("utf-8", "replace")
        position += 46 + name_length + extra_length + comment_length
        if re.fullmatch(pattern, name):
            header = fetch_range(url, local_offset, 30)
            skip = 30 + sum(struct.unpack("<HH", header[26:30]))
            data = fetch_range(url, local_offset + skip, compressed)
            raw = zlib.decompress(data, -15) if method == 8 else data
            return raw.decode("utf-8", "replace")
    raise Unreachable(f"{url}: no {pattern} in the wheel")


def linux_wheel_url(project: dict[str, Any], name: str, version: str) -> tuple[str, str] | None:
    files = project.get("releases", {}).get(version, [])
    wheels = [f for f in files if f["filename"].endswith(".whl") and not f.get("yanked")]
    linux = [f for f in wheels if re.search(r"manylinux\w*x86_64|linux_x86_64", f["filename"])]
    if not linux:
        return None
    chosen = sorted(linux, key=lambda f: f["filename"])[-1]
    return urllib.parse.urljoin(f"{PYPI}/{name}/json", chosen["url"]), chosen["filename"]


def paddle_build(project: dict[str, Any], version: str) -> tuple[str | None, str | None, str]:
    """(cuda_version, cudnn_version, wheel) from paddle/version/__init__.py inside the paddlepaddle-gpu wheel."""
    found = linux_wheel_url(project, "paddlepaddle-gpu", version)
    if found is None:
        return None, None, ""
    text = wheel_member(found[0], r"paddle/version/__init__\.py")
    values = dict(re.findall(r"^(cuda_version|cudnn_version)\s*=\s*'([^']*)'", text, re.MULTILINE))
    cuda, cudnn = values.get("cuda_version"), values.get("cudnn_version")
    return (cuda if cuda not in (None, "False") else None), (cudnn if cudnn not in (None, "False") else None), found[1]


def release_requires(project: dict[str, Any], name: str, version: str) -> tuple[list[str], str]:
    """Requires-Dist of VERSION's Linux x86_64 wheel (the build `pip install NAME==VERSION` gets there)."""
    files = project.get("releases", {}).get(version, [])
    wheels = [f for f in files if f["filename"].endswith(".whl") and not f.get("yanked")]
    linux = [f for f in wheels if re.search(r"manylinux\w*x86_64|linux_x86_64", f["filename"])] or \
        [f for f in wheels if "any.whl" in f["filename"]]
    if not linux:
        return [], ""
    chosen = sorted(linux, key=lambda f: f["filename"])[-1]
    url = urllib.parse.urljoin(f"{PYPI}/{name}/json", chosen["url"])
    metadata = wheel_metadata(url)
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    return requires, chosen["filename"]


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:4])


def is_final(version: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+){1,3}", version) is not None


def published(project: dict[str, Any]) -> list[str]:
    """Final, not fully yanked releases, oldest first."""
    versions = [v for v, files in project.get("releases", {}).items()
                if is_final(v) and files and not all(f.get("yanked") for f in files)]
    return sorted(versions, key=release_key)


def load_table(package: Package) -> list[dict[str, Any]]:
    path = COMPAT / f"{package.table}.toml"
    if not path.exists():
        return []
    return list(tomllib.loads(path.read_text()).get(package.rows, []))


def cudnn_pin(requires: list[str]) -> tuple[str, str] | None:
    """(package, specifier) of the nvidia-cudnn-cuXX requirement, extras' included."""
    for line in requires:
        match = CUDNN_PIN.match(line.strip())
        if match:
            return match.group(1).lower(), match.group(2).replace(" ", "")
    return None


def cuda_pin(requires: list[str]) -> str | None:
    for line in requires:
        match = CUDA_PIN.match(line.strip())
        if match and match.group(1).strip():
            return match.group(1).replace(" ", "")
    return None


def in_data(rows: list[dict[str, Any]], version: str, cuda: str | None = None) -> list[dict[str, Any]]:
    found = [r for r in rows if str(r.get("version")) == version
             or release_key(str(r.get("version"))) == release_key(version)[:3] and len(release_key(version)) > 3]
    if cuda is not None:
        found = [r for r in found if str(r.get("cuda", "")).split(".")[0] == cuda]
    return found


def compare(package: Package, emit_toml: bool) -> Iterator[str]:
    project = fetch_json(f"{PYPI}/{package.name}/json")
    rows = load_table(package)
    versions = published(project)
    if package.table == "cudnn":
        known = {str(r.get("build")) for r in rows} | {str(r.get("version")) for r in rows}
        for version in versions:
            three = ".".join(version.split(".")[:3])
            if version not in known and three not in known:
                yield f"new cuDNN release: {package.name}=={version} (compat/cudnn.toml has no {three})"
        yield from compare_cudnn_wheels(package, project)
        return
    if package.table == "cuda":
        known = {str(r.get("version")) for r in rows}
        for version in versions:
            if version not in known and ".".join(version.split(".")[:2]) + ".0" not in known \
                    and not any(k.startswith(version.rsplit(".", 1)[0] + ".") for k in known):
                yield f"new CUDA toolkit: {package.name}=={version} (compat/cuda.toml has no {version})"
        return
    for version in versions[-package.recent:]:
        have = in_data(rows, version, package.cuda if package.table != "pytorch" else None)
        if package.table == "pytorch":
            have = [r for r in have if r.get("pypi_default") is True] or have
        if package.table == "paddle":
            cuda, cudnn, wheel = paddle_build(project, version)
            recorded = {(str(r.get("cuda")), str(r.get("cudnn"))) for r in have}
            if wheel and (not have or (cuda, cudnn) not in recorded):
                yield (f"{'changed build' if have else 'new release'}: {package.name}=={version} ({wheel} "
                       f"paddle/version/__init__.py: cuda_version {cuda}, cudnn_version {cudnn}); "
                       f"compat/paddle.toml has {sorted(recorded) or 'nothing'}")
            continue
        requires, wheel = release_requires(project, package.name, version)
        if not wheel:
            # a metapackage release (sdist only): its tensorrt-cuXX wheels carry the pins, but a release the data
            # lacks is still news
            if not have:
                yield (f"new release: {package.name}=={version} (sdist only: read its -libs/-cuXX wheels; "
                       f"not in compat/{package.table}.toml)")
            continue
        if package.table == "vllm":  # a vLLM wheel pins one torch release; the row records that pin
            yield from compare_torch_pin(package, version, have, requires, wheel, emit_toml)
            continue
        pin = cudnn_pin(requires)
        cuda = cuda_pin(requires)
        where = f"{package.name}=={version} ({wheel or 'no Linux x86_64 wheel'})"
        if not have:
            pinned = f"{pin[0]}{pin[1]}" if pin else "no nvidia-cudnn requirement"
            yield f"new release: {where}: {pinned}; CUDA {cuda or package.cuda or '?'} (not in compat/{package.table}.toml)"
            if emit_toml:
                yield draft_row(package, version, pin, cuda, requires, wheel)
            continue
        if pin is None or not pin[1]:
            continue  # no requirement, or one without a version (tensorrt 8.5: nvidia-cudnn-cu11)
        recorded = {str(r.get("cudnn_requirement") or r.get("cudnn") or "") for r in have}
        if not any(_same_pin(pin[1], value) for value in recorded):
            yield (f"changed pin: {where} requires {pin[0]}{pin[1]}; compat/{package.table}.toml has "
                   f"{', '.join(sorted(recorded)) or 'nothing'}")


def compare_torch_pin(package: Package, version: str, have: list[dict[str, Any]], requires: list[str], wheel: str,
                      emit_toml: bool) -> Iterator[str]:
    """A framework whose wheel pins torch==X (vLLM): a release the data lacks, or a pin that changed."""
    pins = [match.group(1) for line in requires if (match := re.match(r"^torch\s*\(?==\s*([0-9.]+)", line))]
    torch = pins[0] if pins else None
    recorded = {str(r.get("torch")) for r in have}
    if not have:
        yield f"new release: {package.name}=={version} ({wheel}): torch=={torch or '?'} (not in compat/{package.table}.toml)"
        if emit_toml and torch:
            source = f"{package.name}=={version} PyPI metadata ({wheel} METADATA: Requires-Dist torch=={torch})"
            yield f'[[build]]\nversion = "{version}"\ntorch = "{torch}"\nsource = {json.dumps(source)}\n'
    elif torch and torch not in recorded:
        yield f"changed pin: {package.name}=={version} ({wheel}) requires torch=={torch}; compat/{package.table}.toml has {sorted(recorded)}"


WHEEL_PLATFORMS = (("manylinux", "x86_64", "linux-x86_64"), ("manylinux", "aarch64", "linux-sbsa"),
                   ("win_amd64", "", "windows-x86_64"), ("win_arm64", "", "windows-arm64"))


def wheel_platforms(project: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    """release x.y.z -> (its four-part builds, the platforms it has wheels for), from PyPI's file names; yanked
    files, sdists and .dev versions left out (compat/cudnn.toml [[wheel]] is read the same way)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for version, files in project.get("releases", {}).items():
        match = re.fullmatch(r"(\d+\.\d+\.\d+)\.\d+(?:\.post\d+)?", version)
        if not match:
            continue
        for file in files:
            name = str(file.get("filename", ""))
            if file.get("yanked") or not name.endswith(".whl"):
                continue
            tag = name[:-4].rsplit("-", 1)[-1]
            for marker, machine, platform in WHEEL_PLATFORMS:
                if marker in tag and machine in tag:
                    builds, platforms = found.setdefault(match.group(1), (set(), set()))
                    builds.add(version.split(".post")[0])
                    platforms.add(platform)
    order = [platform for _, _, platform in WHEEL_PLATFORMS]
    return {release: (sorted(builds, key=release_key), [p for p in order if p in platforms])
            for release, (builds, platforms) in found.items()}


def compare_cudnn_wheels(package: Package, project: dict[str, Any]) -> Iterator[str]:
    """NVIDIA's cuDNN wheels on PyPI against compat/cudnn.toml [[wheel]] (which CUDA major and platforms exist)."""
    rows = tomllib.loads((COMPAT / "cudnn.toml").read_text()).get("wheel", [])
    recorded = {str(r.get("release")): list(r.get("platforms", [])) for r in rows if r.get("package") == package.name}
    for release, (builds, platforms) in sorted(wheel_platforms(project).items(), key=lambda kv: release_key(kv[0])):
        if release not in recorded:
            yield (f"new cuDNN wheel: {package.name} {release} ({', '.join(builds)}) for {', '.join(platforms)} "
                   "(compat/cudnn.toml [[wheel]] has no row)")
        elif recorded[release] != platforms:
            yield (f"changed cuDNN wheel platforms: {package.name} {release}: PyPI has {', '.join(platforms)}; "
                   f"compat/cudnn.toml [[wheel]] has {', '.join(recorded[release])}")


def _same_pin(wheel: str, recorded: str) -> bool:
    """"==9.19.0.56" and "9.19.0.56" are the same pin; a recorded "8.9.4" is the series of "8.9.4.25"."""
    def normal(text: str) -> str:
        return ",".join(sorted(part.strip().removeprefix("==") for part in text.replace(" ", "").split(",")))
    have, want = normal(wheel), normal(recorded)
    return have == want or ("," not in have and have.startswith(want + "."))


def draft_row(package: Package, version: str, pin: tuple[str, str] | None, cuda: str | None,
              requires: list[str], wheel: str) -> str:
    lines = ["[[build]]", f'version = "{version}"']
    if package.cuda:
        lines.append(f'cuda = "{package.cuda}"')
    elif cuda:
        lines.append(f'cuda = "{_cuda_text(cuda)}"')
    if cuda:
        lines.append(f'cuda_requirement = "{cuda}"')
    if pin:
        lines.append(f'cudnn_package = "{pin[0]}"')
        lines.append(f'cudnn_requirement = "{pin[1]}"')
    pins = "; ".join(r for r in requires if "cudnn" in r.lower() or r.lower().startswith(("cuda-toolkit", "nvidia-cuda-runtime")))
    source = f"{package.name}=={version} PyPI metadata ({wheel} METADATA)"
    if pins:
        source += f": Requires-Dist {pins}"
    lines.append("source = " + json.dumps(source))
    return "\n".join(lines) + "\n"


def _cuda_text(specifier: str) -> str:
    numbers = re.findall(r"\d+(?:\.\d+)*", specifier)
    return ".".join(numbers[0].split(".")[:2]) if numbers else "unknown"


def nvidia_manifests() -> Iterator[str]:
    """cuDNN releases in NVIDIA's redistrib index that compat/cudnn.toml does not have."""
    request = urllib.request.Request(NVIDIA_REDIST, headers={"User-Agent": "cudnn-doctor-refresh"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            index = response.read(2_000_000).decode("utf-8", "replace")
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise Unreachable(f"{NVIDIA_REDIST}: {getattr(error, 'reason', error)}") from None
    rows = tomllib.loads((COMPAT / "cudnn.toml").read_text()).get("release", [])
    known = {str(r.get("version")) for r in rows}
    for version in sorted(set(re.findall(r"redistrib_(\d+\.\d+\.\d+)\.json", index)), key=release_key):
        if version not in known:
            yield f"new cuDNN manifest: {NVIDIA_REDIST}redistrib_{version}.json (compat/cudnn.toml has no {version})"


FATBIN_MAGIC = 0xBA55ED50  # the fat binary container nvcc embeds in .nv_fatbin sections


def fatbin_entries(data: bytes) -> set[tuple[str, int]]:
    """(kind, sm) of every entry of every fat binary in DATA: kind "SASS" (cubin, ELF) or "PTX"."""
    found: set[tuple[str, int]] = set()
    magic = struct.pack("<I", FATBIN_MAGIC)
    at = data.find(magic)
    while at != -1:
        if at + 16 > len(data):
            break
        _, _, header, size = struct.unpack_from("<IHHQ", data, at)
        end = at + header + size
        if header != 16 or end > len(data):
            at = data.find(magic, at + 4)
            continue
        entry = at + header
        while entry + 32 <= end:
            kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, entry)
            if not 32 <= entry_header <= 1024:
                break
            sm = struct.unpack_from("<I", data, entry + 28)[0]
            found.add(("PTX" if kind == 1 else "SASS" if kind == 2 else f"kind{kind}", sm))
            entry += entry_header + padded
        at = data.find(magic, end)
    return found


def cudnn_wheel_archs(path: str) -> Iterator[str]:
    """What a downloaded nvidia-cudnn-cuXX wheel was compiled for: the SASS and PTX of each library's fat binaries,
    and the SASS every library with kernels holds (the arch_list a compat/cudnn.toml variant records)."""
    common: set[int] | None = None
    ptx_all: set[int] = set()
    with zipfile.ZipFile(path) as wheel:
        for name in sorted(n for n in wheel.namelist() if re.search(r"/lib/libcudnn[^/]*\.so", n)):
            entries = fatbin_entries(wheel.read(name))
            sass = {sm for kind, sm in entries if kind == "SASS"}
            ptx = {sm for kind, sm in entries if kind == "PTX"}
            if not sass:
                continue
            yield (f"{name.rsplit('/', 1)[-1]}: SASS {' '.join(f'sm_{sm}' for sm in sorted(sass))}; "
                   f"PTX {' '.join(f'compute_{sm}' for sm in sorted(ptx)) or 'none'}")
            ptx_all |= ptx
            if "engines_precompiled" not in name:  # its extra engines are optional; the others are needed by all
                common = sass if common is None else common & sass
    listing = [f"{sm // 10}.{sm % 10}" for sm in sorted(common or ())]
    yield f"arch_list = {json.dumps(listing)}  # ptx: {max(ptx_all) // 10}.{max(ptx_all) % 10}" if ptx_all else \
        f"arch_list = {json.dumps(listing)}  # no PTX"


def torch_wheel_archs(path: str) -> Iterator[str]:
    """What a downloaded torch wheel was compiled for, against compat/pytorch.toml's row of that build."""
    with zipfile.ZipFile(path) as wheel:
        version_py = wheel.read("torch/version.py").decode("utf-8", "replace")
        full = re.search(r"__version__ = '([^']+)'", version_py)
        cuda = re.search(r"cuda: Optional\[str\] = '([^']+)'", version_py)
        if full is None or cuda is None:
            yield f"{path}: not a CUDA build of torch (torch/version.py names no CUDA)"
            return
        flags = re.search(rb"\x00((?:sm|compute)_\d+[a-z]?(?: (?:sm|compute)_\d+[a-z]?)+)\x00",
                          wheel.read("torch/lib/libtorch_python.so"))
        entries = fatbin_entries(wheel.read("torch/lib/libtorch_cuda.so"))
    version = full.group(1).split("+")[0]
    archs = [f"{int(f[3:]) // 10}.{int(f[3:]) % 10}" for f in (flags.group(1).decode().split() if flags else [])
             if f.startswith("sm_")]
    sass = [f"{sm // 10}.{sm % 10}" for sm in sorted({sm for kind, sm in entries if kind == "SASS"})]
    ptx = [f"{sm // 10}.{sm % 10}" for sm in sorted({sm for kind, sm in entries if kind == "PTX"})]
    yield (f"torch {full.group(1)}: arch flags {' '.join(archs) or '(not found)'}; libtorch_cuda SASS {' '.join(sass)}; "
           f"PTX {' '.join(ptx) or 'none found'}")
    rows = [row for row in load_table(PACKAGES[0]) if row.get("version") == version
            and row.get("cuda") == cuda.group(1)]
    if not rows:
        yield f"  torch {version} CUDA {cuda.group(1)}: no row in compat/pytorch.toml"
    elif archs and rows[0].get("arch_list") != archs:
        yield f"  compat/pytorch.toml arch_list {rows[0].get('arch_list')} differs from the wheel's {archs}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated PyPI names (default: all), or 'nvidia' for the manifests")
    parser.add_argument("--toml", action="store_true", help="print a draft [[build]] row for each new release")
    parser.add_argument("--cudnn-wheel", action="append", default=[], metavar="WHEEL",
                        help="a downloaded nvidia-cudnn-cuXX wheel: print the GPU architectures of its libraries "
                             "(fatbin SASS/PTX) and the arch_list a compat/cudnn.toml variant records")
    parser.add_argument("--torch-wheel", action="append", default=[], metavar="WHEEL",
                        help="a downloaded torch wheel: print the GPU architectures it was compiled for "
                             "(arch flags, fatbin SASS/PTX) and compare them with compat/pytorch.toml")
    args = parser.parse_args(argv)
    if args.cudnn_wheel:
        for path in args.cudnn_wheel:
            try:
                for line in cudnn_wheel_archs(path):
                    print(line)
            except (OSError, KeyError, zipfile.BadZipFile) as error:
                print(f"{path}: cannot read it as a cuDNN wheel ({error})", file=sys.stderr)
                return 2
        return 0
    if args.torch_wheel:
        for path in args.torch_wheel:
            try:
                for line in torch_wheel_archs(path):
                    print(line)
            except (OSError, KeyError, zipfile.BadZipFile) as error:
                print(f"{path}: cannot read it as a torch wheel ({error})", file=sys.stderr)
                return 2
        return 0
    wanted = set(args.only.split(",")) if args.only else None
    differences = failures = attempts = 0
    for package in PACKAGES:
        if wanted and package.name not in wanted:
            continue
        attempts += 1
        try:
            for line in compare(package, args.toml):
                differences += 1
                print(line)
        except Unreachable as error:
            failures += 1
            if failures == attempts == 1 and any(word in str(error).lower() for word in ("refused", "name or service")):
                print(f"PyPI could not be reached ({error}); no package compared", file=sys.stderr)
                break
            print(f"could not read PyPI for {package.name}: {error}", file=sys.stderr)
    if not wanted or "nvidia" in wanted:
        try:
            for line in nvidia_manifests():
                differences += 1
                print(line)
        except Unreachable as error:
            print(f"NVIDIA's cuDNN redistrib index could not be reached ({error}); manifests not compared", file=sys.stderr)
    print(f"{differences} difference(s) from compat/", file=sys.stderr)
    if failures and not differences:
        return 2
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
