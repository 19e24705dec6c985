"""`explain --by-resemblance` (issue 41, builder e23): a message no rule reads, answered by the known reports it
resembles (compat/resemblance.toml, generated from the development sets by benchmarks/explain_resemblance.py),
marked as such with the reports' threads; an unrelated look-alike declined; the index read only on that path.

Messages: round five's published set (benchmarks/held_out/round5/explain41_cases.toml, csc4005-hpcsdk-libcudart:
https://github.com/tonyyxliu/CUHKSZ-CSC4005/issues/69, a loader's line with a comma in the library's name that no
rule reads) and round ten's (r10-vllm-ascend-build-torch-cpu-conflict: https://github.com/vllm-project/vllm-ascend/
issues/4081, pip's resolver on an Ascend machine, an unrelated look-alike of the CUDA builds' conflicts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cudnn_doctor.commands.explain import explain_text, resemblance_answer
from cudnn_doctor.explain.resemblance import CHOSEN, WINDOW, Index, decide, shipped_index, words
from tests.conftest import run_in_process
from tests.test_explain_filled import holes

ROOT = Path(__file__).resolve().parents[1]
COMMA = ("error while loading shared libraries: libcudart,so.11.0: cannot open shared object file: No such file or "
         "directory")
ASCEND = """  ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. \
This behaviour is the source of the following dependency conflicts.
  torch-npu 2.7.1.dev20250724 requires torch==2.7.1, but you have torch 2.8.0+cpu which is incompatible.
  torchvision 0.22.1 requires torch==2.7.1, but you have torch 2.8.0+cpu which is incompatible."""


def explain(*args: str) -> subprocess.CompletedProcess[str]:
    """`cudnn-doctor explain --offline-only ARGS`, called in this process (the answer is the point, not a start)."""
    argv = ["explain", "--offline-only", *args]
    done = run_in_process(argv, dict(os.environ, PYTHONPATH=str(ROOT)), ROOT, timeout=60)
    return subprocess.CompletedProcess(argv, done.exit_code, done.stdout, done.stderr)


def test_a_message_no_rule_reads_is_answered_by_the_reports_it_resembles() -> None:
    assert explain_text(COMMA, None)["exit_code"] == 1  # no rule reads "libcudart,so.11.0"
    done = explain("--json", "--by-resemblance", COMMA)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["matches"][0]
    assert answer["code"] == "CD203" and answer["by_resemblance"] is True
    neighbours = answer["resemblance"]["neighbours"]
    assert len(neighbours) >= CHOSEN.agree and {n["code"][:3] for n in neighbours} == {"CD2"}
    assert answer["source"] == neighbours[0]["source"] and answer["source"].startswith("https://github.com/")
    index = {report.source: report for report in shipped_index().reports}  # each neighbour is a report of the index
    assert all(index[n["source"]].code == n["code"] for n in neighbours)
    text = explain("--by-resemblance", COMMA)
    assert text.returncode == 0
    assert "by resemblance to known reports: " + neighbours[0]["source"] in " ".join(text.stdout.split())


def test_without_the_option_the_message_stays_unclaimed() -> None:
    done = explain("--json", COMMA)
    assert done.returncode == 1 and json.loads(done.stdout)["matches"] == []


def test_an_unrelated_look_alike_is_declined() -> None:
    # pip's resolver on an Ascend machine: the look-alike itself among the nearest, beside the CUDA builds' conflicts
    # (round twenty-two's set brought one as near as it): the neighbours disagree, nothing is claimed
    near = shipped_index().nearest(ASCEND, 3)
    assert {report.family for _, report in near} == {"unrelated", "CD5"}, near
    assert explain_text(ASCEND, None, by_resemblance=True)["exit_code"] == 1
    assert explain("--by-resemblance", ASCEND).returncode == 1


def test_a_message_as_close_to_an_unrelated_report_is_declined() -> None:
    """cases_3's unrelated-libgl-missing-mlperf-loadgen (https://github.com/mlcommons/ck/issues/828): OpenCV's
    libGL.so.1 missing reads like a CUDA library missing; without the unrelated reports it would be claimed."""
    message = "ImportError: libGL.so.1: cannot open shared object file: No such file or directory (import cv2)"
    related_only = Index([report for report in shipped_index().reports if report.family != "unrelated"])
    assert decide(related_only, message) is not None
    assert decide(shipped_index(), message) is None
    assert explain("--by-resemblance", message).returncode == 1


def test_the_index_is_read_only_where_no_rule_answers() -> None:
    script = f"""
import sys
from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.knowledge import data
explain_text("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared "
             "object file: No such file or directory", None, by_resemblance=True)
print("resemblance" in data._LOADED, "cudnn_doctor.explain.resemblance" in sys.modules)
explain_text({COMMA!r}, None, by_resemblance=True)
print("resemblance" in data._LOADED)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.stdout.split() == ["False", "False", "True"], done.stderr


def test_no_answer_by_resemblance_holds_a_placeholder() -> None:
    """Every code the index can answer with, its answer built from that code's own reports."""
    by_code: dict[str, list[dict[str, object]]] = {}
    for report in shipped_index().reports:
        if report.code:
            by_code.setdefault(report.code, []).append({"id": report.id, "code": report.code, "source": report.source,
                                                       "cause": report.cause, "similarity": 0.9})
    assert len(by_code) > 40
    wrong = []
    for code, neighbours in by_code.items():
        answer = resemblance_answer({"code": code, "family": code[:3], "similarity": 0.9, "neighbours": neighbours[:3]})
        wrong += [f"{code}: {hole}" for hole in holes(answer)]
        wrong += [f"{code}: no fix" for _ in [0] if not answer["fix"].strip() or "None" in answer["fix"]]
    assert wrong == []


def test_a_long_input_is_read_at_its_end_only() -> None:
    tail = " CUDNN_STATUS_INTERNAL_ERROR in libcudnn_ops.so.9"
    assert words("cudnn " * 1_000_000 + tail) == words(("cudnn " * 1_000_000 + tail)[-WINDOW:])
    assert "cudnn_status_internal_error" in words("x" * 10 * WINDOW + tail)
