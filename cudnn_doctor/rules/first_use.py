"""What fails only at a framework's first compilation or first use of a CUDA library, after its import succeeded
(issue 45, p17): XLA's ptxas, nvlink and libdevice as XLA finds them, NVRTC's builtins as the loader gives them
(report.first_use, probes/first_use.py; compat/first_use.toml). Read from files, so each is a warning that names how
`check --deep` proves it; NVRTC's own refusal, compiling a kernel in a child, is seen. Pure: no I/O."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Report, XlaCompiler
from cudnn_doctor.versions import version_tuple

PROVE_JAX = ("`cudnn-doctor check --deep` compiles and runs a JAX kernel that calls exp here (ptxas and libdevice), "
             "which proves it (a GPU compiler runs only with a GPU)")
SHOWN = 4  # candidates named in a finding at the most


def _data() -> dict[str, Any]:
    return load("first_use")


def _gpu(report: Report) -> bool:
    return bool(report.gpus)


def _kernel_ran(report: Report) -> bool:
    """Whether JAX, under --deep, compiled and ran a kernel that calls exp (ptxas and libdevice) here: seen working,
    which outweighs what the files suggested."""
    return any(f.name == "jax" and isinstance(f.details.get("deep"), dict) and f.details["deep"].get("kernel_ran")
               for f in report.frameworks)


def _candidates(xla: XlaCompiler, tool: str = "ptxas") -> str:
    looked = xla.nvlink_candidates if tool == "nvlink" else xla.ptxas
    if not looked:
        return f"none of them holds a{'n' if tool == 'nvlink' else ''} {tool}"
    shown = [f"{c.path} ({c.how}): {c.verdict}" + (f", {c.said}" if c.said else "") for c in looked[:SHOWN]]
    more = f"; and {len(looked) - SHOWN} more" if len(looked) > SHOWN else ""
    return "; ".join(shown) + more


def _data_dir_words(xla: XlaCompiler) -> str:
    words = f"its CUDA data folder {xla.data_dir} ({xla.data_dir_from})"
    if xla.flag_data_dir is not None and xla.data_dir_from not in ("XLA_FLAGS",):
        words += (f"; XLA_FLAGS's --xla_gpu_cuda_data_dir={xla.flag_data_dir} is not used: JAX sets its own "
                  f"({xla.data_dir_from}) for every compilation")
    return words


def _made(code: str, subject: str, detail: str, refs: tuple[str, ...], evidence: str, proof: str,
          severity: str = "warning", **values: Any) -> Finding:
    made = finding(code, subject=subject, refs=refs, evidence=evidence, proof=proof, detail=detail, **values)
    return replace(made, severity=severity, detail=detail)


def xla_ptxas(report: Report) -> list[Finding]:
    """No ptxas XLA would take in any place it looks (each candidate run as XLA runs it, and passed over as XLA
    passes it over): JAX's first compilation fails, unless the driver may compile (XLA_FLAGS). Parallel compilation
    asked without an nvlink. A warning `check --deep` proves."""
    xla = report.first_use.xla if report.first_use else None
    if xla is None or not _gpu(report) or xla.driver_fallback or _kernel_ran(report):
        return []
    row = _data()["xla_ptxas"]
    refs = (row["source"], _data()["jax_cuda_path"]["source"])
    hung = xla.ptxas[-1] if xla.ptxas and xla.ptxas[-1].verdict == "hangs" else None
    if xla.ptxas_used is None and hung is not None:
        return [_made(
            "CD208", hung.path, refs=(*refs, row["start_source"]), evidence="read", proof=(
                f"XLA's search, in its order: {_candidates(xla)}; each run here as XLA runs it (`ptxas --version`, "
                f"its output read to the end), not compiled: {PROVE_JAX}"),
            detail=(f"JAX's XLA runs each ptxas it finds with `--version` and reads the answer to its end "
                    f"({_data_dir_words(xla)}, then each PATH folder, then its CUDA roots). {hung.path} ({hung.how}): "
                    f"{hung.said}. Move it off the path XLA searches, or mend it so that its `--version` ends; "
                    f"{PROVE_JAX}."),
            kind="ptxas", framework="jax", fix_folder=xla.data_dir)]
    if xla.ptxas_used is None:
        return [_made(
            "CD208", xla.data_dir, refs=refs, evidence="read", proof=(
                f"XLA's search, in its order ({xla.places} places): {_candidates(xla)}; read and run here (`ptxas "
                f"--version`), not compiled: {PROVE_JAX}"),
            detail=(f"JAX's XLA finds no ptxas it takes in the {xla.places} places it looks ({_data_dir_words(xla)}, "
                    f"then each PATH folder, then its CUDA roots): {_candidates(xla)}. XLA passes over a ptxas that "
                    f"does not run, prints no version, or is older than {row['minimum']}, so JAX's first compilation "
                    f"(its first operation) fails: 'Couldn't find a suitable version of ptxas' / 'No PTX compilation "
                    f"provider is available'. {PROVE_JAX}."),
            kind="ptxas", framework="jax", fix_folder=xla.data_dir)]
    linker = xla.nvlink_candidates[-1] if xla.nvlink_candidates else None
    if xla.parallel and linker is not None and linker.verdict == "hangs":
        nvlink_row = _data()["xla_nvlink"]
        return [_made(
            "CD208", linker.path, refs=(nvlink_row["source"], row["start_source"]), evidence="read", proof=(
                f"XLA_FLAGS asks {row['parallel_flag']}; XLA's search for nvlink, in its order: "
                f"{_candidates(xla, 'nvlink')}; each run here as XLA runs it (`nvlink --version`, its output read to "
                f"the end), nothing linked: {PROVE_JAX}"),
            detail=(f"XLA_FLAGS asks for parallel compilation (--{row['parallel_flag']}), for which XLA runs the "
                    f"first nvlink it finds with `--version` and reads the answer to its end. {linker.path} "
                    f"({linker.how}): {linker.said}. Move it off the path XLA searches, or mend it so that its "
                    f"`--version` ends; {PROVE_JAX}."),
            kind="nvlink", framework="jax")]
    if xla.parallel and not xla.nvlink:
        return [_made(
            "CD208", xla.ptxas_used, refs=refs, evidence="read",
            proof=(f"XLA_FLAGS asks {row['parallel_flag']}; no nvlink XLA takes beside any ptxas it looks at "
                   f"({_candidates(xla, 'nvlink')}); {PROVE_JAX}"),
            detail=(f"XLA_FLAGS asks for parallel compilation (--{row['parallel_flag']}), which XLA links with nvlink "
                    f"(or the driver under --{row['driver_fallback_flag']}), and no place XLA looks holds an nvlink "
                    f"whose `--version` answers "
                    f"(it uses {xla.ptxas_used}): JAX's first compilation fails ('Parallel compilation was requested, "
                    f"but no available compilation provider supports it'). {PROVE_JAX}."),
            kind="nvlink", framework="jax")]
    return []


def xla_ptxas_target(report: Report) -> list[Finding]:
    """The ptxas XLA takes is not the first one on PATH (the wheel's, in JAX's CUDA data folder, or a CUDA root's)
    and knows no PTX ISA that has this GPU's target: read, a warning (rules/process_env.jax_ptxas judges the one on
    PATH, as seen failing on an H100)."""
    xla = report.first_use.xla if report.first_use else None
    if xla is None or not xla.ptxas_used or xla.path_ptxas_used or not xla.ptxas_version or not _gpu(report) or \
            _kernel_ran(report):
        return []
    release = version_tuple(xla.ptxas_version) or ()
    known = [row["version"] for row in load("errors").get("ptx_isa", []) if (version_tuple(row["cuda"]) or ()) <=
             release[:2]]
    if not known:
        return []
    isa = max(known, key=lambda v: version_tuple(v) or ())
    targets = {row["compute_capability"]: row for row in load("process_env").get("xla_ptx_target", [])}
    short = [targets[g.compute_capability] for g in report.gpus if g.compute_capability in targets and
             (version_tuple(isa) or ()) < (version_tuple(targets[g.compute_capability]["minimum_ptx"]) or ())]
    if not short:
        return []
    row = short[0]
    return [_made(
        "CD206", xla.ptxas_used, refs=(row["source"], _data()["xla_ptxas"]["source"]), evidence="read",
        proof=f"{xla.ptxas_used} answers V{xla.ptxas_version} (PTX ISA up to {isa}); XLA compiles this GPU's kernels "
              f"for {row['target']}, which needs PTX ISA {row['minimum_ptx']}; {PROVE_JAX}",
        detail=(f"JAX's XLA compiles with {xla.ptxas_used} (V{xla.ptxas_version}, the first ptxas it takes, in "
                f"{_data_dir_words(xla)}), which knows PTX ISA up to {isa}, while this GPU's target {row['target']} "
                f"needs {row['minimum_ptx']}: JAX fails at its first compilation, or falls back to the driver's "
                f"compiler. {PROVE_JAX}."),
        kind="ptxas-target", framework="jax")]


def xla_libdevice(report: Report) -> list[Finding]:
    """The libdevice XLA links its math functions from: the first CUDA root holding nvvm/libdevice is taken, and a
    folder there without libdevice.10.bc (or none at all) fails the first kernel that calls exp, log, tanh..."""
    xla = report.first_use.xla if report.first_use else None
    if xla is None or (xla.libdevice and not xla.libdevice_unusable) or not _gpu(report) or _kernel_ran(report):
        return []
    row = _data()["xla_libdevice"]
    refs = (row["source"], _data()["jax_cuda_path"]["source"])
    if xla.libdevice_dir and xla.libdevice_unusable:  # XLA finds it there and opens it: not 'not found'
        path = f"{xla.libdevice_dir}/{row['file']}"
        what = xla.libdevice_unusable
        then = (row["opens_fifo"] if what == "a FIFO" else row["opens_other"])
        return [_made(
            "CD208", path, refs=(*refs, row["exists_source"], row["magic_source"]), evidence="read", severity="warning",
            proof=f"{path} is {what}; read here, not compiled: {PROVE_JAX}",
            detail=(f"JAX's XLA links math functions (exp, log, tanh, erf...) from libdevice: XLA takes "
                    f"{xla.libdevice_dir}, the first of its CUDA roots that holds {row['folder']}, and its {row['file']} "
                    f"is {what}, which XLA's check that it exists passes: {then} ({_data_dir_words(xla)}). Put the "
                    f"CUDA toolkit's own {row['file']} there. {PROVE_JAX}."),
            kind="libdevice", framework="jax", fix_folder=xla.libdevice_dir)]
    if xla.libdevice_dir:
        where = (f"XLA takes {xla.libdevice_dir}, the first of its CUDA roots that holds {row['folder']}, and it holds "
                 f"no {row['file']}")
    else:
        shown = ", ".join(xla.roots[:6]) + (f" and {len(xla.roots) - 6} more" if len(xla.roots) > 6 else "")
        where = f"none of the CUDA roots XLA searches holds {row['folder']} ({shown})"
    if xla.libdevice_dir:  # the folder XLA takes, without the file: proven on a GPU (the data's `proven`), an error
        evidence, severity = "rule", "error"
        proof = f"{where}; read here; proven against JAX: {row['proven']}"
        ends = "."
    else:  # no root holds the folder: XLA then looks in '.', the program's working folder: read, a warning
        evidence, severity = "read", "warning"
        proof = f"{where}; read here, not compiled: {PROVE_JAX}"
        ends = f". {PROVE_JAX}."
    return [_made(
        "CD208", xla.libdevice_dir or xla.data_dir, refs=refs, evidence=evidence, severity=severity, proof=proof,
        detail=(f"JAX's XLA links math functions (exp, log, tanh, erf...) from libdevice: {where} "
                f"({_data_dir_words(xla)}). Its first compilation of such an operation fails ('libdevice not found at "
                f"{(xla.libdevice_dir or '.')}/{row['file']}'){ends}"),
        kind="libdevice", framework="jax", fix_folder=xla.libdevice_dir or xla.data_dir)]


def nvrtc_builtins(report: Report) -> list[Finding]:
    """The builtins library the NVRTC a framework gets opens by name at its first run-time compilation: none where
    the loader looks, not a library, or of another release (no entry function of its own), and NVRTC itself,
    compiling a kernel in a child with this environment, refused: its words are the evidence (seen). A warning:
    which of the framework's work compiles with NVRTC is not known here, and `check --deep` runs it."""
    if report.first_use is None:
        return []
    users = {row["framework"]: row for row in _data()["nvrtc_user"]}
    out = []
    for seen in report.first_use.nvrtc:
        if not seen.problem or not seen.said.startswith("NVRTC_ERROR"):
            continue  # only NVRTC's own refusal is said: it compiled, or no working NVRTC answered at all
        row = users.get(seen.framework, {})
        by_name = seen.framework == "ld.so"
        who = {"torch": "PyTorch", "jax": "JAX",
               "ld.so": f"A program that opens libnvrtc.so.{seen.nvrtc_release.split('.')[0]} by name (CuPy, "
                        "a C++ program)"}.get(seen.framework, seen.framework)
        if by_name:
            row = {"uses": "every kernel such a program compiles at run time"}
        said = f" NVRTC said, compiling a kernel here with this environment: '{seen.said}'." if seen.said else ""
        # the LD_LIBRARY_PATH folder that gave the builtins, else the one that gave that libnvrtc (a pair there)
        folder = _folder(seen.found) if seen.how == "LD_LIBRARY_PATH" and seen.found else \
            _folder(seen.nvrtc) if seen.nvrtc_via == "LD_LIBRARY_PATH" else ""
        out.append(_made(
            "CD203", seen.found or seen.nvrtc, refs=(_data()["nvrtc"]["source"], row.get("source", "")),
            evidence="seen", proof=f"NVRTC ({seen.nvrtc}) compiling a kernel in a child with this environment: {seen.said}",
            detail=(f"{who} gets {seen.nvrtc} (NVRTC {seen.nvrtc_release}), which opens {seen.wanted} by name when it "
                    f"first compiles a kernel ({row.get('uses', 'run-time compiled kernels')}): "
                    f"{seen.problem}{' (' + seen.how + ')' if seen.found else ''}.{said} {'It starts' if by_name else 'Its import runs'}"
                    f" and so does its other work; the work that compiles with NVRTC fails (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)" + (
                        "." if by_name else f"; `cudnn-doctor check --deep` runs {who}'s work here, which proves "
                                            "whether it is hit.")),
            library=seen.found or seen.nvrtc, framework="" if by_name else seen.framework, kind="nvrtc-builtins",
            folder=folder,
            error=seen.problem))
    return out


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


RULES = (xla_ptxas, xla_ptxas_target, xla_libdevice, nvrtc_builtins)
