"""A model of how PowerShell reads the lines cudnn-doctor writes for it (no PowerShell is packaged for Debian).

Strings follow PowerShell/PowerShell's own tokenizer: `CharTraits.IsSingleQuote` (engine/parser/CharTraits.cs)
counts five characters as a single quote, ' U+2018 U+2019 U+201A U+201B, and `Tokenizer.ScanStringLiteral`
(engine/parser/tokenizer.cs) ends a '...' string at the first of them not followed by another of them; two in
a row are one, the second kept. Nothing else is special inside. Outside strings the model accepts only the forms
the doctor writes, token by token, and raises ValueError on anything else, so a string that ends early (and
would leave text for PowerShell to run) fails the test instead of passing it:

    $env:NAME = EXPR                       EXPR: TERM [+ TERM]...
    Remove-Item Env:NAME -ErrorAction SilentlyContinue
    & TERM [TERM]...                        TERM: 'string' | [char]0xHHHH | (EXPR) | $env:NAME
    # comment                                     | $(if ($env:NAME) { EXPR })
"""

from __future__ import annotations

import re

SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"


class _Reader:
    def __init__(self, line: str, env: dict[str, str]) -> None:
        self.line, self.at, self.env = line, 0, env

    def expect(self, text: str) -> None:
        if not self.line.startswith(text, self.at):
            raise ValueError(f"PowerShell would read something else at {self.at}: {self.line[self.at:]!r}")
        self.at += len(text)

    def name(self) -> str:
        found = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.line, self.at)
        if not found:
            raise ValueError(f"no variable name at {self.at}")
        self.at = found.end()
        return found.group(0)

    def string(self) -> str:
        """Tokenizer.ScanStringLiteral, after the opening quote."""
        out = []
        while self.at < len(self.line):
            char = self.line[self.at]
            self.at += 1
            if char in SINGLE_QUOTES:
                if self.at >= len(self.line) or self.line[self.at] not in SINGLE_QUOTES:
                    return "".join(out)
                char = self.line[self.at]
                self.at += 1
            out.append(char)
        raise ValueError("a string that never ends: PowerShell would ask for more input")

    def term(self) -> str | None:
        rest = self.line[self.at:]
        if rest[:1] and rest[0] in SINGLE_QUOTES:
            self.at += 1
            return self.string()
        if rest.startswith("[char]0x"):
            found = re.compile(r"\[char\]0x([0-9a-fA-F]{1,4})").match(self.line, self.at)
            assert found is not None
            self.at = found.end()
            return chr(int(found.group(1), 16))
        if rest.startswith("$("):
            self.expect("$(if ($env:")
            name = self.name()
            self.expect(") { ")
            value = self.expr()
            self.expect(" })")
            return value if self.env.get(name) else None
        if rest.startswith("$env:"):
            self.expect("$env:")
            return self.env.get(self.name())
        if rest.startswith("("):
            self.expect("(")
            value = self.expr()
            self.expect(")")
            return value
        raise ValueError(f"not a term the doctor writes at {self.at}: {rest!r}")

    def expr(self) -> str:
        parts = [self.term()]
        while self.line.startswith(" + ", self.at):
            self.at += 3
            parts.append(self.term())
        return "".join(p for p in parts if p is not None).encode("utf-16-le", "surrogatepass").decode("utf-16-le")

    def end(self) -> None:
        if self.at != len(self.line):
            raise ValueError(f"PowerShell would go on reading: {self.line[self.at:]!r}")


def source(lines: list[str], env: dict[str, str]) -> dict[str, str]:
    """ENV after PowerShell runs LINES (assignments and removals of $env: variables, comments)."""
    env = dict(env)
    for line in lines:
        if line.startswith("#"):
            continue
        found = re.fullmatch(r"Remove-Item Env:([A-Za-z_][A-Za-z0-9_]*) -ErrorAction SilentlyContinue", line)
        if found:
            env.pop(found.group(1), None)
            continue
        reader = _Reader(line, env)
        reader.expect("$env:")
        name = reader.name()
        reader.expect(" = ")
        value = reader.expr()
        reader.end()
        env[name] = value
    return env


def command(lines: list[str]) -> list[str]:
    """The argument vector of the one `& ...` line in LINES."""
    [line] = lines
    reader = _Reader(line, {})
    reader.expect("& ")
    argv = [reader.term() or ""]
    while reader.line.startswith(" ", reader.at):
        reader.at += 1
        argv.append(reader.term() or "")
    reader.end()
    return argv
