"""Every answer of `explain` with every value filled in (issue 41): over every message of every evaluation set in
benchmarks/explain_eval/ and of the tests, no fix or cause prints a template marker or a command with a blank in it,
and a value read from the message reaches the answer where the answer uses one. In-process: one explain_text call
per message, no process each."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from cudnn_doctor.commands.explain import VALUE_WORDS, explain_text
from cudnn_doctor.explain.classify import ARCH_CODES
from cudnn_doctor.explain.machine_values import machine_values
from cudnn_doctor.knowledge.advice import CATALOG_FIELD, FIELD, advice, command_fields, field_words, words_for
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Driver, Framework, Gpu, Host, Report, Tool

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import explain_messages  # noqa: E402

# a blank inside a command: a name read as words, a quoted "'the ...'", a package name ending in a word, a pseudo-value
COMMAND_HOLE = re.compile(r"'the |\bthe [a-z]|==the\b|cu'|=the\b|--\w+ the\b"
                          r"|\bVERSION\b|\bcuXYZ\b|\bcuXX\b|\bX\.Y\b")  # a pseudo-value: torch==VERSION, whl/cuXYZ
# a placeholder of any spelling ("<CUDA>\\extras", "<version>") and words put where a value belongs ("CUDA the CUDA
# version", "CUDA the found version", "to the driver NVIDIA's ... or newer")
MARKER = re.compile(r"<[A-Za-z][\w .-]{0,40}>")
# a pseudo-value anywhere in an answer, commands or words ("libnvrtc-builtins.so.X.Y", "nvrtc-builtins64_XY.dll",
# "nd4j-cuda-X.Y"): a user reads it as a blank; an example release or words say the same (round twenty-two's set)
PSEUDO_VALUE = re.compile(r"\bX\.Y\b|_XY\b|\bX\.Y\.Z\b")
WORDS_FOR_A_VALUE = re.compile(r"\b(?:CUDA|cuDNN|version|capability) the (?:CUDA|cuDNN|found|version|cuda major|"
                               r"prefix|major)\b|\bto the driver NVIDIA's\b|\bthe the\b|\ban? the\b")


def evaluation_sets() -> list[Path]:
    """Every evaluation set of messages in the repository: benchmarks/explain_eval and the held-out rounds that became
    development sets (benchmarks/held_out/*/), any file of cases with a message."""
    paths = sorted((ROOT / "benchmarks" / "explain_eval").glob("*.toml"))
    paths += sorted((ROOT / "benchmarks" / "held_out").glob("*/*.toml"))
    return [path for path in paths
            if any("message" in case for case in tomllib.loads(path.read_text(encoding="utf-8")).get("case", []))]


def every_message() -> list[tuple[str, str]]:
    import test_explain_round5
    import test_explain_round6

    messages = []
    for path in evaluation_sets():
        for case in tomllib.loads(path.read_text(encoding="utf-8"))["case"]:
            messages.append((f"{path.parent.name}/{path.name}:{case['id']}", case["message"]))
    messages += [(f"tests:{source}", message) for source, _, message in explain_messages.FAMILIES]
    messages += [(f"tests:{row[0]}", row[-1]) for row in explain_messages.UNRELATED]
    messages += [(f"tests:{source}", message) for source, _, message in test_explain_round5.CASES]
    messages += [(f"tests:{source}", message) for source, _, message in test_explain_round6.CASES]
    messages += [(f"tests:{source}", message) for source, message in test_explain_round6.UNRELATED]
    messages += [(f"catalog:{row['id']}", row["example"]) for row in load("errors").get("error", [])]
    return messages


def holes(match: dict[str, object]) -> list[str]:
    """What in MATCH's fix and cause is a blank: a template marker, a command with a name in words, or a value the
    message gave that the answer reads as words."""
    found = []
    values = match.get("values") or {}
    for key in ("fix", "cause"):
        text = str(match[key])
        if CATALOG_FIELD.search(text) or FIELD.search(text) or MARKER.search(text):
            found.append(f"{key}: a template marker")
        found += [f"{key}: a pseudo-value {m.group(0)}" for m in PSEUDO_VALUE.finditer(text)]
        found += [f"{key}: words where a value belongs: {m.group(0)}" for m in WORDS_FOR_A_VALUE.finditer(text)]
        found += [f"{key}: command `{command}`" for command in text.split("`")[1::2] if COMMAND_HOLE.search(command)]
        found += [f"{key}: {name} was read ({values[name]}) but reads as words"  # type: ignore[index]
                  for name in field_words() if name in values and words_for(name) in text]
    answer = f"{match['cause']} {match['fix']}"
    found += [f"{name} {values[name]} was read from the message but the answer does not name it"  # type: ignore[index]
              for name in VALUE_WORDS if isinstance(values.get(name), str) and values[name]  # type: ignore[union-attr]
              and values[name] not in answer]  # type: ignore[index]
    for key in ("fix", "cause"):
        text = str(match[key])
        major = str(values.get("cudnn_major") or "")  # type: ignore[union-attr]
        if major.isdigit():  # the message's cuDNN major, not another one written into a command of the answer
            for command in text.split("`")[1::2]:
                found += [f"{key}: the message is about cuDNN {major}, `{command}` names cuDNN {other}"
                          for other in re.findall(r"(?:--version |libcudnn|cudnn-cu\d{2}==)(\d{1,2})\b", command)
                          if other != major]
    return found


def test_no_answer_over_every_message_has_a_hole() -> None:
    messages = every_message()
    assert len(messages) > 1100  # six sets, the tests' messages, the catalog's examples
    assert {path.parent.name for path in evaluation_sets()} >= {"explain_eval", "round5"}
    wrong = []
    for ident, message in messages:
        data = explain_text(message, None)
        for match in data["matches"]:
            wrong += [f"{ident} {match['code']}: {hole}" for hole in holes(match)]
        # an architecture the message names reaches the architecture answer (its compute capability, judged)
        arch = next((m for m in data["matches"] if m["code"] in ARCH_CODES), None)
        named = (arch or {}).get("values", {}).get("compute_capability")
        if arch is not None and named and named not in arch["cause"] + arch["fix"]:
            wrong.append(f"{ident} {arch['code']}: compute capability {named} read but not in the answer")
    assert wrong == []


def test_every_command_that_needs_a_value_has_words_without_it() -> None:
    """An advice row whose commands need a value has a `without` whose commands need none; so has a catalog entry
    (`fix_without`); and every value any template names has its [[field]] words."""
    for row in load("fixes")["advice"]:
        if command_fields(row["text"]):
            assert row.get("without") and not command_fields(row["without"]), row["code"]
    for entry in load("errors")["error"]:
        if command_fields(entry["fix"], CATALOG_FIELD):
            assert entry.get("fix_without") and not command_fields(entry["fix_without"], CATALOG_FIELD), entry["id"]
    named = {name for row in load("fixes")["advice"] for name in FIELD.findall(row["text"] + row.get("without", ""))}
    named |= {name.replace(" ", "_") for entry in load("errors")["error"]
              for name in CATALOG_FIELD.findall(entry["fix"] + entry["cause"])}
    assert named - set(field_words()) == set()


@pytest.mark.parametrize(("message", "wanted", "unwanted"), [
    # the driver's CUDA in the driver API's encoding reaches the cause as a version (it read "CUDA the found version")
    ("The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading "
     "and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx", "CUDA 11.4", "12080"),
    # a cuDNN major with no CUDA major: no `pip install nvidia-cudnn-cu'the cuda major'`
    ("The program can't start because cudnn64_5.dll is missing from your computer. Try re-installing the program to "
     "fix this problem.", "cuDNN 5", "nvidia-cudnn-cu"),
    # PyTorch compiled against cuDNN 7: no nvidia-cudnn-cu12 wheel holds a 7.x release, so none is named
    ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7102 but linked against 7005",
     "7.1.2", "nvidia-cudnn-cu12==7"),
])
def test_a_value_of_the_message_reaches_the_answer(message: str, wanted: str, unwanted: str) -> None:
    [first, *_] = explain_text(message, None)["matches"]
    answer = first["cause"] + " " + first["fix"]
    assert wanted in answer and unwanted not in answer, answer
    assert holes(first) == []


def test_an_architecture_of_the_message_reaches_the_answer() -> None:
    data = explain_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                        "PyTorch installation.", None)
    first = data["matches"][0]
    assert first["code"] == "CD404"
    assert "12.0" in first["cause"] + first["fix"]


def test_advice_without_a_value_names_what_to_look_up() -> None:
    text = advice("CD301", {"version": "9"})
    assert "cuDNN 9" in text and "`cudnn-doctor install" not in text and "the cuda major" not in text
    full = advice("CD301", {"version": "9", "cuda_major": "12"})
    assert "`cudnn-doctor install --version 9 --cuda 12`" in full and "`pip install nvidia-cudnn-cu12`" in full
    assert "unknown" not in advice("CD103", {"min_driver": None, "driver_cuda": "unknown"})


def _machine(*capabilities: str, torch_cuda: str | None = "12.8") -> Report:
    report = Report(Tool("cudnn-doctor", "test"), Host("linux", "x86_64", "3.12", "node"))
    report.gpus = [Gpu(i, "NVIDIA GPU", None, cc, 81559, "580.95.05") for i, cc in enumerate(capabilities)]
    report.driver = Driver("580.95.05", "13.0", "nvml")
    if torch_cuda:
        report.frameworks = [Framework("torch", "2.9.0", torch_cuda, "9.10.2", None, "dist-info")]
    return report


def test_a_value_the_message_lacks_comes_from_the_machine() -> None:
    """The message names cuDNN 9 and no CUDA: the machine's framework was built for CUDA 12, so the install command
    is printed whole; offline, it is not printed at all."""
    message = "Could not load library libcudnn_graph.so.9. Error: libcudnn_graph.so.9: cannot open shared object file"
    offline = explain_text(message, None)["matches"][0]
    here = explain_text(message, _machine("9.0"))["matches"][0]
    assert offline["code"] == here["code"]
    assert holes(here) == [] and holes(offline) == []
    if "--cuda" in here["fix"]:
        assert "--cuda 12" in here["fix"] and "--cuda" not in offline["fix"]


def test_pytorchs_cuda_the_message_lacks_is_pytorchs_never_the_drivers() -> None:
    """torchvision's check without its second sentence: PyTorch's CUDA comes from the machine's torch (12.8), not
    from the driver's CUDA (13.0), and offline it reads as where to look it up, not as the driver's."""
    message = "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions."
    here = explain_text(message, _machine("9.0"))["matches"][0]
    offline = explain_text(message, None)["matches"][0]
    assert here["code"] == offline["code"] == "CD410"
    assert "PyTorch's CUDA: 12.8" in here["cause"] and "13.0" not in here["cause"]
    assert "torch.version.cuda" in offline["cause"] and "nvidia-smi" not in offline["cause"]
    assert holes(here) == [] and holes(offline) == []


def test_the_messages_own_value_wins_over_the_machines() -> None:
    """An architecture the message names is judged, not the machine's GPU."""
    message = "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation."
    first = explain_text(message, _machine("9.0"))["matches"][0]
    assert "12.0" in first["cause"] and first["values"]["compute_capability"] == "12.0"


def test_the_machine_gives_no_value_it_has_two_of() -> None:
    assert "cc" not in machine_values(_machine("9.0", "8.6"))
    assert machine_values(_machine("9.0"))["cc"] == "9.0"
    assert machine_values(None) == {}


def test_every_advice_without_values_reads_as_words() -> None:
    """Each code's advice with nothing read (an offline `explain`, `explain CODE`): no marker, no command with a
    blank, no words put where a value belongs ("a CUDA the CUDA version", "to the driver NVIDIA's ... list")."""
    from cudnn_doctor.knowledge.advice import _table

    wrong = []
    for code in sorted(_table()):
        text = advice(code, {})
        if CATALOG_FIELD.search(text) or FIELD.search(text) or MARKER.search(text):
            wrong.append(f"{code}: a marker")
        wrong += [f"{code}: `{command}`" for command in text.split("`")[1::2] if COMMAND_HOLE.search(command)]
        wrong += [f"{code}: {m.group(0)}" for m in WORDS_FOR_A_VALUE.finditer(text)]
    assert wrong == []


def test_a_codes_fix_prints_no_blank_command() -> None:
    """`explain CODE` has no machine's values: its fix is the advice in words, with only the commands that need none."""
    from cudnn_doctor.codes import CODES
    from cudnn_doctor.commands.explain import explain_code

    wrong = []
    for code in CODES:
        fix = str((explain_code(code)["code"] or {}).get("fix", ""))
        if CATALOG_FIELD.search(fix) or FIELD.search(fix) or MARKER.search(fix):
            wrong.append(f"{code}: {fix[:80]}")
        wrong += [f"{code}: `{command}`" for command in fix.split("`")[1::2] if COMMAND_HOLE.search(command)]
    assert wrong == []
    assert "`cudnn-doctor install --version" not in explain_code("CD301")["code"]["fix"]
