"""Find deep-learning frameworks and what they were built for, without importing them.

`import torch` alone costs seconds, so everything here reads files: installed
distribution metadata, torch/version.py, TensorFlow's build_info.py, a Maven or
Gradle project for Deeplearning4j, .theanorc for Theano. Which cuDNN a framework
loads is resolved the way ld.so would, from its library's DT_RUNPATH.
"""

from __future__ import annotations

import ast
import configparser
import glob
import os
import re
from dataclasses import replace
from pathlib import Path

from cudnn_doctor.model import CudnnInstall, Framework
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.dl4j import detect_dl4j
from cudnn_doctor.probes.elf import ElfError, read_elf
from cudnn_doctor.probes.loader import resolve_like_loader

# (distribution name prefix, framework name, the library that links cuDNN, relative to site-packages)
PYTHON_FRAMEWORKS = (
    ("torch", "torch", ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_cuda_cpp.so")),
    ("tensorflow", "tensorflow", ("tensorflow/libtensorflow_framework.so.2", "tensorflow/libtensorflow_cc.so.2")),
    ("tf_nightly", "tensorflow", ("tensorflow/libtensorflow_framework.so.2",)),
    ("tensorflow_gpu", "tensorflow", ("tensorflow/libtensorflow_framework.so.2", "tensorflow/libtensorflow_framework.so.1")),
    ("jax_cuda13_plugin", "jax", ("jax_plugins/xla_cuda13/xla_cuda_plugin.so",)),
    ("jax_cuda12_plugin", "jax", ("jax_plugins/xla_cuda12/xla_cuda_plugin.so",)),
    ("theano", "theano", ()),
)
REQUIRES_CUDNN = re.compile(r"^Requires-Dist:\s*(nvidia-cudnn-cu\d+)\s*(\[[^]]*\])?\s*\(?([^;)]*)\)?\s*(;.*)?$",
                            re.MULTILINE | re.IGNORECASE)


def detect_frameworks(ctx: SearchContext, project_dir: str | None = None) -> list[Framework]:
    found: list[Framework] = []
    seen: set[tuple[str, str]] = set()
    for site in ctx.site_packages_dirs():
        for prefix, name, libraries in PYTHON_FRAMEWORKS:
            for info in sorted(glob.glob(os.path.join(site, f"{prefix}-*.dist-info")) +
                               glob.glob(os.path.join(site, f"{prefix.capitalize()}-*.dist-info")) +
                               glob.glob(os.path.join(site, f"{prefix}-*.egg-info"))):
                match = re.match(rf"(?i){prefix}-(.+?)\.(?:dist|egg)-info$", os.path.basename(info))
                if not match or (name, site) in seen:
                    continue
                seen.add((name, site))
                found.append(_python_framework(name, match.group(1), site, info, libraries, ctx))
    found += detect_dl4j(ctx, project_dir)
    return found


def _python_framework(name: str, version: str, site: str, info: str, libraries: tuple[str, ...],
                      ctx: SearchContext) -> Framework:
    details: dict[str, object] = {"site_packages": site}
    cuda = None
    cudnn_expected = None
    metadata = _read(os.path.join(info, "METADATA")) or _read(os.path.join(info, "PKG-INFO"))
    declared = re.search(r"^Version:\s*(\S+)", metadata, re.MULTILINE)
    if declared:  # the folder name may drop the local part: torch-2.11.0.dist-info holds 2.11.0+cu130
        version = declared.group(1)
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
        match = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([\d.]+)['\"]", text, re.MULTILINE)
        cuda = match.group(1) if match else None
        if cuda is None and "+cu" in version:
            local = version.split("+cu")[1]
            cuda = f"{local[:-1]}.{local[-1]}" if local.isdigit() and len(local) >= 3 else None
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
    elif name == "theano":
        details["theano_flags"] = theano_flags(ctx)
    library = next((os.path.join(site, lib) for lib in libraries if os.path.exists(os.path.join(site, lib))), None)
    details["cudnn_linking_library"] = library
    return Framework(name=name, version=version, cuda_built_for=cuda, cudnn_expected=cudnn_expected,
                     cudnn_used=None, found_via="dist-info", location=info, details=details)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _tensorflow_build_info(site: str) -> dict[str, object]:
    text = _read(os.path.join(site, "tensorflow", "python", "platform", "build_info.py"))
    match = re.search(r"build_info\s*=\s*(\{.*?\})", text, re.DOTALL)
    if not match:
        return {}
    try:
        value = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return {}
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def theano_flags(ctx: SearchContext) -> dict[str, str]:
    """Theano's configuration: ~/.theanorc, overridden by THEANO_FLAGS."""
    flags: dict[str, str] = {}
    for path in (os.path.join(ctx.env.get("HOME", ""), ".theanorc"), os.path.join(ctx.env.get("HOME", ""), ".theanorc.txt")):
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        for section in parser.sections():
            for key, value in parser.items(section):
                flags[key if section == "global" else f"{section}.{key}"] = value
    for item in ctx.env.get("THEANO_FLAGS", "").split(","):
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
    if framework.name == "theano":
        folder = framework.details.get("theano_flags", {}).get("dnn.library_path")  # type: ignore[union-attr]
        runpath = [str(folder)] if folder else []
        sonames = ["libcudnn.so"] + [f"libcudnn.so.{m}" for m in (9, 8, 7, 6, 5)]
    elif isinstance(library, str):
        try:
            info = read_elf(library)
        except ElfError:
            return None
        origin = os.path.dirname(library)
        runpath = [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin) for p in info.rpath + info.runpath]
        sonames = [n for n in info.needed if n.startswith("libcudnn.so")]
        if not sonames:  # loaded with dlopen at run time (TensorFlow, JAX): by the major it was built with
            sonames = [f"libcudnn.so.{m}" for m in _expected_majors(framework)]
    elif framework.name in ("tensorflow", "jax") and framework.cuda_built_for:
        runpath = []  # dlopen("libcudnn.so.N") from a library we could not read: the loader's own search
        sonames = [f"libcudnn.so.{m}" for m in _expected_majors(framework)]
    else:
        return None
    for soname in sonames:
        path = resolve_like_loader(soname, runpath, ctx, cache)
        if path:
            return path
    return None


def _expected_majors(framework: Framework) -> list[int]:
    """cuDNN majors the framework dlopens: from "9.1.0.70", "8", or a pin like "<10.0,>=9.12.0.46"."""
    expected = framework.cudnn_expected or ""
    lower = re.search(r"(?:>=|==|~=|>)\s*(\d+)", expected) or re.match(r"\s*(\d+)", expected)
    return [int(lower.group(1))] if lower else [9, 8]
