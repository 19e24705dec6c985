"""One word (a folder, an argument) written for the shell that will read it, so that the shell, sourcing the
line, gets exactly those bytes and runs nothing.

- bash and zsh (POSIX): `shlex.quote` for printable text; a word holding a control or invisible character
  (newline, tab, CR, ESC, DEL, U+00A0, U+200B, U+2028, U+202E) or bytes that are not UTF-8 is written
  whole as `$'...'` with each such byte as `\\xHH`, which both shells turn back into that exact byte.
- fish: single quotes where only `\\\\` and `\\'` are escapes (a trailing backslash and a backslash before a
  quote included); the other characters as fish's unquoted `\\xHH` byte escapes (fish's `string escape`
  writes `\\Xff` for a byte that is not UTF-8 alike).
- PowerShell: single quotes in which each of the five quote characters that close one (' U+2019 U+2018
  U+201A U+201B, PowerShell's CharTraits.IsSingleQuote) is doubled; a control or invisible character as
  `[char]0xHHHH` joined with `+`. Its strings are UTF-16: bytes that are not UTF-8 cannot be held, refused.
- cmd: a word in double quotes (inside them `& | < > ^` are literal; trailing backslashes doubled, as the C
  runtime reads a command line), and `set "NAME=value"`; `%` and `!` (expanded even inside quotes), `"` (it
  cannot be written inside them) and control characters (a newline ends the line: what follows would run as a
  command) cannot be written so that cmd reads them back, refused. Its comments are `rem` lines.

Strings hold a path's bytes as Python does (`os.fsdecode`: a byte that is not UTF-8 is a lone surrogate
U+DC80..U+DCFF). Every line written here is printable ASCII or printable text, so the terminal shows what
the shell will read.
"""

from __future__ import annotations

import functools
import re
import shlex

POSIX_SHELLS = ("bash", "zsh", "sh")
# PowerShell's tokenizer (CharTraits.cs, IsSingleQuote): each of these opens and closes a '...' string
POWERSHELL_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"


@functools.cache
def _loader_token_pattern() -> re.Pattern[str]:
    return re.compile(r"\$(\{)?(ORIGIN|LIB|PLATFORM)\b")


class CannotQuote(ValueError):
    """SHELL cannot hold this word exactly; the message says why in plain words (no quote, no semicolon, no dollar
    sign: a comment line pasted where comments are off, as in an interactive zsh, still runs nothing)."""


@functools.cache
def _userinfo_pattern() -> re.Pattern[str]:
    return re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)([^/?#@\s]{1,2000})@")


def redacted_url(text: str) -> str:
    """TEXT with the credentials of every URL in it hidden, as pip, curl and git show them: the password as ****
    (`https://alice:****@host/`), a lone user name (a token) as **** (`https://****@host/`). For every URL the
    doctor prints (install --from, --mirror, CUDNN_DOCTOR_MIRROR, proxies): the one it fetches keeps them."""
    def hide(match: re.Match[str]) -> str:
        user, colon, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}:****@" if colon else f"{match.group(1)}****@"
    return _userinfo_pattern().sub(hide, text)


def _needs_escape(char: str) -> bool:
    """A character shown on a terminal as something else (or nothing): controls, invisible and format
    characters, separators other than the space, and a byte that is not UTF-8 (a lone surrogate)."""
    return not char.isprintable() or 0xD800 <= ord(char) <= 0xDFFF


def _bytes_of(char: str) -> bytes:
    return char.encode("utf-8", "surrogateescape")


def _not_utf8(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def quote(word: str, shell: str) -> str:
    """WORD as one word of SHELL that evaluates to exactly WORD's bytes; CannotQuote where SHELL cannot."""
    if shell in POSIX_SHELLS:
        return _posix(word)
    if shell == "fish":
        return _fish(word)
    if shell in ("powershell", "pwsh", "user"):  # "user": the user's Windows environment, set from PowerShell
        return _powershell(word)
    if shell == "cmd":
        return _cmd(word)
    raise ValueError(f"no quoting rules for shell {shell!r}")


CMD_REFUSAL = ("cmd expands percent and exclamation signs even inside quotes, and a double quote, a semicolon or a "
               "control character cannot be written in a set line")


def check_cmd_text(text: str) -> None:
    """CannotQuote unless cmd reads TEXT back as itself inside double quotes: no `%` or `!` (expanded even there),
    no `"` (it ends them), no control or invisible character (a newline ends the line), no byte that is not UTF-8."""
    if any(c in text for c in '%!"') or any(_needs_escape(c) for c in text):
        raise CannotQuote("cmd expands percent and exclamation signs even inside quotes, and a double quote or a "
                          "control character cannot be written in one of its lines")


def _cmd(word: str) -> str:
    check_cmd_text(word)
    if word and not any(c in word for c in ' \t&|<>^(),;=\'`+[]{}~'):
        return word
    trailing = len(word) - len(word.rstrip("\\"))
    return '"' + word + "\\" * trailing + '"'  # "C:\\dir\\" would end in an escaped quote


# What a comment line may hold: words, digits and the punctuation no shell reads in one (`;` `'` `"` `%` `!` `&` `|`
# `<` `>` `^` `` ` `` `$` `(` `)` are read by cmd before `rem`, by an interactive zsh without INTERACTIVE_COMMENTS,
# or by whoever pastes half a line); the rest of the text is written as commas and spaces.


@functools.cache
def comment_text_pattern() -> re.Pattern[str]:
    return re.compile(r"[^A-Za-z0-9 .,:_/=+-]+")


def comment(shell: str, words: str) -> str:
    """A line SHELL reads as a comment, saying WORDS (words of ours, never a user's value), in words only: pasted
    where comments are off, or read by cmd, it still runs nothing the user did not ask for."""
    text = " ".join(comment_text_pattern().sub(lambda found: "," if ";" in found.group(0) else " ", words).split())
    return f"rem {text}" if shell == "cmd" else f"# {text}"


def _posix(word: str) -> str:
    if not any(_needs_escape(c) for c in word):
        return shlex.quote(word)
    out = []
    for char in word:
        if char == "\\":
            out.append("\\\\")
        elif char == "'":
            out.append("\\'")
        elif char == "!" or ord(char) > 0x7E or _needs_escape(char):  # `!`: no history expansion; non-ASCII:
            # all ASCII, so a shell in a multibyte locale (Shift_JIS, Big5, GBK) cannot pair a byte with a backslash
            out.extend(f"\\x{b:02x}" for b in _bytes_of(char))
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def _fish(word: str) -> str:
    if not word:
        return "''"
    # with a backslash or a quote in the word, every non-ASCII character as bytes too (see _posix)
    ascii_only = "\\" in word or "'" in word
    out: list[str] = []
    run: list[str] = []
    for char in word:
        if _needs_escape(char) or (ascii_only and ord(char) > 0x7E):
            if run:
                out.append("'" + "".join(run) + "'")
                run = []
            out.extend(f"\\x{b:02x}" for b in _bytes_of(char))
        else:
            run.append("\\\\" if char == "\\" else "\\'" if char == "'" else char)
    if run:
        out.append("'" + "".join(run) + "'")
    return "".join(out)


def _powershell(word: str) -> str:
    if _not_utf8(word):
        raise CannotQuote("PowerShell strings cannot hold a folder name whose bytes are not UTF-8")
    parts: list[str] = []
    run: list[str] = []
    for char in word:
        if _needs_escape(char):
            parts.append("'" + "".join(run) + "'")
            run = []
            parts.extend(f"[char]0x{unit:04x}" for unit in _utf16_units(char))
        else:
            run.append(char * 2 if char in POWERSHELL_SINGLE_QUOTES else char)
    if run or not parts:
        parts.append("'" + "".join(run) + "'")
    text = " + ".join(parts)
    return f"({text})" if len(parts) > 1 else text


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-le")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def command_line(argv: tuple[str, ...] | list[str], shell: str = "bash") -> str:
    """ARGV as the line that runs it in SHELL (PowerShell: the call operator `&`, else a quoted program
    would only be printed)."""
    words = [quote(arg, shell) for arg in argv]
    if shell in ("powershell", "pwsh", "user"):
        return "& " + " ".join(words)
    return " ".join(words)


def cmd_prepend(variable: str, folder: str) -> str:
    """`set "VARIABLE=FOLDER;%VARIABLE%"` for cmd.exe; CannotQuote for a FOLDER cmd would change or cannot hold."""
    if any(c in folder for c in '%!";') or any(_needs_escape(c) for c in folder):
        raise CannotQuote(CMD_REFUSAL)
    return f'set "{variable}={folder};%{variable}%"'


def check_list_entry(folder: str) -> None:
    """FOLDER as an entry of a list of folders (LD_LIBRARY_PATH, PATH) that the loader reads back as itself:
    ld.so splits at ':' and ';' and expands $ORIGIN, $LIB and $PLATFORM, an empty entry is the working
    folder and a relative one depends on it. CannotQuote otherwise."""
    if not folder:
        raise CannotQuote("an empty entry would mean the working folder")
    if not folder.startswith("/") and not re.match(r"[A-Za-z]:[\\/]", folder):
        raise CannotQuote("a relative folder would be looked up from the working folder of each program")
    if ":" in (folder if folder.startswith("/") else folder[2:]) or ";" in folder:
        raise CannotQuote("the folder name holds a colon or a semicolon, which split a list of folders")
    if _loader_token_pattern().search(folder):
        raise CannotQuote("the folder name holds a token the loader expands, ORIGIN, LIB or PLATFORM after a dollar sign")


# Text that quotes commands (a finding's fix, a plan step's why) marks each with a code span, as CommonMark does:
# one more backtick around it than its longest run of backticks holds, so a backtick in a machine's value (an
# allocator setting, a folder name) never ends the span early; in the prose around, such a backtick is written
# with a backslash before it (CommonMark's escape), so it opens no span. The text renderer and markdown read both.


@functools.cache
def code_span_pattern() -> re.Pattern[str]:
    return re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def code_span(text: str) -> str:
    """TEXT as one code span whatever backticks it holds (a space inside the fence where it begins or ends with
    one)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def in_prose(value: str) -> str:
    """VALUE (a machine's) put in prose that may quote commands: its backticks escaped, so it opens no code span."""
    return value.replace("\\`", "\\\\`").replace("`", "\\`")


def split_code_spans(text: str) -> list[str]:
    """TEXT as [prose, code, prose, code, ..., prose]: the code spans' contents as written inside them, the prose
    with its escaped backticks made plain again."""
    parts: list[str] = []
    last = 0
    for found in code_span_pattern().finditer(text):
        parts.append(_plain_prose(text[last:found.start()]))
        content = found.group(2)
        if len(content) > 2 and content.startswith(" ") and content.endswith(" ") and content.strip():
            content = content[1:-1]
        parts.append(content)
        last = found.end()
    parts.append(_plain_prose(text[last:]))
    return parts


def _plain_prose(text: str) -> str:
    return text.replace("\\`", "`")
