"""The CPU-kernel selection variables that numpy, OpenBLAS and MKL read as they load (issue 45), asked of numpy
itself: numpy refuses at import a CPU feature it is asked to disable that is part of its baseline, or to enable one
this machine lacks ("You cannot disable CPU feature 'X86_V2', since it is part of the baseline optimizations"), and
torch and JAX import numpy, so every program of theirs stops there; OpenBLAS runs the kernels OPENBLAS_CORETYPE
names at numpy's first matrix product. Where such a variable (compat/process_env.toml [[cpu_kernel]], asked) is set,
each framework's interpreter runs `import numpy` and one small matrix product with the user's environment; where it
fails, each of those variables is unset alone in a child of its own, side by side, and the one without which it
works is named with numpy's own words. Nothing starts where none of them is set. This module says what to ask and
what the answers mean (CpuKernelQuestion); probes/framework_python.py asks it in the one start of that Python that
every question shares, last (_python_child.py's `numpy_works`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Framework

if TYPE_CHECKING:
    from cudnn_doctor.child import ChildAnswer
    from cudnn_doctor.probes.framework_python import PythonAnswer

MAX_VARIABLES = 8


def asked_variables(env: dict[str, str]) -> list[str]:
    """The [[cpu_kernel]] variables numpy is asked about that ENV sets (non-empty)."""
    rows = load("process_env").get("cpu_kernel", [])
    return [row["variable"] for row in rows if row.get("asked") and env.get(row["variable"], "").strip()][
        :MAX_VARIABLES]


class CpuKernelQuestion:
    """numpy's import and first product in each framework's interpreter: asked (probes/framework_python.py) only
    where an asked variable is set and a framework's Python is known; read from the answers with result()."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        self.env = env
        self.names = asked_variables(env)
        self.pythons: list[str] = []
        if not self.names:
            return
        from cudnn_doctor.probes.context import framework_pythons

        self.pythons = framework_pythons(frameworks)

    def request(self, python: str) -> dict[str, object]:
        return {"numpy": True}  # the child's last question: numpy's refusal ends it, after the others answered

    def trial_request(self) -> dict[str, object]:
        return {"numpy": True}

    def trials(self, answers: Mapping[str, PythonAnswer]) -> list[tuple[str, str]]:
        """Each variable unset alone, for each interpreter whose numpy failed: the one without which it works."""
        return [(python, name) for python in self._failed(answers) for name in self.names]

    def _failed(self, answers: Mapping[str, PythonAnswer]) -> list[str]:
        return [python for python in self.pythons
                if python in answers and not answers[python].child.timed_out and not answers[python].numpy_worked]

    def result(self, answers: Mapping[str, PythonAnswer], trials: Mapping[tuple[str, str], PythonAnswer]
               ) -> tuple[tuple[str, str, str, str], ...]:
        """(python, numpy's words, the variable without which it worked or "", that variable's value) for each
        interpreter whose numpy failed with this environment and worked without one of these variables (TRIALS:
        PythonChildren.trials); a failure no single one of them cures is not theirs to name (nothing is said)."""
        if not self.pythons:
            return ()
        out = []
        for python in self._failed(answers):
            cured = next((name for name in self.names
                          if (python, name) in trials and trials[(python, name)].numpy_worked), None)
            if cured is not None:
                out.append((python, words(answers[python].child, list(answers[python].said)), cured,
                            self.env.get(cured, "")))
        return tuple(out)


def words(answer: ChildAnswer, said: list[str]) -> str:
    """What numpy said: its error's lines from the last 'Error' on (numpy's refusal spans two or three lines), or
    how the child ended (a signal: OpenBLAS running kernels this CPU lacks dies of SIGILL)."""
    lines = [line.strip() for line in (said or (answer.stderr_tail or "").splitlines()) if line.strip()]
    last = max((i for i, line in enumerate(lines) if "Error" in line), default=None)
    if last is not None:
        return " ".join(lines[last:last + 3])[:400]
    if answer.crashed or (answer.exit_code is not None and answer.exit_code < 0):
        return answer.error or f"it was killed by signal {-(answer.exit_code or 0)}"
    return (lines[-1] if lines else answer.error or f"it exited with {answer.exit_code}")[:400]
