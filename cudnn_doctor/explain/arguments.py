"""`explain` takes any text as its message: a pasted log may begin with dashes (a notebook's traceback starts with a
row of them) or be a single word like "-x". argparse would read such a word as an unknown option, so the words
after `explain` that are not its own options are put after a "--" before argparse parses the line."""

from __future__ import annotations

# explain's own options, and whether each takes a value
# (the command line passes the ones its parser declares; these are the fallback)
OPTIONS = {"--from-file": True, "--list": False, "--offline-only": False, "--json": False, "-v": False,
           "--verbose": False, "--help": False, "-h": False}


def message_first(args: list[str], options: dict[str, bool] | None = None) -> list[str]:
    """ARGS (sys.argv[1:]) with the message of `explain` kept a message: `explain "--- text"` reads as
    `explain -- "--- text"`. Any other command line, or one that already has "--", is returned as it is.
    OPTIONS: explain's own options, each with whether it takes a value."""
    if not args or args[0] != "explain" or "--" in args:
        return args
    options = OPTIONS if options is None else options
    own: list[str] = []
    words: list[str] = []
    index = 1
    while index < len(args):
        arg = args[index]
        name = arg.split("=", 1)[0]
        if name in options:
            own.append(arg)
            if options[name] and "=" not in arg and index + 1 < len(args):
                own.append(args[index + 1])
                index += 1
        else:
            words.append(arg)
        index += 1
    if not any(word.startswith("-") and word != "-" for word in words):
        return args
    return ["explain", *own, "--", *words]
