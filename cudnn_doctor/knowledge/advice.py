"""compat/fixes.toml: the advice of each finding code, filled with the values its rule read, and the catalog's fixes
(compat/errors.toml) filled with the values read from a message.

Advice is the last resort of the plan: what to do where no exact action for this machine can be computed. A value
that was not read never leaves a hole: in a sentence it reads as the words of compat/fixes.toml [[field]] (what to
look up, and where), and a command that needs it is not printed: the row's `without` text stands in its place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from cudnn_doctor.knowledge.data import load

FIELD = re.compile(r"(?<!\{)\{(\w{1,40})\}(?!\})")
CATALOG_FIELD = re.compile(r"<([a-z][\w ]{0,39})>")
NOT_READ = ("", "unknown", "none", "None")  # a value a rule could not read is no value


@functools.cache
def _table(os_name: str = "linux") -> dict[str, dict[str, str]]:
    """Each code's advice: the row for OS_NAME where there is one (`os = "windows"`), else the general row."""
    rows = load("fixes").get("advice", [])
    general = {row["code"]: row for row in rows if "os" not in row}
    return general | {row["code"]: row for row in rows if row.get("os") == os_name}


@functools.cache
def field_words() -> dict[str, str]:
    """compat/fixes.toml [[field]]: each value's name -> the words that say what it is and where to read it."""
    return {row["name"]: row["words"] for row in load("fixes").get("field", [])}


def words_for(name: str) -> str:
    """What to look up in place of the value NAME, in words (its [[field]] row; a test holds every name to one)."""
    key = name.strip().replace(" ", "_")
    return field_words().get(key, f"the {name.replace('_', ' ')} (the message does not give it)")


def advice_row(code: str, os_name: str = "linux") -> dict[str, str] | None:
    return _table(os_name).get(code)


def given(values: Mapping[str, Any]) -> dict[str, str]:
    """VALUES less those that were not read (None, empty, "unknown")."""
    return {key: str(value) for key, value in values.items() if value is not None and str(value).strip() not in NOT_READ}


def command_fields(template: str, pattern: re.Pattern[str] = FIELD) -> set[str]:
    """The names a template fills inside its `commands`."""
    return {name.replace(" ", "_") for part in template.split("`")[1::2] for name in pattern.findall(part)}


def advice(code: str, values: dict[str, Any], os_name: str = "linux") -> str:
    """The advice for CODE with VALUES filled in (OS_NAME: the system it is for): the row's `text` where every value
    its commands need was read, else its `without` (commands that need no value); a value a sentence names but that
    was not read reads as its [[field]] words. Values inside a `command` are quoted for the shell."""
    row = _table(os_name).get(code)
    if row is None:
        return ""
    known = given(values)
    template = row["text"]
    if not command_fields(template) <= set(known) and row.get("without"):
        template = row["without"]
    if not set(FIELD.findall(template)) <= set(known) and row.get("words"):  # a sentence that reads badly with words
        template = row["words"]
    return _fill(template, known, FIELD)


def _fill(template: str, known: dict[str, str], pattern: re.Pattern[str]) -> str:
    """TEMPLATE with KNOWN filled in: each `command` of it quoted for the shell and written back as one code span
    whatever backticks its values hold (a folder named a`b), each value in its prose with its backticks escaped, so
    a machine's value never opens or ends a span (quoting.CODE_SPAN, which every renderer reads)."""
    from cudnn_doctor.quoting import code_span, in_prose, quote

    def value(in_command: bool) -> Any:
        def one(found: re.Match[str]) -> str:
            key = found.group(1).replace(" ", "_")
            if key not in known:
                return words_for(found.group(1))
            if not in_command:
                return in_prose(known[key])
            return quote(known[key], "bash") if key not in QUOTED else known[key]
        return one

    parts = template.split("`")
    closed = len(parts) if len(parts) % 2 else len(parts) - 1  # a backtick the template leaves open opens nothing
    filled = [pattern.sub(value(index % 2 == 1 and index < closed), part) for index, part in enumerate(parts)]
    text = "".join(code_span(part) if index % 2 == 1 and index < closed else part if index < closed else "\\`" + part
                   for index, part in enumerate(filled))
    if pattern is FIELD:  # the advice's own braces, doubled in TOML templates, read as one
        text = text.replace("{{", "{").replace("}}", "}")
    return text


QUOTED = ("cudnn_requirement",)  # values the knowledge gives already quoted for the shell


def catalog_text(template: str, values: Mapping[str, Any], without: str = "") -> str:
    """A catalog entry's fix or cause (compat/errors.toml, `<name>` fields) with VALUES read from the message: the
    releases it names made ones compat/ lists (a message's 8.9.4 names the series; the release to install is one
    that exists); WITHOUT (the entry's `fix_without`) where a command needs a value the message did not give."""
    from cudnn_doctor.knowledge.releases import cudnn_requirement, existing_release, wheel_build

    known = given(values)
    if known.get("compute_capability") and "cc" not in known:  # the catalog's commands name it <cc>
        known["cc"] = known["compute_capability"]
    if known.get("compiled_version") and "cudnn_requirement" not in known:
        requirement = cudnn_requirement(known["compiled_version"])
        if requirement:
            known["cudnn_requirement"] = requirement
    if not command_fields(template, CATALOG_FIELD) <= set(known) and without:
        template = without
    text = _fill(template, known, CATALOG_FIELD)
    text = re.sub(r"(--version )(\d+\.\d+(?:\.\d+)?)(?![\d.])", lambda m: m.group(1) + existing_release(m.group(2)), text)
    return re.sub(r"(nvidia-cudnn-cu(\d+)==)(\d+\.\d+\.\d+)(?![\d.])",
                  lambda m: m.group(1) + wheel_build(m.group(3), int(m.group(2))), text)


def fields_of(code: str) -> list[str]:
    """The names the advice of CODE fills in."""
    row = _table().get(code)
    return FIELD.findall(row["text"]) if row else []


ARCH_PRODUCTS = {"tensorrt": "TensorRT", "cudnn": "cuDNN"}  # products with [[support]] rows (compat/gpu_support.toml)
ARCH_BUILDS = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}  # frameworks whose builds list their architectures


def first_toolkit(compute_capability: str) -> str | None:
    """The first CUDA toolkit whose compilers target COMPUTE_CAPABILITY (compat/libraries.toml [[arch_toolkit]])."""
    rows = {row["compute_capability"]: row["cuda"] for row in load("libraries").get("arch_toolkit", [])}
    return rows.get(compute_capability)


def architecture_note(compute_capability: str, product: str | None) -> tuple[str, str]:
    """(cause, fix) sentences that judge a GPU of COMPUTE_CAPABILITY against the data: the first toolkit that targets
    it, and for PRODUCT (the framework or library that printed the message) the releases or builds that support it.
    The cause always names the architecture; the fix is empty where the data says nothing."""
    from cudnn_doctor.knowledge.gpu_support import support_rows
    from cudnn_doctor.versions import version_tuple

    cc = compute_capability
    sm = "sm_" + cc.replace(".", "")
    cause, fix = [], []
    needs = first_toolkit(cc)
    if needs:
        cause.append(f"the message names compute capability {cc} ({sm}), which CUDA {needs} and newer target, so only "
                     f"code compiled with CUDA {needs} or newer carries kernels for it")
    else:
        cause.append(f"the message names compute capability {cc} ({sm})")
    if product in ARCH_PRODUCTS:
        name = ARCH_PRODUCTS[product]
        for row in support_rows(product):
            if cc not in row.get("compute_capabilities", []):
                continue
            if row.get("from_version"):
                cause.append(f"{name} supports {row['architecture']} (compute capability {cc}) from {row['from_version']}")
                fix.append(f"Install {name} {row['from_version']} or newer (built for CUDA {needs} or newer)" if needs
                           else f"Install {name} {row['from_version']} or newer")
            elif row.get("until_version"):
                cause.append(f"{name} dropped {row['architecture']} (compute capability {cc}) in {row['until_version']}")
                fix.append(f"Use a {name} release older than {row['until_version']}")
            else:
                continue  # a row that bounds what was read, not when the support began or ended
            break
    elif product in ARCH_BUILDS:
        rows = [row for row in load(product).get("build", []) if cc in (row.get("arch_list") or [])]
        if rows:
            first = min(rows, key=lambda row: (version_tuple(row["version"]) or (0,), version_tuple(row.get("cuda")) or (0,)))
            newest = max(rows, key=lambda row: (version_tuple(row["version"]) or (0,), version_tuple(row.get("cuda")) or (0,)))
            name = ARCH_BUILDS[product]
            cause.append(f"the first {name} release with a build that lists {sm} is {first['version']} (its CUDA "
                         f"{first.get('cuda')} build)")
            fix.append(f"Install a {name} build that lists {sm}: {first['version']} or newer in its CUDA "
                       f"{first.get('cuda')} build or later (the newest recorded: {newest['version']} for CUDA "
                       f"{newest.get('cuda')}; `cudnn-doctor compat {'torch' if product == 'pytorch' else product}=="
                       f"{newest['version']} --compute-capability {cc}` checks it)")
    return "; ".join(cause) + ".", ". ".join(fix) + "." if fix else ""
