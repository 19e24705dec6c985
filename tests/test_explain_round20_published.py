"""Issue 41, after round twenty's set was published (not blind): where a catalog pattern matches first where the
traceback quotes the line that raises (`raise RuntimeError("Detected that ...versions. "`) and again at the message
with its values, the answer takes the values from the message (explain/catalog.fullest), never words in their place
(tests/test_explain_filled.py's check over every set found "CUDA the CUDA" in the answer)."""

from __future__ import annotations

from cudnn_doctor.commands.explain import run

QUOTED_THEN_SAID = (
    '    raise RuntimeError("Detected that PyTorch and torchvision were compiled with different CUDA versions. "\n'
    "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. PyTorch has "
    "CUDA Version=12.1 and torchvision has CUDA Version=11.8. Please reinstall the torchvision that matches your "
    "PyTorch install.\n")


def test_values_come_from_the_message_after_the_quoted_raise_line() -> None:
    answer = run(QUOTED_THEN_SAID, offline_only=True)["matches"][0]
    assert answer["code"] == "CD410", answer
    assert answer["values"].get("torch_cuda") == "12.1", answer["values"]
    assert "12.1" in answer["fix"] and "CUDA the" not in answer["fix"], answer["fix"]
    assert "PyTorch's CUDA: 12.1" in answer["cause"], answer["cause"]


def test_the_first_hit_is_kept_where_it_has_every_value() -> None:
    said_twice = QUOTED_THEN_SAID.split("\n", 1)[1] + QUOTED_THEN_SAID.split("\n", 1)[1].replace("12.1", "12.4")
    answer = run(said_twice, offline_only=True)["matches"][0]
    assert answer["values"].get("torch_cuda") == "12.1", answer["values"]
