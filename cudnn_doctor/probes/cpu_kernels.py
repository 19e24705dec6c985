"""The CPU-kernel selection variables that numpy, OpenBLAS and MKL read as they load (issue 45), asked of numpy
itself: numpy refuses at import a CPU feature it is asked to disable that is part of its baseline, or to enable one
this machine lacks ("You cannot disable CPU feature 'X86_V2', since it is part of the baseline optimizations"), and
torch and JAX import numpy, so every program of theirs stops there; OpenBLAS runs the kernels OPENBLAS_CORETYPE
names at numpy's first matrix product. Where such a variable (compat/process_env.toml [[cpu_kernel]], asked) is set,
each framework's interpreter runs `import numpy` and one small matrix product with the user's environment; where it
fails, each of those variables is unset alone in a child of its own, side by side, and the one without which it
works is named with numpy's own words. Nothing starts where none of them is set."""

from __future__ import annotations

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Framework

TIMEOUT_S = 10.0
WORKED = "cudnn-doctor: numpy worked"
# numpy imported and its BLAS asked for one product, as a program's first numpy steps do; the words go to stderr
CODE = ("import os\nimport numpy\na = numpy.ones((64, 64))\nb = float((a @ a).sum())\n"
        f"os.write(1, {WORKED.encode()!r})\n")
MAX_VARIABLES = 8


def asked_variables(env: dict[str, str]) -> list[str]:
    """The [[cpu_kernel]] variables numpy is asked about that ENV sets (non-empty)."""
    rows = load("process_env").get("cpu_kernel", [])
    return [row["variable"] for row in rows if row.get("asked") and env.get(row["variable"], "").strip()][
        :MAX_VARIABLES]


class CpuKernelChild:
    """The children, started now (only where an asked variable is set and a framework's Python is known); their
    answers read with result()."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        self.env = env
        self.names = asked_variables(env)
        self.pythons: list[str] = []
        if not self.names:
            return
        from cudnn_doctor.probes.context import framework_pythons

        self.pythons = framework_pythons(frameworks)
        if self.pythons:
            self.batch = self._start([(python, env) for python in self.pythons])

    def _start(self, runs: list[tuple[str, dict[str, str]]]):  # type: ignore[no-untyped-def]
        from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in

        self.said: list[list[str]] = [[] for _ in runs]  # each child's stderr lines, as they come (the first 64)

        def keep(lines: list[str]):  # type: ignore[no-untyped-def]
            return lambda line: lines.append(line[:1000].decode("utf-8", "replace")) if len(lines) < 64 else None

        return ChildBatch([ChildRequest((python, "-c", CODE), child_env, TIMEOUT_S, f"numpy in {python}",
                                        on_stderr_line=keep(lines))
                           for (python, child_env), lines in zip(runs, self.said, strict=True)],
                          deadline=deadline_in(TIMEOUT_S))

    def result(self) -> tuple[tuple[str, str, str, str], ...]:
        """(python, numpy's words, the variable without which it worked or "", that variable's value) for each
        interpreter whose numpy failed with this environment and worked without one of these variables; a failure no
        single one of them cures is not theirs to name (nothing is said)."""
        if not self.pythons:
            return ()
        first_said = self.said
        failed = [(python, words(answer, said)) for python, answer, said in zip(self.pythons, self.batch.answers(),
                                                                                first_said, strict=True)
                  if not answer.timed_out and WORKED not in (answer.stdout or "")]
        if not failed:
            return ()
        trials = [(python, name) for python, _ in failed for name in self.names]
        answers = self._start([(python, {k: v for k, v in self.env.items() if k != name})
                               for python, name in trials]).answers()
        cured: dict[str, str] = {}
        for (python, name), answer in zip(trials, answers, strict=True):
            if WORKED in (answer.stdout or "") and python not in cured:
                cured[python] = name
        return tuple((python, said, cured[python], self.env.get(cured[python], ""))
                     for python, said in failed if python in cured)


def words(answer, said: list[str]) -> str:  # type: ignore[no-untyped-def]
    """What numpy said: its error's lines from the last 'Error' on (numpy's refusal spans two or three lines), or
    how the child ended (a signal: OpenBLAS running kernels this CPU lacks dies of SIGILL)."""
    lines = [line.strip() for line in (said or (answer.stderr_tail or "").splitlines()) if line.strip()]
    last = max((i for i, line in enumerate(lines) if "Error" in line), default=None)
    if last is not None:
        return " ".join(lines[last:last + 3])[:400]
    if answer.crashed or (answer.exit_code is not None and answer.exit_code < 0):
        return answer.error or f"it was killed by signal {-(answer.exit_code or 0)}"
    return (lines[-1] if lines else answer.error or f"it exited with {answer.exit_code}")[:400]
