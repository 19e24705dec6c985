"""JSON output: one object per command, written in one piece."""

from __future__ import annotations

import json
import sys
from typing import Any

written = False  # set once a command has printed its object: an error after that prints no second one


def json_text(data: dict[str, Any]) -> str:
    """DATA as JSON text that a strict parser accepts: paths keep their non-UTF-8 bytes as lone
    surrogates in memory, and JSON gets them as \\xNN text, never as an unpaired \\udcNN escape; an integer
    beyond +-2^53 as its digits, a float that is no number as null (json_values.exact)."""
    from cudnn_doctor.json_values import exact
    from cudnn_doctor.user_files import escape_strings

    return json.dumps(exact(escape_strings(data)), indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_json(data: dict[str, Any]) -> None:
    from cudnn_doctor import streams

    # where a start-up hook printed as Python started, part of it may be on standard output already, unended: the
    # object begins on a line of its own (a JSON reader skips the blank; streams._hook_printed says the rest)
    text = ("\n" if streams.HOOK_PRINTED else "") + json_text(data)
    write_document(text)


def write_document(text: str) -> None:
    """A command's one document (JSON, JUnit XML, Prometheus text) on standard output. Once it is written whole,
    the command's outcome is settled (signals.settle): a SIGTERM or Ctrl-C that comes after it, while the doctor
    ends, or one that came before and was deferred past it, no longer turns the exit status into 128 + N beside an
    answer that says nothing of it."""
    from cudnn_doctor import signals

    global written
    written = True
    # written and settled as one step: a signal between the last byte and settle() ended the command with 128 + N
    # beside a whole answer that says nothing of it (round sixteen's red-team); one during it raises after it
    # where the write failed, and is ignored where the answer is out
    with signals.deferred():
        sys.stdout.write(text)
        sys.stdout.flush()
        signals.settle()
