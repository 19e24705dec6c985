"""The options a user gives `fleet run --slurm`, read the way srun reads them (glibc getopt_long over srun's own option
table, compat/slurm.toml): which name the job (-J, --job-name), join an existing allocation (--jobid) or set the
tasks' working folder (-D, --chdir). A required argument is the rest of the word or the next word, whatever it holds
(`--comment -J` is a comment "-J", not a job name); an optional one only follows '=' or its letter in the same word; a
long name may be cut to a prefix that only one option has (`--job-n=x`); short options may be clustered (`-lJx`);
'--' and the first word that is not an option end the options (srun's option string starts with '+')."""

from __future__ import annotations

from functools import lru_cache

from cudnn_doctor.knowledge.data import load


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], dict[str, str]]:
    """{long name: 'required' | 'optional' | 'none'}, {short letter: long name}."""
    srun = next(row for row in load("slurm")["command"] if row["name"] == "srun")
    takes = {name: kind for kind in ("required", "optional", "none") for name in srun[kind]}
    return takes, dict(srun["short"])


def _long(word: str, takes: dict[str, str]) -> str | None:
    """The option a `--NAME` word names: its exact name, else the one option NAME is a prefix of (None: unknown or
    ambiguous, which srun refuses)."""
    if word in takes:
        return word
    starting = [name for name in takes if name.startswith(word)]
    return starting[0] if len(starting) == 1 else None


def given(options: tuple[str, ...] | list[str]) -> dict[str, str]:
    """{long name: value} of every option srun takes from OPTIONS, the last one winning as in srun (an option without
    a value: ""). Words srun would refuse (an unknown or ambiguous name, a missing argument) end the reading: srun
    stops there too, with its own error."""
    return read(options)[0]


def read(options: tuple[str, ...] | list[str]) -> tuple[dict[str, str], str | None]:
    """given()'s options, and why OPTIONS do not end where srun's options end (None where they do): `fleet run`
    puts its own options and its command after the user's, so a last option that lacks its argument would take the
    doctor's --output as its value (`--comment`, `-J`), and '--' or a word that is not an option would make the
    doctor's words the command's. A long name srun's table lacks (a newer srun's) is read where its value follows
    '=' (its extent is then the word); without '=' whether it takes the next word is unknown."""
    takes, shorts = _table()
    found: dict[str, str] = {}
    words = list(options)
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word == "--":
            return found, "'--' ends srun's options there: the doctor's own options and command would be its words"
        if not word.startswith("-") or word == "-":
            return found, f"{word!r} is not an option: srun would run it as the command, not the doctor's check"
        if word.startswith("--"):
            name, equals, value = word[2:].partition("=")
            option = _long(name, takes)
            if option is None:
                starting = sorted(n for n in takes if n.startswith(name))
                if len(starting) > 1:
                    return found, f"--{name} is ambiguous ({', '.join('--' + n for n in starting[:4])}): srun refuses it"
                if equals:
                    continue  # an option of a newer srun: its value is in the word
                return found, (f"srun's options (compat/slurm.toml) have no --{name}: whether it takes the next word "
                               f"is not known; give its value as --{name}=VALUE")
            kind = takes[option]
            if kind == "required" and not equals:
                if at >= len(words):
                    return found, f"--{option} takes a value and is the last word: srun would take the doctor's " \
                                  f"--output as it"
                value, at = words[at], at + 1
            elif kind == "none" and equals:
                return found, f"--{option} takes no value: srun refuses {word!r}"
            found[option] = value
            continue
        letters = word[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            option = shorts.get(letter)
            if option is None:
                return found, f"srun has no option -{letter}: srun refuses {word!r}"
            kind = takes.get(option, "none")
            if kind == "none":
                found[option] = ""
                continue
            if letters or kind == "optional":
                found[option] = letters
            elif at < len(words):
                found[option], at = words[at], at + 1
            else:
                return found, f"-{letter} takes a value and is the last word: srun would take the doctor's " \
                              f"--output as it"
            letters = ""
    return found, None
