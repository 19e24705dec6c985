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
            named[framework.name] = codes_in(deep["error"])
    return named


def codes_in(words: str) -> tuple[str, ...]:
    """The finding codes explain gives for WORDS: its catalog's specific entries first, then what the facts show."""
    from cudnn_doctor.explain import catalog, classify, reader

    facts = reader.read(words)
    codes = [match.code for match in catalog.match_lines(facts.lines, any(library.gpu for library in facts.libraries))
             if match.code]
    codes += [cause.code for cause in classify.classify(facts) if cause.code]
    return tuple(dict.fromkeys(code for code in codes if not code.startswith("CD6")))
