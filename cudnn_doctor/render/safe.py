"""Text from the machine or the user (paths, names, versions, messages), made safe for rich's console:
its markup escaped ('[/]' in a folder's name would end the command with a MarkupError, '[bold]' would
vanish) and its control characters shown as escapes (a folder's name can hold a terminal's escape codes
or a newline). Every renderer's dynamic text goes through `escape`; only a renderer's own styles are
markup."""

from __future__ import annotations

from rich.markup import escape as _markup_escape

from cudnn_doctor.streams import printable


def escape(text: object) -> str:
    return _markup_escape(printable(str(text)))
