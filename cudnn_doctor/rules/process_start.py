"""What the shell gives every program it starts besides its variables and limits (probes/process_start.py): a umask
that takes the owner's own bits away, SIGCHLD left ignored. Read from this process's own record, which a program
started here inherits through exec: a warning that says `check --deep` proves it (the frameworks run in children that
inherit the same), unless the row's proof names a run on the real frameworks. The rows: compat/process_start.toml."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Report


def _rows() -> list[dict[str, Any]]:
    return list(load("process_start").get("shell_setting", []))


def shell_settings(report: Report) -> list[Finding]:
    view = report.process
    shell = view.shell if view is not None else {}
    if not shell:
        return []
    ignored = [name for name in shell.get("ignored", "").split(",") if name]
    umask = shell.get("umask", "")
    if not ignored and not (umask and int(umask, 8) & 0o700):  # the owner's own bits kept, nothing ignored: no row
        return []  # of the data can apply, and its file is not read
    out = []
    for row in _rows():
        if row["kind"] == "umask":
            value = shell.get("umask", "")
            if not value or not (int(value, 8) & int(row.get("mask", "0600"), 8)) or shell.get("uid") == "0":
                continue  # root reads and writes its own files whatever their mode
            shown = row["shown"].format(value=value, mode=_mode(0o666 & ~int(value, 8)))
        elif row["name"] in ignored:
            shown = row["shown"]
        else:
            continue
        proven = bool(row.get("proof"))
        made = finding("CD116", subject=row["name"], refs=(row["source"],), evidence="rule" if proven else "read",
                       proof=row.get("proof") or ("read from this process's own /proc/self/status, which a program "
                                                  "started here inherits through exec: `cudnn-doctor check --deep` "
                                                  "runs the frameworks here with it, which proves what it does"),
                       limit=shown, effect=row["effect"], shell_line=row["line"], shell_why=row["why"])
        out.append(made if proven else replace(made, severity="warning"))
    return out


def _mode(bits: int) -> str:
    return "".join(letter if bits >> (8 - i) & 1 else "-" for i, letter in enumerate("rwxrwxrwx"))


def python_imports(report: Report) -> list[Finding]:
    """Where a program's `import torch` finds it, as the framework's Python started with this environment answered
    (probes/python_start.py): nowhere (an error, seen: every program's import fails), or another file than the
    installed framework (a warning: that one is what programs get; --deep runs it)."""
    view = report.process
    if view is None:
        return []
    sites = {f.name: str(f.details.get("site_packages") or "") for f in report.frameworks}
    out = []
    for name, python, answer, verdict, *taken in view.python_imports:
        if verdict == "installed":
            continue
        proof = (f"{python} was started in a child with this environment and asked where `import {name}` finds it at "
                 "a program's first line (its own finders): " +
                 ("nowhere" if answer == "-" else "an empty namespace package" if answer == "" else answer))
        if verdict == "lost" and len(taken) == 2:  # a variable that places Python took the framework's folder away
            variable, value = taken
            row = _placing().get(variable, {})
            out.append(finding("CD411", subject=variable, refs=(str(row.get("source", "")),), evidence="seen",
                               proof=proof + f"; started again with {variable} unset, it has "
                                             f"{sites.get(name) or 'the installed one'} among its own site-packages",
                               variable=variable, value=value[:200],
                               why=f"{python} starts as another Python with it: {sites.get(name) or 'the site-packages'}"
                                   f" holding {name} is not on its sys.path "
                                   f"({row.get('effect') or 'it places Python elsewhere'})",
                               framework=_display_name(name),
                               consequence=f"cannot import {name}: `import {name}` finds "
                                           + ("nothing" if answer in ("-", "") else answer)))
            continue
        if verdict == "none":
            out.append(finding("CD409", subject=f"import {name}", evidence="seen", proof=proof, library=name, error=(
                f"{python}, started with this environment, finds no {name} package at all (the installed one is in "
                f"{sites.get(name) or 'its site-packages'}, which is not on its sys.path there): every program's "
                f"`import {name}` fails" + (" or gets an empty namespace package" if answer == "" else
                                            " with ModuleNotFoundError"))))
            continue
        out.append(replace(finding("CD419", subject=f"import {name}", evidence="read", proof=proof + (
            ": `cudnn-doctor check --deep` runs it"), library=name, error=(
                f"{python}, started with this environment, imports {name} from {answer}, not the installed one in "
                f"{sites.get(name) or 'its site-packages'}: a start-up hook or a path setting puts it first, and "
                "programs get that one")), severity="warning"))
    return out


def _placing() -> dict[str, dict[str, Any]]:
    """compat/process_env.toml's rows of the variables that place Python (places_python), by name."""
    return {str(row.get("variable")): row for row in load("process_env").get("setting", [])
            if row.get("places_python")}


def _display_name(name: str) -> str:
    return {"torch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}.get(name, name)


def glibc_tunables(report: Report) -> list[Finding]:
    """GLIBC_TUNABLES entries this machine's glibc ignores, as it said itself (ld.so --list-tunables under that
    value): names it does not have (CD418), values it refused (CD414). Warnings: glibc goes on with its default."""
    view = report.process
    if view is None or not view.tunables:
        return []
    unknown = [name for name, _wanted, _held, verdict in view.tunables if verdict == "unknown"]
    refused = [(name, wanted, held) for name, wanted, held, verdict in view.tunables if verdict == "refused"]
    if not unknown and not refused:
        return []
    row: dict[str, Any] = next(iter(load("process_start").get("glibc_tunables", [])), {})
    kept = ":".join(f"{name}={wanted}" for name, wanted, _held, verdict in view.tunables if verdict == "taken")
    value = ":".join(f"{name}={wanted}" for name, wanted, _held, _verdict in view.tunables)
    parts = ([f"this machine's glibc has no tunable named {', '.join(unknown)}"] if unknown else []) + (
        [f"it holds {held} for {name}, not {wanted} (outside its range, or not a number)"
         for name, wanted, held in refused])
    made = finding("CD418" if unknown else "CD414", subject="GLIBC_TUNABLES", refs=(row.get("source", ""),),
                   evidence="seen", proof="the ld.so that started this process, run with --list-tunables under this "
                                          "GLIBC_TUNABLES alone, lists each tunable as glibc parsed it: " +
                                          "; ".join(parts),
                   variable="GLIBC_TUNABLES", value=value[:200], why="; ".join(parts),
                   framework=row.get("reader", "glibc"), consequence=row.get("ignored", "ignores it"),
                   fix_value=kept or None)
    return [replace(made, severity="warning")]


CWD_GONE_PROOF = ("round eight's scenario 's8-cwd-deleted' on an H100 (benchmarks/held_out/round8/scenarios45.py, "
                  "2026-12-06): started in a folder deleted under its shell, torch 2.11's import failed ('Intel oneMKL "
                  "FATAL ERROR: Cannot load .../torch/lib/libtorch_cpu.so'); JAX 0.11 ran")


def deleted_working_folder(report: Report) -> list[Finding]:
    """The working folder was deleted under the shell (getcwd: ENOENT): a program started here inherits it. torch's
    x86-64 build (its oneMKL) failed to import so on the H100 (CWD_GONE_PROOF): an error where torch is installed on
    x86-64, a warning elsewhere."""
    view = report.process
    gone = (view.shell or {}).get("cwd_gone") if view is not None else None
    if not gone:
        return []
    torch = any(f.name == "torch" for f in report.frameworks) and report.host.arch in ("x86_64", "amd64")
    made = finding("CD409", subject=f"working folder {gone} (deleted)", evidence="rule" if torch else "read",
                   proof=CWD_GONE_PROOF if torch else None, refs=(CWD_GONE_PROOF,), framework="PyTorch",
                   library="torch/lib/libtorch_cpu.so", error="Intel oneMKL FATAL ERROR: Cannot load libtorch_cpu.so",
                   cwd_gone=gone)
    detail = (f"The folder this shell stands in, {gone}, was deleted (getcwd fails: it has no name any more), and every "
              "program started here inherits it. torch's x86-64 build fails to import there ('Intel oneMKL FATAL "
              "ERROR: Cannot load .../libtorch_cpu.so', seen on an H100), and relative paths, caches and logs a "
              "program writes beside it fail too. cd to a folder that exists (cd ~) and start the program from there.")
    return [replace(made, detail=detail, severity="error" if torch else "warning")]


RULES = (shell_settings, python_imports, glibc_tunables, deleted_working_folder)
