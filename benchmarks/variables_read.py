"""Every environment variable each installed reader can read, asked of the thing itself (issue 45, item 3; k22).

  Python files   torch, jax/jaxlib, onnxruntime, cupy, triton: every .py parsed (ast), each name read through
                 os.environ[...], os.environ.get, os.getenv, `NAME in os.environ`, a helper whose name holds 'env'
                 (bool_env, check_env_flag, _get_env ...) or JAX's config states (bool_state('jax_x') reads JAX_X),
                 and how the text is used: given to int(), float() or a reader that refuses what it does not know
                 (JAX's bool/enum/int/float states, bool_env, int_env, json.loads) is a read that can FAIL; any other
                 is text compared or passed on.
  libraries      the shared libraries of the real NVIDIA wheels (cuDNN, NCCL, cuBLAS, cudart, NVRTC, nvJitLink),
                 jaxlib and its CUDA plugin, torch's CPU wheel (libc10, libtorch_cpu), onnxruntime's, cupy's: every
                 NUL-terminated string of .rodata shaped like a variable of the reader's prefixes (getenv's argument
                 is such a string). A read a library wraps in a fatal check keeps that check's text
                 ('tsl::ReadInt64FromEnvVar("TF_X", 0, &v) is OK'): a read that can FAIL, with its default. NCCL's: which names its own messages say it parses as text ('NAME set by
                 environment to %s'); its defaults are compile-time numbers, no string holds them.

The coverage: names read against names with a row in compat/ (process_env.toml [[setting]], multi_gpu.toml
[[nccl_setting]]) or whose grammar the doctor reads from the installed reader itself (JAX's validating config
states, [[setting_family]] reader jax_config). Writes benchmarks/results/variables_read.json (committed) with the
package versions it was read from.

Usage: python benchmarks/variables_read.py FOLDER_OR_WHEEL... [--out FILE] [--quiet] [--nccl-source GIT_DIR]
  each FOLDER a site-packages (or an extracted wheel) holding the packages; a .whl is extracted into a temporary
  folder first. Example (the committed list):
    pip download --no-deps --only-binary=:all: -d /tmp/w nvidia-cudnn-cu13 nvidia-nccl-cu13 nvidia-cublas \\
        nvidia-cuda-runtime nvidia-cuda-nvrtc nvidia-nvjitlink jax jaxlib jax-cuda13-plugin jax-cuda13-pjrt \\
        onnxruntime cupy-cuda13x   # and torch's CPU wheel
    python benchmarks/variables_read.py /tmp/w/*.whl --nccl-source NVIDIA_NCCL_CHECKOUT
"""

from __future__ import annotations

import argparse
import ast
import json
import mmap
import re
import struct
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "variables_read.json"

# reader -> what it is read from (the packages' Python folders, its libraries' globs) and the prefixes of its own
# variables (a library's .rodata holds many strings shaped like names: only those of its prefixes are read)
READERS: dict[str, dict[str, Any]] = {
    "torch": {"python": ["torch"], "libraries": ["torch/lib/libc10.so", "torch/lib/libtorch_cpu.so",
                                                  "torch/lib/libtorch_python.so", "torch/lib/libtorch_global_deps.so"],
              "prefixes": ["TORCH", "PYTORCH", "TORCHINDUCTOR", "TORCHDYNAMO", "TORCHELASTIC", "CUDA", "CUDNN",
                           "CUBLAS", "CUBLASLT", "NCCL", "NVIDIA"]},
    "jax": {"python": ["jax", "jaxlib", "jax_plugins", "jax_cuda13_plugin", "jax_cuda12_plugin"],
            "libraries": ["jaxlib/*.so", "jaxlib/*/*.so", "jax_plugins/*/*.so", "jax_cuda13_plugin/*.so",
                          "jax_cuda12_plugin/*.so"],
            "prefixes": ["JAX", "XLA", "TF", "CUDA", "CUDNN", "CUBLAS", "CUBLASLT", "NCCL", "NVIDIA", "TPU"]},
    "onnxruntime": {"python": ["onnxruntime"], "libraries": ["onnxruntime/capi/*.so"],
                    "prefixes": ["ORT", "ONNXRUNTIME", "CUDA", "CUDNN", "CUBLAS", "CUBLASLT", "NCCL", "NVIDIA"]},
    "cupy": {"python": ["cupy", "cupyx", "cupy_backends"], "libraries": ["cupy/*.so", "cupy/*/*.so", "cupy/*/*/*.so",
                                                                         "cupy_backends/*/*.so", "cupy_backends/*/*/*.so"],
             "prefixes": ["CUPY", "CUPYX", "CUDA", "CUDNN", "CUBLAS", "NCCL", "NVIDIA"]},
    "cudnn": {"libraries": ["nvidia/cudnn/lib/libcudnn*.so*"], "prefixes": ["CUDNN", "CUDA", "CUBLAS", "CUBLASLT"]},
    "nccl": {"libraries": ["nvidia/nccl/lib/libnccl.so*"], "prefixes": ["NCCL", "CUDA"]},
    "cublas": {"libraries": ["nvidia/cublas/lib/libcublas*.so*", "nvidia/cu13/lib/libcublas*.so*"],
               "prefixes": ["CUBLAS", "CUBLASLT", "CUDA"]},
    "cudart": {"libraries": ["nvidia/cuda_runtime/lib/libcudart.so*", "nvidia/cu13/lib/libcudart.so*"],
               "prefixes": ["CUDA", "CUDART"]},
    "nvrtc": {"libraries": ["nvidia/cuda_nvrtc/lib/libnvrtc*.so*", "nvidia/cu13/lib/libnvrtc*.so*"],
              "prefixes": ["CUDA", "NVRTC"]},
    "nvjitlink": {"libraries": ["nvidia/nvjitlink/lib/libnvJitLink.so*", "nvidia/cu13/lib/libnvJitLink.so*"],
                  "prefixes": ["CUDA", "NVJITLINK"]},
}
NAME = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]")  # a variable's name as these readers spell theirs
JAX_STATES = {"bool_state": "bool", "enum_state": "enum", "optional_enum_state": "enum", "enum_class_state": "enum",
              "int_state": "int", "float_state": "float", "string_state": "text", "optional_string_state": "text",
              "string_or_object_state": "text", "define_bool_state": "bool", "define_enum_state": "enum",
              "define_int_state": "int", "define_float_state": "float", "define_string_state": "text"}
# readers of a variable's text that refuse what they do not take: the read can fail
STRICT_CALLS = {"int": "int()", "float": "float()", "bool_env": "bool_env", "int_env": "int_env",
                "loads": "json.loads", "literal_eval": "ast.literal_eval", "strtobool": "strtobool"}
NCCL_TEXT = re.compile(rb"(NCCL_[A-Z0-9_]+) set by environment to %s")
# the text of a CHECK_OK around TensorFlow's/XLA's env_var readers that a library keeps for its failure message: the
# read is fatal where the reader refuses the value (ReadStringFromEnvVar refuses nothing)
CHECKED = re.compile(rb'Read(Bool|Int64|Float)FromEnvVar\("([A-Z][A-Z0-9_]+)", ([^,()]{1,40}), &\w+\) is OK')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("places", nargs="+", help="site-packages folders, extracted wheels or .whl files")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--nccl-source", metavar="GIT_DIR", help="a git checkout of NVIDIA/nccl: each NCCL name's "
                        "default and declaration (NCCL_PARAM) from its source, at its HEAD")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="variables-read-") as scratch:
        folders = [unpacked(Path(place), Path(scratch)) for place in args.places]
        found = read_all(folders)
    if args.nccl_source and "nccl" in found["readers"]:
        found["nccl_source"] = nccl_defaults(args.nccl_source, found["readers"]["nccl"]["names"])
    found["coverage"] = coverage(found["readers"])
    Path(args.out).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    if not args.quiet:
        print_coverage(found)
    return 0


def unpacked(place: Path, scratch: Path) -> Path:
    """PLACE as a folder: a wheel is extracted (its Python files and libraries) into SCRATCH."""
    if place.is_dir():
        return place
    target = scratch / place.stem
    with zipfile.ZipFile(place) as archive:
        for member in archive.infolist():
            if member.filename.endswith((".py", ".so", "METADATA")) or ".so." in member.filename:
                archive.extract(member, target)
    return target


def read_all(folders: list[Path]) -> dict[str, Any]:
    """{packages: {distribution: version}, readers: {reader: {from, names: {NAME: {how, files, fails}}}}}."""
    packages = {name: version for folder in folders for name, version in distributions(folder).items()}
    api = api_names(folders)
    readers: dict[str, Any] = {}
    for reader, where in READERS.items():
        names: dict[str, dict[str, Any]] = {}
        files_read: list[str] = []
        for folder in folders:
            for package in where.get("python", []):
                for path in sorted((folder / package).rglob("*.py")) if (folder / package).is_dir() else []:
                    files_read.append(str(path.relative_to(folder)))
                    for name, how, scope in python_reads(path):
                        add(names, name, how, str(path.relative_to(folder)), scope)
            for pattern in where.get("libraries", []):
                for path in sorted(folder.glob(pattern)):
                    if path.is_symlink() or not path.is_file():
                        continue
                    files_read.append(str(path.relative_to(folder)))
                    for name, how in library_reads(path, where["prefixes"]):
                        if name in api or NOT_A_VARIABLE.search(name):
                            continue  # an enum constant or macro of the library's own API, kept for its messages
                        add(names, name, how, str(path.relative_to(folder)), "library")
        if files_read:
            readers[reader] = {"files": len(files_read), "prefixes": where["prefixes"],
                               "names": dict(sorted(names.items()))}
    return {"schema": "cudnn-doctor/variables-read/1", "packages": dict(sorted(packages.items())), "readers": readers}


def api_names(folders: list[Path]) -> set[str]:
    """Every identifier the C headers of FOLDERS declare (enum constants, macros: CUDNN_STATUS_SUCCESS,
    CUBLAS_COMPUTE_32F): a library keeps their names for its messages, none is a variable."""
    names: set[str] = set()
    for folder in folders:
        for header in folder.rglob("*.h"):
            names.update(IDENTIFIER.findall(header.read_text(errors="replace")))
    return names


IDENTIFIER = re.compile(r"\b[A-Z][A-Z0-9_]+\b")
# cuDNN's names of its engines, descriptors and MMA shapes (CUDNN_..._ENGINE, CUDNN_1688), which its logs print: no
# variable of any reader is spelt so
NOT_A_VARIABLE = re.compile(r"_ENGINE\d*$|_DESCRIPTOR$|^[A-Z]+_\d")


def add(names: dict[str, dict[str, Any]], name: str, how: str, path: str, scope: str) -> None:
    entry = names.setdefault(name, {"how": [], "files": [], "fails": False, "at": []})
    if how not in entry["how"]:
        entry["how"].append(how)
    if path not in entry["files"] and len(entry["files"]) < 4:
        entry["files"].append(path)
    if scope not in entry["at"]:
        entry["at"].append(scope)
    entry["fails"] = entry["fails"] or how in STRICT_CALLS.values() or how.startswith("jax state ") and \
        not how.endswith(" text") or how.startswith("checked ")  # a library's fatal check around its reader


def distributions(folder: Path) -> dict[str, str]:
    """The distributions FOLDER holds, from their metadata (*.dist-info/METADATA)."""
    found = {}
    for metadata in folder.glob("*.dist-info/METADATA"):
        fields = dict(line.split(": ", 1) for line in metadata.read_text(errors="replace").splitlines()[:20]
                      if ": " in line)
        if "Name" in fields and "Version" in fields:
            found[fields["Name"]] = fields["Version"]
    return found


def python_reads(path: Path) -> list[tuple[str, str, str]]:
    """(NAME, how its text is used, 'import' or the function reading it) for each variable PATH's code reads."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return []
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    reads: dict[ast.AST, tuple[str, str]] = {}
    for node in ast.walk(tree):
        found = read_by(node)
        if found is not None and NAME.fullmatch(found[0]):
            name, how = found
            reads[node] = (name, how if how.startswith("jax state") or how in STRICT_CALLS.values() else
                           used_as(node, parents, how))
    for node, how in strict_through_names(tree, parents, reads).items():
        reads[node] = (reads[node][0], how)
    return [(name, how, "function" if enclosing(node, parents) is not None else "import")
            for node, (name, how) in reads.items()]


def strict_through_names(tree: ast.AST, parents: dict[ast.AST, ast.AST],
                         reads: dict[ast.AST, tuple[str, str]]) -> dict[ast.AST, str]:
    """The reads whose text is kept in a name first and given to a strict reader in the same function
    (abort = os.getenv(X, '0'); ... bool(int(abort))): {read: the strict reader}."""
    kept: dict[tuple[ast.AST | None, str], list[tuple[tuple[int, int], ast.AST]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            read = next((n for n in ast.walk(node.value) if n in reads), None)
            if read is not None and len(targets) == 1 and isinstance(targets[0], ast.Name):
                kept.setdefault((enclosing(node, parents), targets[0].id), []).append(
                    ((node.lineno, node.col_offset), read))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in STRICT_CALLS and \
                node.args and isinstance(node.args[0], ast.Name):
            # the name's last assignment before this use (a module that reuses `env_str` for two variables)
            before = [(at, read) for at, read in kept.get((enclosing(node, parents), node.args[0].id), [])
                      if at <= (node.lineno, node.col_offset)]
            if before:
                out[max(before, key=lambda pair: pair[0])[1]] = STRICT_CALLS[node.func.id]
    return out


def enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The function NODE is in, or None at a module's top (run as it is imported)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    return None


def read_by(node: ast.AST) -> tuple[str, str] | None:
    """The variable NODE reads and how, or None."""
    if isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
        return (text, "os.environ[]") if (text := constant(node.slice)) else None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) and \
            is_environ(node.comparators[0]):
        return (text, "set or not") if (text := constant(node.left)) else None
    if not isinstance(node, ast.Call) or not node.args and not node.keywords:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
    if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop") and is_environ(func.value):
        return (text, f"os.environ.{func.attr}") if (text := constant(first)) else None
    if called in ("getenv", "getenvb"):
        return (text, "os.getenv") if (text := constant(first)) else None
    if called in JAX_STATES:
        text = constant(first)
        return (text.upper(), f"jax state {JAX_STATES[called]}") if text and text.startswith("jax_") else None
    if "env" in called.lower() and called not in ("setenv", "putenv", "unsetenv"):
        if called in STRICT_CALLS:
            return (text, STRICT_CALLS[called]) if (text := constant(first)) else None
        return (text, f"{called}()") if (text := constant(first)) else None
    return None


def words(node: ast.AST) -> bool:
    """Whether NODE is a text or a tuple, list or set of texts (what a switch is compared with)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(constant(e) is not None for e in node.elts)
    return constant(node) is not None


def is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" or isinstance(node, ast.Name) and \
        node.id == "environ"


def constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def used_as(node: ast.AST, parents: dict[ast.AST, ast.AST], how: str) -> str:
    """HOW, or the strict reader its text goes to first (int(os.environ.get(...)), json.loads(os.getenv(...)))."""
    parent = parents.get(node)
    for _ in range(3):  # int(os.environ.get(X, '0').strip()), float(os.getenv(X) or 1)
        if isinstance(parent, ast.Call):
            func = parent.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in STRICT_CALLS and node in parent.args:
                return STRICT_CALLS[called]
            if not isinstance(func, ast.Attribute) or func.value is not node:
                return how
        elif isinstance(parent, ast.Compare) and parent.left is node and all(words(c) for c in parent.comparators):
            return "compared with words"  # os.environ.get(X, '0') == '1': any other text is the other side
        elif not isinstance(parent, (ast.Attribute, ast.BoolOp)):
            return how
        node, parent = parent, parents.get(parent)
    return how


def library_reads(path: Path, prefixes: list[str]) -> list[tuple[str, str]]:
    """(NAME, 'rodata' or 'rodata, parsed as text') for each string of PATH's .rodata shaped like a variable of
    PREFIXES."""
    wanted = tuple(prefix + "_" for prefix in prefixes)
    out = []
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for start, size in rodata_sections(data):
            block = data[start:start + size]
            text_parsed = {m.group(1).decode() for m in NCCL_TEXT.finditer(block)}
            checked = {m.group(2).decode(): f"checked Read{m.group(1).decode()}FromEnvVar, default "
                       f"{m.group(3).decode('ascii', 'replace')}" for m in CHECKED.finditer(block)}
            out += [(name, how) for name, how in checked.items() if name.startswith(wanted)]
            for token in block.split(b"\0"):
                if 3 < len(token) < 96 and token.startswith(tuple(w.encode() for w in wanted)):
                    name = token.decode("ascii", "replace")
                    if NAME.fullmatch(name):
                        out.append((name, "rodata, parsed as text" if name in text_parsed else "rodata"))
    return out


def rodata_sections(data: mmap.mmap) -> list[tuple[int, int]]:
    """(offset, size) of each .rodata* section of a 64-bit little-endian ELF file; [] for anything else."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names_at = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or names_at >= count:
        return []
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names_offset = sections[names_at][4]
    out = []
    for section in sections:
        start = names_offset + section[0]
        name = data[start:data.find(b"\0", start)]
        if name.startswith(b".rodata") and section[1] != 8:  # 8: SHT_NOBITS
            out.append((section[4], section[5]))
    return out


def nccl_defaults(git_dir: str, names: dict[str, dict[str, Any]]) -> str:
    """Adds to each NCCL name of NAMES declared by NCCL_PARAM in the checkout GIT_DIR its default and declaration
    (the library's own strings hold no default: NCCL_PARAM's is a compile-time number); returns the source read
    (NVIDIA/nccl@commit)."""
    import importlib.util
    import subprocess

    spec = importlib.util.spec_from_file_location("nccl_param_rows", ROOT / "maintenance" / "nccl_param_rows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    commit = subprocess.run(["git", "-C", git_dir, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    for path, line, name, variable, default, _comment in module.declarations(git_dir, commit):
        if variable in names and "default" not in names[variable]:
            names[variable].update(default=default, declared=f"{path}:{line} NCCL_PARAM({name})")
    return f"NVIDIA/nccl@{commit}"


def coverage(readers: dict[str, Any]) -> dict[str, Any]:
    """Per reader: its names of its own prefixes, how many have a row, how many the doctor judges from the
    installed reader itself (JAX's validating states), how many can fail, and those of them without either."""
    sys.path.insert(0, str(ROOT))
    from cudnn_doctor.knowledge.environment import family_of, rows

    known = rows()
    out = {}
    for reader, found in readers.items():
        own = {name: entry for name, entry in found["names"].items() if name.startswith(
            tuple(prefix + "_" for prefix in found["prefixes"]))}
        rowed = sorted(name for name in own if name in known)
        derived = sorted(name for name, entry in own.items() if name not in known and derived_grammar(name, entry,
                                                                                                      family_of))
        failing = sorted(name for name, entry in own.items() if entry["fails"])
        compared = sorted(name for name, entry in own.items() if "compared with words" in entry["how"])
        judged = [name for name in compared if name in known or compared_in_family(name, own[name], family_of)]
        out[reader] = {"names": len(own), "with_row": len(rowed), "grammar_from_reader": len(derived),
                       "can_fail": len(failing),
                       "can_fail_without_row": sorted(n for n in failing if n not in known and n not in derived),
                       "compared_with_words": len(compared), "compared_judged": len(judged)}
    return out


def derived_grammar(name: str, entry: dict[str, Any], family_of: Any) -> bool:
    """Whether the doctor reads NAME's grammar from the installed reader itself: a name that can fail, read in a file
    of its family's names_from, where the family's reader parses that file's definitions (jax_config: JAX's states,
    bool_env, int_env; strings: a Python file's int() or float() of the variable; cudnn_doctor/probes/settings.py
    jax_options and _parsed_in_python)."""
    family = family_of(name) or {}
    if family.get("reader") not in ("jax_config", "strings") or not entry["fails"]:
        return False
    return any(globbed(pattern).fullmatch(path) for path in entry["files"] if path.endswith(".py")
               for pattern in family.get("names_from", ()))


def compared_in_family(name: str, entry: dict[str, Any], family_of: Any) -> bool:
    """Whether the doctor reads NAME's comparison with words from the installed reader's file itself: a family whose
    reader parses its names_from files (strings: cudnn_doctor/probes/settings.py _read_compared)."""
    family = family_of(name) or {}
    return family.get("reader") == "strings" and any(globbed(pattern).fullmatch(path) for path in entry["files"]
                                                    if path.endswith(".py") for pattern in family.get("names_from", ()))


def globbed(pattern: str) -> re.Pattern[str]:
    """PATTERN as glob.glob matches it: '*' within one folder."""
    return re.compile("".join("[^/]*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern)))


def print_coverage(found: dict[str, Any]) -> None:
    print("packages: " + ", ".join(f"{name}=={version}" for name, version in found["packages"].items()))
    print(f"{'reader':<12} {'names':>6} {'row':>5} {'from reader':>11} {'can fail':>8} {'fail, none':>10} "
          f"{'compared':>8} {'judged':>6}")
    for reader, line in found["coverage"].items():
        print(f"{reader:<12} {line['names']:>6} {line['with_row']:>5} {line['grammar_from_reader']:>11} "
              f"{line['can_fail']:>8} {len(line['can_fail_without_row']):>10} {line['compared_with_words']:>8} "
              f"{line['compared_judged']:>6}")
        if line["can_fail_without_row"]:
            print("   can fail, no row: " + " ".join(line["can_fail_without_row"]))


if __name__ == "__main__":
    sys.exit(main())
