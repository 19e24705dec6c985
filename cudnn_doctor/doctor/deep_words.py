"""A framework's own words under `check --deep`, read by explain's reader: one knowledge, two doors.

When a framework fails its first GPU steps in a child with the user's environment, what it said is read for facts
(library names, cuDNN and CUDA statuses, versions, architectures) and judged by explain's classifier and catalog:
the codes it names are the findings it is evidence for (rules.process_env.with_evidence)."""

from __future__ import annotations

from cudnn_doctor.model import Report


def codes_named(report: Report) -> dict[str, tuple[str, ...]]:
    """Framework name -> the finding codes its --deep failure's words name, strongest first; frameworks that
    worked (or were not run) are not in it."""
    named: dict[str, tuple[str, ...]] = {}
    for framework in report.frameworks:
        deep = framework.details.get("deep")
        if isinstance(deep, dict) and isinstance(deep.get("error"), str) and deep["error"].strip() \
                and not deep.get("not_run"):
            named[framework.name] = codes_of(deep)
    return named


def codes_of(deep: dict[str, object]) -> tuple[str, ...]:
    """The codes a framework's --deep failure names: what raised it first (its traceback's frames and the modules its
    Python took from another copy than the installed one: explain.read_traceback), then explain's reading of its
    words. Where the frames name a Python-level class, a library class read from the words alone (CD409: the
    framework's own GPU library) is not the cause and is left out."""
    from cudnn_doctor.explain.read_traceback import frames_in, mechanism

    words = str(deep.get("error") or "")
    listed = deep.get("traceback")
    frames = [str(f) for f in listed] if isinstance(listed, list) else frames_in(words)
    found = deep.get("elsewhere")
    elsewhere = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
    read = codes_in(words)
    raised = mechanism(words, frames, elsewhere)
    if raised is None:
        return read
    return (raised[0], *(code for code in read if code not in ("CD409", "CD415", raised[0])))


def python_cause(report: Report) -> str:
    """The Python-level class (CD419, CD421) the failing frameworks' own frames name, where one does: the code of an
    environment cure that took the place of that copy or plugin out (PYTHONPATH, the working folder, a variable).
    Another copy whose compiled modules are all for another Python (its Python said so: probes/python_finder.py) is
    a copy built for another version, CD410."""
    import os

    foreign = [(shadow[0], shadow[1]) for shadow in (report.process.python_shadows if report.process else ())
               if len(shadow) >= 6 and shadow[5]]
    named = codes_named(report)
    for framework in report.frameworks:
        codes = named.get(framework.name)
        if not codes or codes[0] not in ("CD419", "CD421"):
            continue
        deep = framework.details.get("deep")
        elsewhere = deep.get("elsewhere") if isinstance(deep, dict) else None
        taken = elsewhere if isinstance(elsewhere, dict) else {}
        if codes[0] == "CD419" and any(taken.get(package) and os.path.realpath(str(taken[package])).startswith(
                os.path.realpath(entry) + os.sep) for entry, package in foreign):
            return "CD410"
        return codes[0]
    return ""


def codes_in(words: str) -> tuple[str, ...]:
    """The finding codes explain gives for WORDS: its catalog's specific entries first, then what the facts show."""
    from cudnn_doctor.explain import catalog, classify, reader

    facts = reader.read(words)
    codes = [match.code for match in catalog.match_lines(facts.lines, any(library.gpu for library in facts.libraries))
             if match.code]
    codes += [cause.code for cause in classify.classify(facts) if cause.code]
    return tuple(dict.fromkeys(code for code in codes if not code.startswith("CD6")))
