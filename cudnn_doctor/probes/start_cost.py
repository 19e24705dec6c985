"""What an LD_PRELOAD entry no row of the data knows costs every process started here, asked of the loader itself
(issue 45, round nineteen). A preloaded library's constructor runs in every process before its first line: glibc's
memory profiler (libmemusage.so, with MEMUSAGE_TRACE_MMAP=1 every mapping traced), a malloc debugger, a tracer. The
doctor has rules for the preloads it knows (a CUDA, cuDNN, NCCL or driver library: compat/libraries.toml; a sanitizer's
run-time: [[sanitizer]]); for any other, it cannot say from the file what it does. So the loader is asked, cheaply:
the same bare program (the doctor's own Python, `-I -S -c pass`) is started twice side by side, once with the user's
LD_PRELOAD and once without those entries, each timed from the doctor; what one start with them costs more is seen,
not inferred. Started only where such an entry is set, beside the other children; each start bounded (DEADLINE_S),
so a preload that makes processes crawl costs the check that much at most here, and the finding names it."""

from __future__ import annotations

import os

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, own_python
from cudnn_doctor.variables import preload_entries

DEADLINE_S = 5.0  # seconds one bare start may take here; past it, "more than that" is the answer
START = ("-I", "-S", "-c", "pass")  # a bare Python: no site, no user variables, nothing imported


def _bare(name: str) -> str:
    """A library file's name as compat/libraries.toml writes its rows: no folder, no 'lib', no '.so' and after."""
    base = os.path.basename(name).lower()
    base = base[3:] if base.startswith("lib") else base
    return base.split(".so", 1)[0]


def unvouched_preloads(env: dict[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD's entries (as written) that no row of the data knows: not a library of the GPU stack
    (compat/libraries.toml's names and aliases, a cuDNN sub-library by its prefix) and not a sanitizer's run-time
    (compat/process_env.toml [[sanitizer]])."""
    entries = preload_entries(env)
    if not entries:
        return ()
    from cudnn_doctor.knowledge.data import load

    known = set()
    for row in load("libraries").get("library", []):
        known.add(str(row["name"]).lower())
        known.update(str(alias).lower() for alias in row.get("aliases", ()))
    runtimes = tuple(str(prefix) for row in load("process_env").get("sanitizer", []) for prefix in row["runtime"])
    return tuple(entry for entry in entries if _bare(entry) not in known and not _bare(entry).startswith("cudnn")
                 and not os.path.basename(entry).startswith(runtimes))


class PreloadStartCost:
    """The two bare starts, begun now; result() waits for them. Nothing is started where no entry is unvouched."""

    def __init__(self, env: dict[str, str]) -> None:
        self.batch: ChildBatch | None = None
        self.entries = unvouched_preloads(env)
        if not self.entries:
            return
        kept = [entry for entry in preload_entries(env) if entry not in self.entries]
        without = {key: value for key, value in env.items() if key != "LD_PRELOAD"}
        if kept:
            without["LD_PRELOAD"] = " ".join(kept)
        argv = (own_python(), *START)
        self.batch = ChildBatch([ChildRequest(argv, env, DEADLINE_S, "a bare Python with LD_PRELOAD"),
                                 ChildRequest(argv, without, DEADLINE_S, "a bare Python without those entries")],
                                deadline=deadline_in(DEADLINE_S), parallel=2)

    def result(self) -> tuple[str, float, float] | None:
        """(the entries, joined by ' '; one start's milliseconds with them, -1 where it passed DEADLINE_S; without
        them), or None where not asked or the start without them did not end (nothing to compare with)."""
        if self.batch is None:
            return None
        with_them, without = self.batch.answers()
        if without.timed_out or without.exit_code is None:
            return None
        took = -1.0 if with_them.timed_out else round(with_them.wall_ms, 1)
        return " ".join(self.entries), took, round(without.wall_ms, 1)
