"""Find deep-learning frameworks and what they were built for, without importing them.

`import torch` alone costs seconds, so everything here reads files: installed
distribution metadata, torch/version.py, TensorFlow's build_info.py, a Maven or
Gradle project for Deeplearning4j, .theanorc for Theano. Which cuDNN a framework
loads is resolved the way ld.so would, from its library's DT_RUNPATH.
"""

from __future__ import annotations

import ast
import functools
import glob
import os
import re
from dataclasses import replace

from cudnn_doctor.elf import ElfError, ElfInfo, read_elf
from cudnn_doctor.model import CudnnInstall, Framework
from cudnn_doctor.probes.context import SearchContext, working_folder
from cudnn_doctor.probes.loader import resolve_like_loader
from cudnn_doctor.user_files import SOURCE_LIMIT, UnreadableFile, read_text_or_empty, read_user_file
from cudnn_doctor.versions import ascii_digits, clean_version


def python_frameworks() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(distribution name prefix, framework name, libraries that link cuDNN relative to site-packages; globs
    allowed), read from compat/rules.toml [[framework]] so that `check` and `compat` know the same names."""
    from cudnn_doctor.knowledge.data import load

    found = []
    for row in load("rules").get("framework", []):
        for distribution in row.get("distributions", []):
            found.append((str(distribution), str(row.get("report_name", row["name"])), tuple(row.get("libraries", ()))))
    return tuple(found)


# each within its one line (METADATA is one field a line): a Requires-Dist with no ';' marker once ran on into the
# next line's, and CD401 named "nvidia-cudnn-cu12<10.0,>=9.8\nRequires-Dist: nvidia-cuda-nvcc-cu12>=12.6.85"
REQUIRES_CUDNN = re.compile(r"^Requires-Dist:[ \t]*(nvidia-cudnn-cu\d+)[ \t]*(\[[^]\n]*\])?[ \t]*\(?([^;)\r\n]*)\)?[ \t]*"
                            r"(;.*)?$", re.MULTILINE | re.IGNORECASE)
REQUIRES_NCCL = re.compile(r"^Requires-Dist:[ \t]*(nvidia-nccl-cu\d+)[ \t]*\(?([^;)\n]*)", re.MULTILINE | re.IGNORECASE)
NCCL_SPEC = re.compile(r"(==|>=)\s*(\d+(?:\.\d+)*)")


@functools.cache
def requires_cuda_pattern() -> re.Pattern[str]:
    return re.compile(r"^Requires-Dist:[ \t]*(?:nvidia-cuda-runtime(?:-cu(\d+))?|cuda-toolkit(?:\[[^]\n]*\])?)[ \t]*"
                      r"\(?[ \t]*(?:==|~=|>=)?[ \t]*(\d+)", re.MULTILINE | re.IGNORECASE)


REQUIRES_NVIDIA = re.compile(r"^Requires-Dist:[ \t]*(nvidia-[A-Za-z0-9._-]+)[ \t]*(?:\[[^]\n]*\])?[ \t]*\(?[ \t]*"
                             r"((?:==|>=|~=)[ \t]*[0-9][0-9.]*)",
                             re.MULTILINE | re.IGNORECASE)


@functools.cache
def cuda_in_name_pattern() -> re.Pattern[str]:
    return re.compile(r"cuda(\d+)|_cu(\d+)", re.IGNORECASE)


def detect_frameworks(ctx: SearchContext, project_dir: str | None = None) -> list[Framework]:
    return detect_python_frameworks(ctx) + _dl4j_frameworks(ctx, project_dir)


def detect_python_frameworks(ctx: SearchContext) -> list[Framework]:
    """The Python frameworks of CTX's site-packages folders, read from their files (`image` reads an image's so)."""
    found: list[Framework] = []
    seen: set[tuple[str, str]] = set()
    frameworks = python_frameworks()
    for site in ctx.site_packages_dirs():
        try:  # one listing per folder (a glob per framework and pattern cost more than the rest of the probe)
            entries = sorted(name for name in os.listdir(site) if name.endswith(("dist-info", "egg-info")))
        except OSError:
            continue
        for prefix, name, libraries in frameworks:
            starts = (f"{prefix}-", f"{prefix.capitalize()}-")
            for entry in entries:
                if not (entry.startswith(starts) if entry.endswith(".dist-info") else entry.startswith(starts[0])):
                    continue
                match = re.match(rf"(?i){prefix}-(.+?)\.(?:dist|egg)-info$", entry)
                if not match or (name, site) in seen:
                    continue
                seen.add((name, site))
                found.append(_python_framework(name, match.group(1), site, os.path.join(site, entry), libraries, ctx))
    return found


def _dl4j_frameworks(ctx: SearchContext, project_dir: str | None) -> list[Framework]:
    """DL4J, where there is anything of it to read: a Maven or Gradle build in the project folder, or ND4J
    in ~/.m2. The Maven and Gradle readers (and the XML parser) are imported only then."""
    from cudnn_doctor.probes.project_folders import default_project_folder, has_build_file

    root = project_dir if project_dir is not None else working_folder()
    local = os.path.join(ctx.env.get("HOME", ""), ".m2", "repository", "org", "nd4j")
    if project_dir is None and root is not None and not has_build_file(root) and default_project_folder(ctx.env):
        project_dir = root  # a folder of projects (a repository of services): read as --project . reads it
    if project_dir is None and not ((root is not None and has_build_file(root)) or os.path.lexists(local)):
        return []
    from cudnn_doctor.probes.dl4j import detect_dl4j

    return detect_dl4j(ctx, project_dir)


def _python_framework(name: str, version: str, site: str, info: str, libraries: tuple[str, ...],
                      ctx: SearchContext) -> Framework:
    details: dict[str, object] = {"site_packages": site, "python": interpreter_of(site)}
    cuda = None
    cudnn_expected = None
    metadata = _read(os.path.join(info, "METADATA")) or _read(os.path.join(info, "PKG-INFO"))
    declared = re.search(r"^Version:\s*(\S+)", metadata, re.MULTILINE)
    if declared:  # the folder name may drop the local part: torch-2.11.0.dist-info holds 2.11.0+cu130
        version = declared.group(1)
    nccl = REQUIRES_NCCL.search(metadata)
    spec = NCCL_SPEC.search(nccl.group(2)) if nccl else None
    if nccl and spec:  # the NCCL the wheel was built against and pins, or the least it takes (jax's plugin; issue 42)
        details["nccl_package"] = nccl.group(1).lower()
        details["nccl_requirement"] = spec.group(2) if spec.group(1) == "==" else f">={spec.group(2)}"
    # every NVIDIA library wheel its metadata pins (torch: ==, each exactly) or takes from a floor (jax's plugin:
    # >=): what a copy of that library that the framework gets is compared with (probes/loading.with_wheel_facts)
    nvidia = {wheel.lower().replace("_", "-"): spec.replace(" ", "").rstrip(".")
              for wheel, spec in REQUIRES_NVIDIA.findall(metadata)}
    if re.search(r"^Requires-Dist:\s*cuda-toolkit\b", metadata, re.MULTILINE | re.IGNORECASE):
        # torch's CUDA 13 builds pin NVIDIA's cuda-toolkit metapackage ('Requires-Dist: cuda-toolkit[cublas,cudart,
        # ...]==13.0.2' in torch 2.11+cu130's METADATA), which pins each library wheel: its installed METADATA says which
        for info_dir in sorted(glob.glob(os.path.join(glob.escape(site), "cuda_toolkit-*.dist-info")))[:1]:
            chained = _read(os.path.join(info_dir, "METADATA"))
            for wheel, spec in REQUIRES_NVIDIA.findall(chained):
                nvidia.setdefault(wheel.lower().replace("_", "-"), spec.replace(" ", "").rstrip("."))  # ==13.1.0.3.*
    if nvidia:
        details["nvidia_requirements"] = nvidia
    pins = REQUIRES_CUDNN.findall(metadata)
    if pins:
        distribution, _extras, spec, _marker = pins[0]
        details["cudnn_package"] = distribution.lower()
        details["cudnn_requirement"] = spec.strip()
        cudnn_expected = spec.strip().lstrip("=") if spec.strip().startswith("==") else spec.strip() or None
    if name == "torch":
        text = _read(os.path.join(site, "torch", "version.py"))
        declared = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        if declared:  # PyPI's METADATA says 2.11.0 where torch itself says 2.11.0+cu130
            version = declared.group(1)
        # a CUDA release in the digits 0-9 (re.ASCII: Python's \d takes Arabic-Indic and fullwidth ones, which no
        # build writes) and of its shape (12.4, 12.8.1), not '....' or 100,000 digits a hostile version.py holds
        match = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d{1,3}(?:\.\d{1,4}){0,2})['\"]", text, re.MULTILINE | re.ASCII)
        cuda = match.group(1) if match else None
        if cuda is None and "+cu" in version:
            local = version.split("+cu")[1]
            cuda = f"{local[:-1]}.{local[-1]}" if ascii_digits(local) and 3 <= len(local) <= 4 else None
        details["cpu_only"] = cuda is None and ("+cpu" in version or "cuda" in text)
    elif name == "tensorflow":
        build = _tensorflow_build_info(site)
        details["build_info"] = build
        cuda = build.get("cuda_version") or None
        cudnn_expected = cudnn_expected or build.get("cudnn_version") or None
        details["cpu_only"] = build.get("is_cuda_build") is False
    elif name == "jax":
        plugin = re.search(r"cuda(\d+)", os.path.basename(info))
        cuda = plugin.group(1) if plugin else None
        if plugin is None:  # jax itself, and no CUDA plugin in this site (the plugins are found first)
            cuda, cudnn_expected = _monolithic_jaxlib(site, details)
            details["cpu_only"] = cuda is None
    elif name == "theano":
        details["theano_flags"] = theano_flags(ctx)
    else:  # onnxruntime, cupy, tensorrt, paddle: the CUDA major from the distribution's name or its requirements
        in_name = cuda_in_name_pattern().search(os.path.basename(info))
        required = requires_cuda_pattern().search(metadata)
        cuda = (next(g for g in in_name.groups() if g) if in_name else
                (required.group(1) or required.group(2)) if required else None)
        if name == "paddle":  # the wheel's generated paddle/version/__init__.py names what it was built with
            built = dict(re.findall(r"^(cuda_version|cudnn_version)\s*=\s*['\"]([^'\"]*)['\"]",
                                    _read(os.path.join(site, "paddle", "version", "__init__.py")), re.MULTILINE))
            cuda = built.get("cuda_version") if built.get("cuda_version", "False") != "False" else cuda
            if built.get("cudnn_version", "False") != "False":
                cudnn_expected = built["cudnn_version"]
            details["cpu_only"] = built.get("cuda_version") == "False"
        cudnn_expected = cudnn_expected or _cudnn_from_data(name, version, cuda, details)
    library = next(iter(_existing(site, libraries)), None)
    details["cudnn_linking_library"] = library
    if name == "onnxruntime" and library is None and os.path.basename(info).lower().startswith("onnxruntime-"):
        details["cpu_only"] = True  # the `onnxruntime` package (not onnxruntime-gpu): no CUDA execution provider
    if details.get("cpu_only"):
        cudnn_expected = None  # the release's GPU build would want one; this build wants none
    return Framework(name=name, version=version, cuda_built_for=cuda, cudnn_expected=cudnn_expected,
                     cudnn_used=None, found_via="dist-info", location=info, details=details)


def interpreter_of(site: str) -> str | None:
    """The python of the environment SITE belongs to (<env>/lib/python3.12/site-packages -> <env>/bin/python3.12),
    the one whose pip installs into SITE; None where no such file is there."""
    parts = site.rstrip(os.sep).split(os.sep)
    if len(parts) < 4 or parts[-1] not in ("site-packages", "dist-packages"):
        return None
    if parts[-2] == "python3":  # Debian's /usr/lib/python3/dist-packages
        root, names = os.sep.join(parts[:-3]), ["python3"]
    elif parts[-2].startswith("python"):
        root, names = os.sep.join(parts[:-3]), [parts[-2], "python3", "python"]
    else:
        return None
    for name in names:
        candidate = os.path.join(root or os.sep, "bin", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@functools.cache
def jaxlib_cuda_pattern() -> re.Pattern[str]:
    # jaxlib 0.4.25+cuda12.cudnn89
    return re.compile(r"\+cuda(\d+)(?:\.cudnn(\d)(\d+))?")


def _monolithic_jaxlib(site: str, details: dict[str, object]) -> tuple[str | None, str | None]:
    """(CUDA major, cuDNN major.minor) of a monolithic CUDA jaxlib (before 0.4.30, jaxlib X+cudaNN.cudnnMN from
    JAX's own index), or (None, None) for the PyPI jaxlib, which has no GPU code."""
    infos = sorted(glob.glob(os.path.join(site, "jaxlib-*.dist-info")))
    if not infos:
        details["jaxlib"] = None
        return None, None
    match = re.match(r"jaxlib-(.+?)\.dist-info$", os.path.basename(infos[-1]))
    metadata = _read(os.path.join(infos[-1], "METADATA"))
    declared = re.search(r"^Version:\s*(\S+)", metadata, re.MULTILINE)
    version = declared.group(1) if declared else match.group(1) if match else ""
    details["jaxlib"] = version
    local = jaxlib_cuda_pattern().search(version)
    if local is None:
        return None, None
    return local.group(1), f"{local.group(2)}.{local.group(3)}" if local.group(2) else None


def _existing(site: str, libraries: tuple[str, ...]) -> list[str]:
    """The framework's libraries present under SITE (patterns such as cupy's cudnn.*.so expanded)."""
    found: list[str] = []
    for library in libraries:
        path = os.path.join(site, library)
        found += sorted(glob.glob(path)) if any(c in library for c in "*?[") else [path] if os.path.exists(path) else []
    return found


def _cudnn_from_data(name: str, version: str, cuda: str | None, details: dict[str, object]) -> str | None:
    """The cuDNN series compat/ records for this release where its wheel pins none ("none": it uses no cuDNN)."""
    from cudnn_doctor.knowledge import frameworks as knowledge

    canonical = knowledge.canonical_name(name)
    if canonical is None:
        return None
    need = knowledge.needs(canonical, version)
    rows = knowledge.rows_for_cuda(need, cuda) if need.rows else []
    values = {str(row.get("cudnn")) for row in rows} - {"None", "unknown"}
    if values == {"none"}:
        details["uses_cudnn"] = False
        return None
    details["cudnn_from"] = rows[0].get("source") if rows else None
    return sorted(values)[0] if len(values) == 1 else None


def _read(path: str) -> str:
    """A user's text file (METADATA, version.py, build_info.py), or "" when missing or unreadable:
    a FIFO, a huge file, bytes that are not UTF-8 never stop the doctor."""
    return read_text_or_empty(path, SOURCE_LIMIT)


BUILD_INFO_TEXT_KEYS = ("cuda_version", "cudnn_version", "cuda_compute_capabilities")


def _tensorflow_build_info(site: str) -> dict[str, object]:
    """TensorFlow's build_info.py read as a file: its `build_info = {...}` literal, only the values
    whose type is right (versions as plausible strings, flags as booleans)."""
    text = _read(os.path.join(site, "tensorflow", "python", "platform", "build_info.py"))
    match = re.search(r"build_info\s*=\s*(\{.*?\})", text, re.DOTALL)
    if not match or len(match.group(1)) > 64 * 1024:
        return {}
    try:
        value = ast.literal_eval(match.group(1))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # a deep expression: no
        return {}
    if not isinstance(value, dict):
        return {}
    build: dict[str, object] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            continue
        if key in ("cuda_version", "cudnn_version"):
            if isinstance(item, str) and (clean_version(item) or item == ""):
                build[key] = item
        elif isinstance(item, bool) or (isinstance(item, str) and len(item) < 4096):
            build[key] = item
        elif isinstance(item, (list, tuple)) and all(isinstance(x, str) and len(x) < 64 for x in item[:256]):
            build[key] = list(item[:256])
    return build


def theano_config_files(env: dict[str, str]) -> list[str]:
    """The files Theano reads, as theano/configparser.py's config_files_from_theanorc() lists them:
    THEANORC (colon-separated, the later file wins) or ~/.theanorc (and ~/.theanorc.txt, which Theano
    reads on Windows only; listed here too, as this doctor always has)."""
    home = env.get("HOME", "")

    def expand(path: str) -> str:
        return home + path[1:] if home and (path == "~" or path.startswith("~/")) else path

    if env.get("THEANORC") is not None:
        return [expand(part) for part in env["THEANORC"].split(os.pathsep) if part]
    return [os.path.join(home, ".theanorc"), os.path.join(home, ".theanorc.txt")]


def theano_flags(ctx: SearchContext, unreadable: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """Theano's configuration: its config files, overridden by THEANO_FLAGS. The files are read as
    Theano itself reads them (Theano/Theano@d6903d009a85 theano/configparser.py): a ConfigParser whose
    defaults USER, LSCRATCH, TMPDIR, TEMP, TMP and PID serve `%(USER)s` interpolation, and a value
    whose interpolation fails taken raw. A file that cannot be read or parsed adds (path, why) to
    UNREADABLE and is passed over, as Theano would fail on it."""
    env = ctx.env
    defaults = dict(  # Theano's own interpolation defaults: values it sets, not variables the doctor judges
        USER=env.get("USER", os.path.basename(env.get("HOME", "").rstrip("/"))),
        LSCRATCH=env.get("LSCRATCH", ""), TMPDIR=env.get("TMPDIR", ""), TEMP=env.get("TEMP", ""),
        TMP=env.get("TMP", ""), PID=str(os.getpid()),
    )
    flags: dict[str, str] = {}
    for path in theano_config_files(env):
        try:
            text = read_user_file(path)
        except UnreadableFile as error:
            if os.path.lexists(path) and unreadable is not None:
                unreadable.append((path, str(error)))
            continue
        try:
            import configparser

            parser = configparser.ConfigParser(defaults)
            parser.read_string(text.decode("utf-8"), source=path)
            raw = configparser.RawConfigParser()
            raw.read_string(text.decode("utf-8"), source=path)
            for section in raw.sections():
                for key in raw.options(section):  # the user's settings, not Theano's defaults
                    try:
                        value = parser.get(section, key)
                    except configparser.InterpolationError:
                        value = raw.get(section, key)
                    flags[key if section == "global" else f"{section}.{key}"] = value
        except UnicodeDecodeError:
            if unreadable is not None:
                unreadable.append((path, "not a text file (its bytes are not UTF-8)"))
        except (configparser.Error, ValueError, RecursionError) as error:
            if unreadable is not None:
                unreadable.append((path, " ".join(str(error).split())[:200]))
    for item in env.get("THEANO_FLAGS", "").split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            flags[key.strip()] = value.strip()
    return flags


# --- which cuDNN each framework loads --------------------------------------------------------

def link_frameworks_to_installs(frameworks: list[Framework], installs: list[CudnnInstall], ctx: SearchContext,
                                cache: dict[str, list[str]]) -> tuple[list[Framework], list[CudnnInstall]]:
    """Resolve the cuDNN each framework will load, and mark that install as loaded by it."""
    linked: list[Framework] = []
    for framework in frameworks:
        used = _resolve_framework_cudnn(framework, installs, ctx, cache)
        if used is not None:
            real = os.path.realpath(used)
            match = next((i for i in installs if os.path.realpath(i.library) == real), None)
            installs = [replace(i, loaded_by=i.loaded_by + (framework.name,))
                        if i is match and framework.name not in i.loaded_by else i for i in installs]
            framework = replace(framework, cudnn_used=match.library if match else used)
        linked.append(framework)
    return linked, installs


def _resolve_framework_cudnn(framework: Framework, installs: list[CudnnInstall], ctx: SearchContext,
                             cache: dict[str, list[str]]) -> str | None:
    library = framework.details.get("cudnn_linking_library")
    if framework.details.get("uses_cudnn") is False or framework.details.get("cpu_only"):
        return None  # a CPU-only build loads no cuDNN, whatever its release's GPU build would
    info = None if framework.name == "theano" else _elf_or_none(library)
    if framework.name == "theano":
        folder = framework.details.get("theano_flags", {}).get("dnn.library_path")  # type: ignore[union-attr]
        runpath = [str(folder)] if folder else []
        sonames = ["libcudnn.so"] + [f"libcudnn.so.{m}" for m in (9, 8, 7, 6, 5)]
    elif isinstance(library, str) and library.lower().endswith(".dll"):
        from cudnn_doctor.probes.pe import PeError, read_pe  # Windows' files: not on a Linux check's path

        try:
            imports = read_pe(library).imports
        except PeError:
            return None
        # the importing DLL's own folder first (LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR, as torch loads its DLLs)
        runpath = [os.path.dirname(library)]
        sonames = [n for n in imports if n.lower().startswith("cudnn64_")] or \
            [ctx.layout.cudnn.format(major=m) for m in _expected_majors(framework)]
    elif info is not None and isinstance(library, str):
        origin = os.path.dirname(library)
        runpath = [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for p in info.rpath + info.runpath]
        sonames = [n for n in info.needed if n.startswith("libcudnn.so")]
        if not sonames:  # loaded with dlopen at run time (TensorFlow, JAX): by the major it was built with
            sonames = [f"libcudnn.so.{m}" for m in _expected_majors(framework)]
    elif framework.details.get("cudnn_package") and framework.details.get("site_packages"):
        # its own library unreadable, but it pins a cuDNN wheel: that wheel's folder in its own site-packages is
        # where its RUNPATH points (torch: $ORIGIN/../../nvidia/cudnn/lib), after LD_LIBRARY_PATH as ever
        runpath = [os.path.join(str(framework.details["site_packages"]), "nvidia", "cudnn", "lib")]
        sonames = [f"libcudnn.so.{m}" for m in _expected_majors(framework)]
    elif _profile(framework.name).get("dlopens_cudnn") and (framework.cuda_built_for or framework.cudnn_expected):
        runpath = []  # dlopen("libcudnn.so.N") from a library we could not read: the loader's own search
        sonames = [ctx.layout.cudnn.format(major=m) for m in _expected_majors(framework)]
    else:
        return None
    for soname in sonames:
        path = resolve_like_loader(soname, runpath, ctx, cache)
        if path:
            return path
    return None


def _elf_or_none(library: object) -> ElfInfo | None:
    if not isinstance(library, str):
        return None
    try:
        return read_elf(library)
    except ElfError:
        return None


def _expected_majors(framework: Framework) -> list[int]:
    """cuDNN majors the framework dlopens: from "9.1.0.70", "8", or a pin like "<10.0,>=9.12.0.46"."""
    expected = framework.cudnn_expected or ""
    lower = re.search(r"(?:>=|==|~=|>)\s*(\d{1,4})(?!\d)", expected) or re.match(r"\s*(\d{1,4})(?!\d)", expected)
    return [int(lower.group(1))] if lower else [9, 8]


def _profile(name: str) -> dict[str, object]:
    """compat/rules.toml's [[framework]] row of NAME (empty for a name it has none for)."""
    from cudnn_doctor.knowledge.frameworks import profile

    return profile(name)
