"""What the environment's settings meet here (issue 45): each variable CUDA, cuDNN, cuBLAS, NCCL or a framework reads
that is set (compat/ knows which), and what the machine answers for it without a child or an import:

  a path       the folder or file as its reader needs it (writable, readable, there), asked of the file system
  JAX_*        the option's grammar as the installed jax defines it (jax/_src/config.py and the other files its
               family names), or that no file of it reads such a name
  allocator    the keys of PYTORCH_CUDA_ALLOC_CONF the installed torch's c10 libraries know (each key a string in them)
  NCCL_*       whether the NCCL library in a framework's wheels holds the name (NCCL_PARAM keeps each as a string)
  TORCH_LOGS   the log and artifact names the installed torch registers (torch/_logging/_registrations.py), and
               the modules it could find for the others, as its parser takes them
  XLA_*        whether jaxlib's or its CUDA plugin's files name it
  XLA_FLAGS    the files and folders its flags name for XLA's GPU compiler (compat [[xla_path_flag]]): there,
               readable or writable as the compiler needs them, a results file of the version it reads

Files are read only for the variables that are set, and mapped rather than read whole. Never judges: the rules do.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from typing import Any

from cudnn_doctor.knowledge.environment import (
    CACHED_RESULTS,
    CONTENT,
    allocator_items,
    allocator_tokens,
    family_of,
    rows,
    set_variables,
    truth,
    xla_path_flags,
)
from cudnn_doctor.model import Framework, SettingAnswer

MAX_NAMES = 64  # a hostile environment with thousands of JAX_ variables is asked about this many
NAME = re.compile(r"[A-Z][A-Z0-9_]*")  # a variable's name as the readers spell theirs: no other is looked up


def read_settings(env: dict[str, str], frameworks: list[Framework]) -> dict[str, Any]:
    """ProcessView's settings (every known variable that is set), setting_paths (what is wrong with each path a
    setting names, for its reader) and setting_answers (what the installed files say of a setting)."""
    settings = set_variables(env)
    known = rows()
    # a temporary folder's readers (XLA's GetLocalTempDirectories, Python's tempfile) go on to the next candidate where
    # one names no folder: that setting is not used, and does not keep its reader from the next one
    skipped = tuple(name for name, value in settings.items() if known.get(name, {}).get("taken_only_if_folder")
                    and not os.path.isdir(value))
    paths = {name: problem for name, value in settings.items() if known.get(name, {}).get("kind") == "path"
             and name not in skipped and (problem := named_path_problem(value, known[name], env)) is not None}
    for name, value in settings.items():  # a cache whose errors a switch makes fatal: its entries, read
        row = known.get(name, {})
        switch = row.get("raises_with")
        if row.get("cache_entries") and name not in paths and switch and truth(env.get(switch, "")):
            damaged = damaged_cache_entries(value)
            if damaged:
                paths[name] = damaged
    answers: dict[str, SettingAnswer] = dict(default_places(env, known))
    for name in paths:  # a folder its framework makes: does the installed framework's own code make it so?
        if known[name].get("made_in"):
            answer = made_by(known[name], frameworks)
            if answer is not None:
                answers[name] = answer
    # a JAX_* of the family, and a row's enum whose value the data does not list (a newer jax's word): asked of the
    # installed jax's own definition of the option
    jax_names = [name for name in settings if (family_of(name) or {}).get("reader") == "jax_config" and (
        name not in known or (known[name]["kind"] == "enum" and settings[name] not in known[name].get("values", [])))
    ][:MAX_NAMES]
    if jax_names:
        answers.update(jax_options(jax_names, frameworks))
    held = [name for name in settings if name not in known and NAME.fullmatch(name) and
            (family_of(name) or {}).get("reader") == "strings"][:MAX_NAMES]
    if held:
        answers.update(held_by_libraries(held, frameworks))
    flagged = xla_path_problems(settings.get("XLA_FLAGS", ""), settings.get("JAX_COMPILATION_CACHE_DIR"))
    if flagged:
        answers["XLA_FLAGS"] = SettingAnswer("xla_paths", tuple(f for f, _ in flagged), tuple(p for _, p in flagged))
    for name, value in settings.items():
        row = known.get(name, {})
        if row.get("kind") == "alloc_conf" and row.get("names_from"):
            answer = allocator_keys(value, row, frameworks)
            if answer is not None:
                answers[name] = answer
        if row.get("kind") == "pjrt_options":
            answer = pjrt_options(value, row, frameworks)
            if answer is not None:
                answers[name] = answer
        if row.get("kind") == "logging_format":
            answers[name] = logging_format(value)
        if row.get("kind") == "torch_logs":
            answer = torch_log_names(value, row, frameworks, env)
            if answer is not None:
                answers[name] = answer
        if row.get("conflicts_with") in settings:
            answer = refused_together(row, frameworks)
            if answer is not None:
                answers[name] = answer
        if row.get("kind") == "enum" and row.get("values_from") and value not in row.get("values", []):
            answer = value_named(name, value, row, frameworks)
            if answer is not None:
                answers[name] = answer
    return {"settings": settings, "setting_paths": paths, "setting_answers": answers, "settings_skipped": skipped}


MAX_CACHE_FILES, MAX_CACHE_BYTES = 512, 64 << 20  # a persistent cache's entries read at most
MAX_CACHE_INFLATED = 256 << 20  # and inflated at most, all entries together (a zlib stream inflates 1,000-fold)
MAX_CACHE_LISTED = 200_000  # names listed at most (a folder of millions: seconds and hundreds of MiB to list whole)


def damaged_cache_entries(folder: str) -> str | None:
    """Where the persistent compilation cache FOLDER holds entries cut short, in words: each entry file (JAX's
    LRUCache names them KEY-cache, beside KEY-atime) whose zlib stream ends before its end, as JAX's
    decompress_executable would find it ('zlib.error: Error -5 while decompressing data: incomplete or truncated
    stream'); None where none is, or the folder cannot be listed. Regular files only (never a FIFO), at most
    MAX_CACHE_LISTED names listed, MAX_CACHE_FILES entries and MAX_CACHE_BYTES read, MAX_CACHE_INFLATED inflated (an entry whose stream has not
    ended within what is left is not judged: a zlib bomb of 60 MiB inflates to 60 GiB, minutes of work); zstandard
    entries are not judged (no decoder here)."""
    import heapq
    import itertools
    import stat
    import zlib

    try:  # the first names in order of the first MAX_CACHE_LISTED listed: memory and time bounded however many
        with os.scandir(folder) as listing:
            names = heapq.nsmallest(MAX_CACHE_FILES, (entry.name for entry in itertools.islice(listing,
                                                                                             MAX_CACHE_LISTED)))
    except OSError:
        return None
    budget, inflated, cut = MAX_CACHE_BYTES, MAX_CACHE_INFLATED, []
    for name in names:
        if name.endswith("-atime") or name.startswith("."):
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size < 2 or info.st_size > budget:
            continue
        data = _read(path, info.st_size)
        if data is None:
            continue
        budget -= len(data)
        if data[0] != 0x78 or (data[0] * 256 + data[1]) % 31:
            continue  # not a zlib stream (zstandard's, or another kind of file): not judged
        inflate, pending = zlib.decompressobj(), data
        try:
            while not inflate.eof and inflated > 0:  # a MiB of output at a time, dropped: memory bounded
                out = inflate.decompress(pending, 1 << 20)
                pending = inflate.unconsumed_tail
                inflated -= len(out)
                if not out and not pending:
                    break  # all read and nothing more comes out: the stream ends before its end
        except zlib.error:
            cut.append(name)
            continue
        if not inflate.eof and inflated > 0:
            cut.append(name)
        if inflated <= 0:
            break  # the work bounded: the entries left are not judged
    if not cut:
        return None
    return (f"{len(cut)} of its cache entries ({', '.join(cut[:3])}{', ...' if len(cut) > 3 else ''}) are cut short "
            "(the compressed stream ends before the file does), and JAX's read of such an entry raises "
            "('zlib.error: Error -5 while decompressing data: incomplete or truncated stream')")


XLA_TRUE = ("", "true", "1")  # a boolean flag of XLA's as tsl::Flags parses it ('--name' alone is true)
MAX_RESULTS_TEXT = 1 << 20  # a results file's first MiB holds its version line (XLA writes it first)


def xla_path_problems(value: str, jax_cache: str | None = None) -> list[tuple[str, str]]:
    """The flags of XLA_FLAGS (VALUE) that name a file or folder XLA's GPU compiler cannot use as it needs at the
    first compilation (compat [[xla_path_flag]]), or that require results none of them loads: [(flag, what is
    wrong, in words)]. Asked of the file system only; a text results file's version line is read (never a FIFO)."""
    from cudnn_doctor.probes.xla_flags import xla_flag_values

    data = xla_path_flags()
    given = {name: flag_value for name, _written, flag_value in xla_flag_values(value or "")}
    found: list[tuple[str, str]] = []
    for name, row in data.items():
        if name not in given:
            continue
        path = given[name]
        if row.get("needs"):
            on = (path or "").strip().lower() if path is not None else ""
            if on in [w.lower() for w in row["when"]] or (path is None and "true" in row["when"]):
                if not (given.get(row["needs"]) or "").strip() and row.get("cache_dependent") and jax_cache \
                        and _holds_files(jax_cache):
                    # JAX keeps XLA's per-fusion autotuning results in its persistent cache (jax_persistent_cache_
                    # enable_xla_caches): a program whose shapes were tuned there finds its results, any other fails
                    found.append((name, f"--{name} requires every instruction XLA autotunes to be among its results, "
                                        f"and {CACHED_RESULTS}{jax_cache}: a program whose convolutions and matrix "
                                        "products were tuned there runs, any other fails"))
                elif not (given.get(row["needs"]) or "").strip():
                    found.append((name, f"--{name} requires every instruction XLA autotunes to be among loaded "
                                        f"results, and no --{row['needs']} loads any"))
            continue
        if not path:
            continue  # empty: the compiler neither reads nor writes
        if row.get("binary"):  # a missing file XLA makes; one there it parses whole as a binary protocol buffer
            problem = _text_where_binary(path)
            if problem is not None:
                found.append((name, problem))
            continue
        problem = path_problem(path, {"path_must": row["path_must"],
                                      "folder_must_exist": row.get("folder_must_exist", False)})
        if problem is None and row.get("version") and path.endswith(tuple(row.get("text_suffixes", ()))):
            problem = _results_version(path, int(row["version"]))
        if problem is not None:
            found.append((name, problem))
    for name, path in given.items():  # a flag no row knows, naming a file that is there: XLA opens it, unread here
        if name not in data and path and os.path.isabs(path) and _regular(path):
            found.append((name, f"--{name} names {path}, a file that is there, which XLA opens as it compiles; no row "
                                "of the data knows that flag's file, so the doctor has no reader for it (`cudnn-doctor "
                                "check --deep` compiles JAX's first work here with it, which proves what XLA makes of "
                                "it)"))
    return found


def _regular(path: str) -> bool:
    """PATH is a regular file (its link followed), never opened: a FIFO, a device or a folder is not one."""
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _holds_files(folder: str) -> bool:
    """Whether FOLDER (a cache) holds anything at all, without listing more than a first entry."""
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except OSError:
        return False


def _text_where_binary(path: str) -> str | None:
    """Where PATH is a regular file whose first bytes are text (a Git LFS pointer, a note) where XLA parses a binary
    protocol buffer, in words; None where it is missing, empty, not a plain file (never opened) or not text."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    head = _read(path, 512) or b""
    if not head:
        return None
    if head.startswith(b"version https://git-lfs.github.com/spec/"):
        return f"{path} is a Git LFS pointer (the real file was never fetched), which XLA cannot parse as a binary proto"
    if all(32 <= byte < 127 or byte in (9, 10, 13) for byte in head):
        return f"{path} is a text file, which XLA cannot parse as a binary proto"
    return None


def _results_version(path: str, version: int) -> str | None:
    """Where the text results file PATH is of another version than VERSION (its top-level 'version: N'; none is
    protobuf's 0), in words; None where it is VERSION or could not be read whole (then nothing is said of it)."""
    data = _read(path, MAX_RESULTS_TEXT)
    if data is None:
        return None
    depth = 0
    for line in data.decode("utf-8", "replace").splitlines():
        if depth == 0:
            match = re.match(r"\s*version\s*:\s*(-?[0-9]+)\s*(#.*)?$", line)
            if match:
                digits = match.group(1).lstrip("-")
                if len(digits) > 10 or not -(2**31) <= int(match.group(1)) < 2**31:  # int() past 4,300 digits raises
                    return (f"{path} holds a top-level version of {len(digits)} digits, beyond the 32-bit number "
                            f"XLA's text reader takes (AutotuneResults.version, an int32): XLA refuses the file")
                said = int(match.group(1))
                return None if said == version else (
                    f"{path} holds autotuning results of version {said}, and XLA reads version {version} only "
                    f"('Version mismatch in autotune results. Expected {version} but was {said}')")
        depth += line.count("{") - line.count("}")
    if len(data) >= MAX_RESULTS_TEXT:
        return None  # its version line may lie further: nothing said
    return (f"{path} holds no top-level version line, which XLA reads as version 0, and it reads version {version} "
            f"only ('Version mismatch in autotune results. Expected {version} but was 0')")


def default_places(env: dict[str, str], known: dict[str, dict[str, Any]]) -> dict[str, SettingAnswer]:
    """The readers' own places under HOME (row default_path: CUDA's JIT cache, ~/.nv/ComputeCache) where their
    variable is unset and they are not turned off: each that its reader cannot use as it needs, as
    SettingAnswer("default_path", (the place, what is wrong, a writable place to name instead or "")). A few stats."""
    home = env.get("HOME", "")
    found: dict[str, SettingAnswer] = {}
    if not home.startswith("/"):
        return found
    for name, row in known.items():
        default = row.get("default_path")
        off = str(row.get("default_off_when") or "=").split("=", 1)
        if not default or name in env or env.get(off[0], "").strip() == off[1]:
            continue
        place = os.path.join(home, default[2:])
        problem = path_problem(place, row)
        if problem is None:
            continue
        cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        other = os.path.join(cache, *default[2:].lstrip(".").split("/")) if cache.startswith("/") else ""
        found[name] = SettingAnswer("default_path", (place, problem, other if other and path_problem(other, row)
                                                     is None else ""), ())
    return found


def named_path_problem(value: str, row: dict[str, Any], env: dict[str, str]) -> str | None:
    """path_problem, where VALUE may also be one of the row's words that stand for the folder another variable names
    (word_names: JAX_DUMP_IR_TO=sponge and TEST_UNDECLARED_OUTPUTS_DIR), and where a reader that makes folders
    through its own path library (made_in) is not asked of a URL (gs://...: its library's, not this machine's)."""
    other = row.get("word_names", {}).get(value)
    if other is not None:
        named = env.get(other, "")
        if not named:
            return f"'{value}' stands for the folder {other} names, and {other} is {'empty' if other in env else 'not set'}"
        problem = path_problem(named, row)
        return f"'{value}' stands for {other}={named}: {problem}" if problem else None
    if row.get("made_in") and "://" in value:
        return None
    return path_problem(value, row)


def made_by(row: dict[str, Any], frameworks: list[Framework]) -> SettingAnswer | None:
    """Kind "made" with the installed files of ROW's framework (made_in) that hold the code making its folder
    (made_text): its refusal is then the framework's own; None where none does or it is not installed."""
    installed = _installed_files(row["framework"], {"names_from": row["made_in"]}, frameworks)
    if installed is None:
        return None
    holding = [path for path in installed[1] if _plain_file(path) and _text_in(path, str(row["made_text"]))]
    return SettingAnswer("made", (str(row["made_text"]),), tuple(holding[:4])) if holding else None


def path_problem(value: str, row: dict[str, Any]) -> str | None:
    """What keeps ROW's reader from using the path VALUE as it needs it (row path_must), in words; None where
    nothing does, or where VALUE is one of the words it takes instead of a path (stdout)."""
    if value == "" and row.get("empty_is_path") and row["path_must"] == "writable file":
        return "an empty value, which its reader opens as the working folder (os.path.abspath('')): a folder, where a " \
               "file is written"
    if value in row.get("values", []) or not value.strip():
        return None
    must = row["path_must"]
    path = value  # as its reader opens it: getenv's text, no ~ expanded (a shell expands it before, unquoted)
    if must == "writable file":  # a file pattern (%p, %i) is made in its folder
        folder = os.path.dirname(path) or "."
        if os.path.isdir(path):
            return f"{value} is a folder, where a file is written"
        if os.path.lexists(path) and not os.access(path, os.W_OK):
            return f"{value} exists and this user cannot write it"
        if row.get("folder_must_exist") and not os.path.isdir(folder):  # its reader makes no folder (open() alone)
            return f"{folder} (in {value}) does not exist" if not os.path.lexists(folder) else \
                f"{folder} (in {value}) is not a folder"
        return _folder_problem(folder, writable=True, named=value)
    if must == "readable file":
        if not os.path.lexists(path):
            return f"{value} does not exist"
        if os.path.isdir(path):
            return f"{value} is a folder, not a file"
        if not os.access(path, os.R_OK):
            return f"this user cannot read {value}"
        return content_problem(path, row["content"]) if row.get("content") else None
    problem = _folder_problem(path, writable=must == "writable folder", named=value)
    if problem is None and row.get("must_hold") and not os.path.exists(os.path.join(path, row["must_hold"])):
        return f"{value} holds no {row['must_hold']}"
    return problem if problem or not row.get("runs_from") else _noexec(path)


def _noexec(path: str) -> str | None:
    """Where the folder PATH (or, not made yet, the nearest folder above it that exists) lies on a file system the
    kernel mounted noexec (statvfs's ST_NOEXEC, asked of the kernel): the loader refuses to map a shared library
    written there ('failed to map segment from shared object'). None otherwise."""
    folder = os.path.abspath(path)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    try:
        flags = os.statvfs(folder).f_flag
    except OSError:
        return None
    if flags & getattr(os, "ST_NOEXEC", 8):
        return (f"{folder} is on a file system mounted noexec: what its reader compiles there cannot be loaded back "
                "(the loader refuses to map it: 'failed to map segment from shared object')")
    return None


MAX_CONTENT = 16 << 20


def content_problem(path: str, content: str) -> str | None:
    """Why the reader that parses the file at PATH as CONTENT (json) refuses it, after CONTENT's words; None where it
    parses. Read as the user's file: a FIFO is never opened (its reader would wait on it for a writer)."""
    import json
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return f"{CONTENT}{error.strerror}"
    if stat.S_ISFIFO(mode):
        return f"{CONTENT}it is a FIFO, which the reader opens and reads, waiting for a writer"
    if not stat.S_ISREG(mode):
        return None
    data = _read(path, MAX_CONTENT + 1)
    if data is None or len(data) > MAX_CONTENT:
        return None  # unread: nothing said of it

    def constant(word: str) -> object:
        raise ValueError(f"{word} is not JSON")

    # as nlohmann::json's operator>> parses it: a UTF-8 byte-order mark skipped, one strict JSON value (no comment, no
    # trailing comma, no NaN), what follows that value left unread; an integer past a 64-bit one a float (its lexer
    # falls back to strtod: 10^6 digits are infinity, not an error), and any depth (its parser keeps its own stack)
    decoder = json.JSONDecoder(parse_constant=constant, parse_int=_json_integer)
    try:
        text = data.decode("utf-8-sig")
        start = len(text) - len(text.lstrip(" \t\n\r"))
        try:
            value, _end = decoder.raw_decode(text, start)
        except RecursionError:  # nested past Python's own parser: what lies deeper than the rules is not looked at
            text = _shallow(text)
            value, _end = decoder.raw_decode(text, start)
    except RecursionError:
        return None  # unread: nothing said of it
    except UnicodeDecodeError as error:
        return f"{CONTENT}it is not UTF-8 text (byte {error.start})"
    except ValueError as error:
        return f"{CONTENT}it is not JSON ({error})"
    if content == "cudnn_errata":
        problem = errata_problem(value)
        return f"{CONTENT}{problem}" if problem else None
    return None


def _json_integer(digits: str) -> int | float:
    """A JSON integer as nlohmann::json reads it: past 4,000 digits (beyond any 64-bit integer, and beyond what int()
    converts) the float strtod makes of it (infinity)."""
    return int(digits) if len(digits) <= 4000 else float(digits)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
SHALLOW_DEPTH = 8  # an errata sheet's rules are read at depth 4: what lies deeper only needs its kind
MAX_SHALLOW_TOKENS = 2_000_000  # brackets and strings walked at most (a microsecond each): past them, unread


def _shallow(text: str, keep: int = SHALLOW_DEPTH) -> str:
    """TEXT (JSON) with each array or object opened deeper than KEEP left empty (its kind kept), found without
    recursion (strings skipped whole): Python's parser refuses a depth the C++ parser takes. RecursionError past
    MAX_SHALLOW_TOKENS (16 MB of brackets took 16 s): the sheet is then not read."""
    import itertools

    parts, depth, last = [], 0, 0
    tokens = _JSON_TOKEN.finditer(text)
    for token in itertools.islice(tokens, MAX_SHALLOW_TOKENS):
        bracket = token.group()
        if bracket[0] == '"':
            continue
        if bracket in "[{":
            depth += 1
            if depth == keep + 1:
                parts.append(text[last:token.end()])
                last = -1  # inside what is left empty
        else:
            if depth == keep + 1:
                last = token.start()
            depth -= 1
    if next(tokens, None) is not None:
        raise RecursionError("nested past what is read")
    parts.append(text[last:] if last >= 0 else "")  # a container never closed: what was kept is not JSON either
    return "".join(parts)


ERRATA_TYPES = (("operation", str, "string"), ("engine", (int, float), "number"),
                ("cudnn_version_start", (int, float), "number"), ("cudnn_version_end", (int, float), "number"))
ERRATA_EVERY_ENGINE = 256  # engine ids 0..255 of one operation blocked, whatever the knobs: no engine of it is left


def errata_problem(value: object) -> str | None:
    """What the cuDNN frontend makes of an errata sheet VALUE (parsed JSON) as it checks each execution plan
    (cudnn_frontend_Errata.h check_errata -> check_rule, every rule of "rules" for every plan): a rule whose
    "operation" is not a string or whose "engine" (or cudnn_version_start/end) is not a number makes nlohmann::json
    throw type_error.302 for every plan, so every cuDNN operation fails; a sheet blocking every engine id of the
    forward convolution (0..255, no knob, no version bound that ends) leaves it no engine. In words; None where
    neither."""
    rules = value.get("rules") if isinstance(value, dict) else None
    if not isinstance(rules, list):
        return None
    blocked: dict[str, set[int]] = {}
    for index, rule in enumerate(rules[:100000]):
        if not isinstance(rule, dict):
            return (f"rule {index + 1} of \"rules\" is a {type(rule).__name__}, not an object: the cuDNN frontend "
                    "reads its \"operation\" while checking every plan and throws ('[json.exception.type_error.305]'), "
                    "so every cuDNN operation fails")
        for key, kinds, word in ERRATA_TYPES:
            if key not in rule and key.startswith("cudnn_version"):
                continue
            found = rule.get(key)
            if not isinstance(found, kinds) or isinstance(found, bool):
                shown = "missing" if key not in rule else f"{json_type(found)} {str(found)[:40]!r}" if found is not None \
                    else "null"
                return (f"rule {index + 1}'s \"{key}\" is {shown}, and the cuDNN frontend reads it as a {word} while "
                        f"checking every execution plan: it throws ('[json.exception.type_error.302] type must be "
                        f"{word}, but is {json_type(found)}'), so every cuDNN operation fails")
        if not rule.get("knob") and rule.get("cudnn_version_end", -1) == -1 and isinstance(rule["engine"], int):
            blocked.setdefault(str(rule["operation"]), set()).add(int(rule["engine"]))
    for operation, engines in sorted(blocked.items()):
        # the forward convolution: every program's convolutions run it (the gradients' operations run only where a
        # program trains: blocking those all left torch's and JAX's inference working on an H100)
        if operation == "ConvFwd" and set(range(ERRATA_EVERY_ENGINE)) <= engines:
            return (f"it blocks engines 0-{max(engines)} of {operation} with no knob and no end: every engine cuDNN "
                    f"has for {operation} is filtered out, so that operation finds none ('unable to find an engine')")
    return None


def json_type(value: object) -> str:
    """nlohmann::json's name for the type of VALUE (as its type_error texts say it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _folder_problem(folder: str, writable: bool, named: str) -> str | None:
    if os.path.isdir(folder):
        if writable and not os.access(folder, os.W_OK | os.X_OK):
            return f"this user cannot write in {folder}"
        return _cannot_make(folder, "file") if writable and _access_may_lie() else None
    if os.path.lexists(folder):
        return f"{folder} is not a folder"
    if not writable:
        return f"{folder} does not exist"
    parent = folder  # a folder its reader makes: the nearest one that exists must be writable
    while parent and not os.path.lexists(parent):
        above = os.path.dirname(parent.rstrip("/")) or "/"
        if above == parent:
            break
        parent = above
    if not os.path.isdir(parent):
        return f"{parent} (in {named}) is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{folder} does not exist, and this user cannot make it in {parent}"
    said = _cannot_make(parent, "folder") if _access_may_lie() else None
    return f"{folder} does not exist, and {said}" if said else None


def _access_may_lie() -> bool:
    """access(2) answers for root from the permission bits, which root overrides, so it says yes where nothing can be
    made (/proc, /sys, an immutable folder): only then is the kernel asked by making something. For other users its
    answer is the kernel's own (a read-only mount included), and nothing is written in their folders."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _cannot_make(folder: str, kind: str) -> str | None:
    """Whether the kernel lets this user make a FILE or FOLDER in FOLDER, asked by making one and removing it at
    once (access(2) says yes for root in /proc or /sys, where nothing can be made: JAX then fails 'Unable to write
    PTX contents', torch.compile cannot make its cache). Its words where it refuses."""
    import time

    made = os.path.join(folder, f".cudnn-doctor-{os.getpid()}-{time.monotonic_ns()}")  # no tempfile: random's import
    try:
        if kind == "file":
            os.close(os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
            os.unlink(made)
        else:
            os.mkdir(made, 0o700)
            os.rmdir(made)
    except OSError as refused:
        return f"no {kind} can be made in {folder} ({refused.strerror or refused})"
    return None


# --- JAX: its options, as the installed jax defines them ----------------------------------------------------------


@functools.cache
def _definition_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"(\w+?)_(state|flag|env)\(\s*(?:name\s*=\s*)?$")


# the *_state helpers of jax/_src/config.py read the variable named by the option in capitals, each with its own parser
# (bool_env; == one of enum_values; the enum class's own lookup; int(); float()); optional_bool_state reads it only
# where its default is not None, so it is not judged; the *_flag helpers read nothing themselves (their default
# may: bool_env('JAX_...'), int_env('JAX_...'), read below as the variable's own definition)
_KINDS = {b"bool": "bool", b"enum": "enum", b"optional_enum": "enum", b"enum_class": "enum", b"int": "integer",
          b"float": "float"}
_ENV_KINDS = {b"bool": "bool", b"int": "integer"}  # config.bool_env(NAME, ...), config.int_env(NAME, ...)
TYPED, DEFINED, NAMED = 2, 1, 0  # how much an occurrence of a name says: a parser, a definition of any text, a mention


def jax_options(names: list[str], frameworks: list[Framework]) -> dict[str, SettingAnswer]:
    """For each JAX_* NAME: the grammar of the option its installed jax reads from it (bool_state, enum_state with
    its enum_values, enum_class_state with its class's values, int_state, float_state, or the variable read with
    bool_env or int_env; any other: "string"), or kind "unknown" where none of the family's files names it. The
    definition is looked for in every file (config.py first), so a mention of the name elsewhere (a test helper's
    string) never stands for it. Nothing where JAX is not installed or its files cannot be read."""
    jax = next((f for f in frameworks if f.name == "jax" and f.details.get("site_packages")), None)
    family = family_of(names[0]) or {}
    if jax is None or not family.get("names_from"):
        return {}
    site = str(jax.details["site_packages"])
    files = [path for pattern in family["names_from"] for path in sorted(glob.glob(os.path.join(glob.escape(site),
                                                                                              pattern)))]
    config = [path for path in files if path.endswith(os.path.join("_src", "config.py"))]
    files = config + [path for path in files if path not in config]  # the options' own file first
    if not config:
        return {}  # not the jax this knows how to read: nothing said
    best: dict[str, tuple[int, SettingAnswer]] = {}
    wanted = {spelt: name for name in names if re.fullmatch(r"JAX_[A-Z0-9_]+", name)
              for spelt in (name, name.lower())}  # the variable, or the option it is the capitals of
    for path in files:
        if not wanted:
            break
        text = _read(path)
        if text is None:
            return {}
        present = [spelt for spelt in wanted if spelt.encode() in text]  # a plain search first: most files name none
        if not present:
            continue
        pattern = re.compile(rb"['\"](" + b"|".join(re.escape(s.encode()) for s in sorted(present, key=len,
                                                                                          reverse=True)) + rb")['\"]")
        for count, match in enumerate(pattern.finditer(text)):
            if count >= 256:
                break
            name = wanted.get(match.group(1).decode())
            if name is None:
                continue
            rank, answer = _option(text, match, path)
            if name not in best or rank > best[name][0]:
                best[name] = (rank, answer)
        done = {name for name, (rank, _) in best.items() if rank == TYPED}  # a parser found: no other file is read
        wanted = {spelt: name for spelt, name in wanted.items() if name not in done}
    answers = {name: answer for name, (_, answer) in best.items()}
    for name in sorted({name for name in names if re.fullmatch(r"JAX_[A-Z0-9_]+", name)} - set(best)):
        answers[name] = SettingAnswer("unknown", (), tuple(files[:4]) + (("...",) if len(files) > 4 else ()))
    return answers


def _option(text: bytes, match: re.Match[bytes], path: str) -> tuple[int, SettingAnswer]:
    """What the occurrence MATCH of a name in a jax file says, and how much (TYPED, DEFINED, NAMED): the kind of
    *_state it is, an enum's values; the parser that reads the variable (bool_env, int_env); else any text."""
    before = _definition_pattern().search(text[max(0, match.start() - 80):match.start()])
    spelt = match.group(1)
    if before is not None and before.group(2) == b"env" and spelt.isupper() and before.group(1) in _ENV_KINDS:
        read = _ENV_KINDS[before.group(1)]  # config.bool_env('JAX_...', ...): values ("int()",) where int() reads it
        return TYPED, SettingAnswer(read, ("int()",) if read == "integer" else (), (path,))
    if spelt.isupper():
        parsed = _read_with_int(text, match)
        if parsed is not None:
            return TYPED, SettingAnswer(parsed[0], parsed[1], (path,))
    if before is None or before.group(2) == b"env" or not spelt.islower():
        return NAMED, SettingAnswer("string", (), (path,))  # a flag read with os.getenv, a literal: any text
    if before.group(2) == b"flag":
        return DEFINED, SettingAnswer("string", (), (path,))  # a *_flag reads no variable itself
    defined = _KINDS.get(before.group(1))
    if defined is None:
        return DEFINED, SettingAnswer("string", (), (path,))  # string_state, optional_bool_state ...: not judged
    kind = defined
    values: tuple[str, ...] = ()
    if kind == "enum":
        after = text[match.end():match.end() + 1200]
        end = re.search(rb"\n\S", after)  # the definition ends at the next line that starts at the margin
        call = after[:end.start() if end else len(after)]
        if before.group(1) == b"enum_class":
            found = _enum_class_values(text, call)
            if found is None:
                return DEFINED, SettingAnswer("string", (), (path,))
            return TYPED, SettingAnswer(kind, found, (path,))
        listed = re.search(rb"enum_values\s*=\s*\[([^\]]*)\]", call)
        if listed is None:
            return DEFINED, SettingAnswer("string", (), (path,))
        values = tuple(v.decode("utf-8", "replace") for v in re.findall(rb"['\"]([^'\"]*)['\"]", listed.group(1)))
    return TYPED, SettingAnswer(kind, values, (path,))


@functools.cache
def _getenv_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"os\.(?:environ\.get|getenv)\(\s*$|os\.environ\[\s*$")


@functools.cache
def _parse_of_getenv_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"\b(int|float)\(\s*os\.(?:environ\.get|getenv)\(\s*$|\b(int|float)\(\s*os\.environ\[\s*$")


@functools.cache
def _bound_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"(\w+)\s*:?=\s*\(?\s*$")


@functools.cache
def _margin_pattern() -> re.Pattern[bytes]:
    # the next line that starts at the margin: the end of a module-level function
    return re.compile(rb"\n(?=[^\s#])")


MAX_BODY = 16 << 10  # a function's body read for the parse of a name it reads
_PARSED = {b"int": "integer", b"float": "float"}


def _read_with_int(text: bytes, match: re.Match[bytes]) -> tuple[str, tuple[str, ...]] | None:
    """Where the variable named at MATCH is read from the environment (os.environ.get, os.getenv, os.environ[...])
    and its text given to Python's int() or float(): directly (int(os.getenv('JAX_...'))), or bound to a name that
    the rest of its function (the next 600 characters at module level) gives to int() or float() or to
    map(int, NAME.split(',')) (jax/_src/distributed.py's
    JAX_LOCAL_DEVICE_IDS, jaxlib/xla_client.py's XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB). The kind ("integer",
    "float") and the answer's values: "int()" or "float()", "list:SEP" for a list, "when used" where the read is inside a
    function (its refusal is a program's that calls it, not the import's); None where neither reads it."""
    before = text[max(0, match.start() - 120):match.start()]
    read = _getenv_pattern().search(before)
    if read is None:
        return None
    at = match.start() - len(before) + read.start()
    line = text[text.rfind(b"\n", 0, at) + 1:at]
    where = ("when used",) if line[:1] in (b" ", b"\t") else ()
    direct = _parse_of_getenv_pattern().search(before)
    if direct is not None:
        kind = _PARSED[direct.group(1) or direct.group(2)]
        return kind, ("int()" if kind == "integer" else "float()", *where)
    bound = _bound_pattern().search(before[:read.start()])
    if bound is None:
        return None
    name = re.escape(bound.group(1))
    after = text[match.end():match.end() + (MAX_BODY if where else 600)]
    if where:  # read inside a function: its parse may come anywhere before the function ends (jaxlib 0.8 on reads
        # XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB some 700 characters before its int(), past a list of allocators)
        end = _margin_pattern().search(after)
        after = after[:end.start() if end else len(after)]
    listed = re.search(rb"map\(\s*int\s*,\s*" + name + rb"\.split\(\s*['\"]([^'\"\\]{1,4})['\"]\s*\)", after)
    if listed is not None:
        return "integer", ("int()", f"list:{listed.group(1).decode('utf-8', 'replace')}", *where)
    parsed = re.search(rb"\b(int|float)\(\s*" + name + rb"\s*\)", after)
    if parsed is not None:
        kind = _PARSED[parsed.group(1)]
        return kind, ("int()" if kind == "integer" else "float()", *where)
    return None


def _enum_class_values(text: bytes, call: bytes) -> tuple[str, ...] | None:
    """The values an enum_class_state's class takes (enum_class(value): its members' values, exactly), read from its
    definition in the same file; None where the class looks values up another way (_missing_: other spellings) or
    a member's value is not a quoted literal (enum.auto()): then its grammar is not judged."""
    named = re.search(rb"enum_class\s*=\s*(\w+)", call)
    if named is None:
        return None
    head = re.search(rb"^class " + re.escape(named.group(1)) + rb"\([\w.]*Enum\):[^\n]*\n", text, re.MULTILINE)
    if head is None:
        return None
    body = text[head.end():head.end() + 4000]
    end = re.search(rb"^\S", body, re.MULTILINE)
    body = body[:end.start() if end else len(body)]
    if b"_missing_" in body:
        return None
    members = re.findall(rb"^\s+[A-Z][A-Z0-9_]*\s*=\s*(.+?)\s*(?:#.*)?$", body, re.MULTILINE)
    values = [re.fullmatch(rb"'([^'\\]*)'|\"([^\"\\]*)\"", member) for member in members]
    if not values or any(value is None for value in values):
        return None
    return tuple((v.group(1) if v.group(1) is not None else v.group(2)).decode("utf-8", "replace")
                 for v in values if v is not None)


def _read(path: str, limit: int = 4 << 20) -> bytes | None:
    """A file's first LIMIT bytes; None where it cannot be read (a FIFO is never opened for reading). Opened without
    blocking: a path made a FIFO after it was asked of, or a kernel file that waits for what it gives (/proc/kmsg),
    answers at once instead of holding the doctor."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
            return handle.read(limit)
    except OSError:
        return None


# --- what the reader's own files say of two variables together, or of a value the data does not list ----------------

def _reader_files(row: dict[str, Any], patterns: list[str], frameworks: list[Framework]) -> list[str]:
    """The files of ROW's framework, in its site-packages, that PATTERNS find and that name ROW's variable (the
    reader's own code), the likeliest first; [] where the framework is not here."""
    from cudnn_doctor.probes.file_words import names_in

    sites = [str(f.details["site_packages"]) for f in frameworks if f.name == row["framework"] and
             f.details.get("site_packages")]
    files: dict[str, str] = {}  # one file once, by its real path; named as the site-packages holds it
    for site in sites:
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(glob.escape(site), pattern))):
                if _plain_file(path):
                    files.setdefault(os.path.realpath(path), path)
    return [path for path in list(files.values())[:MAX_FILES] if names_in([path], [row["variable"]])]


def refused_together(row: dict[str, Any], frameworks: list[Framework]) -> SettingAnswer | None:
    """Where ROW's variable and its conflicts_with are both set: kind "conflict" where an installed file of the
    reader that reads it holds the reader's own refusal (conflict_text), with the files; None where none does."""
    files = _reader_files(row, list(row.get("conflict_files", ())), frameworks)
    holding = [path for path in files if _text_in(path, str(row["conflict_text"]))]
    return SettingAnswer("conflict", (str(row["conflicts_with"]),), tuple(holding[:4])) if holding else None


def _text_in(path: str, text: str) -> bool:
    """Does the file at PATH hold TEXT (its first 4 MiB: a reader's Python file is far smaller)?"""
    data = _read(path)
    return data is not None and text.encode() in data


def value_named(name: str, value: str, row: dict[str, Any], frameworks: list[Framework]) -> SettingAnswer | None:
    """A value of the enum ROW that the data does not list, asked of the installed reader's own files (values_from)
    that read NAME: kind "enum" with VALUE where one holds it quoted (a newer release's word: taken), None where
    none does or the reader is not here."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", value):
        return None
    files = _reader_files(row, list(row["values_from"]), frameworks)
    holding = [path for path in files if _text_in(path, f"'{value}'") or _text_in(path, f'"{value}"')]
    return SettingAnswer("enum", (value,), tuple(holding[:4])) if holding else None


# --- JAX's PJRT client options: its parser, and the CUDA plugin that gets them ----------------------------------------

def pjrt_options(value: str, row: dict[str, Any], frameworks: list[Framework]) -> SettingAnswer | None:
    """What the installed jax says of JAX_PJRT_CLIENT_CREATE_OPTIONS: kind "pjrt_options", files (the file of its
    parser that holds the parser's refusal, or ""; the CUDA plugin's library, or "": no plugin gets the options),
    values: the names of VALUE's options the data does not list that the plugin's library holds as strings (a newer
    plugin's options: taken). None where jax is not installed."""
    from cudnn_doctor.elf import ElfError, strings_held
    from cudnn_doctor.knowledge.environment import pjrt_entries, pjrt_option_rows

    installed = _installed_files(row["framework"], {"names_from": row["parser_in"]}, frameworks)
    if installed is None:
        return None
    site, parsers = installed
    parser = next((path for path in parsers if _plain_file(path) and _text_in(path, str(row["parser_text"]))), "")
    plugins = [path for pattern in row["plugin_files"] for path in sorted(glob.glob(os.path.join(glob.escape(site),
                                                                                                  pattern)))
               if _plain_file(path)]
    if not plugins:
        return SettingAnswer("pjrt_options", (), (parser, ""))
    known = pjrt_option_rows()
    others = tuple(sorted({key for key, _ in pjrt_entries(value)[1] if key not in known and
                           re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key)}))[:MAX_NAMES]
    held: set[str] = set()
    if others:
        try:
            held = strings_held(plugins[0], others)
        except ElfError:
            held = set(others)  # its data unread: nothing said of them
    return SettingAnswer("pjrt_options", tuple(sorted(held)), (parser, plugins[0]))


# --- a library that keeps the names it reads as strings (NCCL) ------------------------------------------------------

def held_by_libraries(names: list[str], frameworks: list[Framework]) -> dict[str, SettingAnswer]:
    """For each NAME of a family whose reader keeps its variables' names as strings (names_from, in the installed
    frameworks' site-packages: a library's read-only data, a Python file's text): kind "unknown" where none of the
    files found holds it, "string" where one does. Nothing for a family none of whose files is here, or one of whose
    files cannot be read."""
    by_family: dict[str, list[str]] = {}
    for name in names:
        by_family.setdefault(str((family_of(name) or {}).get("prefix")), []).append(name)
    answers: dict[str, SettingAnswer] = {}
    sites = list(dict.fromkeys(str(f.details["site_packages"]) for f in frameworks if f.details.get("site_packages")))
    for members in by_family.values():
        family = family_of(members[0]) or {}
        files = list(dict.fromkeys(os.path.realpath(path) for site in sites for pattern in family.get("names_from", ())
                                   for path in sorted(glob.glob(os.path.join(glob.escape(site), pattern)))
                                   if _plain_file(path)))  # in names_from's order: the likeliest first
        found = _held(files[:MAX_FILES], members) if files else None
        if found is not None:
            answers.update({name: SettingAnswer("string" if name in found else "unknown", (), tuple(files[:4]))
                            for name in members})
            answers.update(_parsed_in_python(files[:MAX_FILES], sorted(found), sites))
    return answers


def _parsed_in_python(files: list[str], names: list[str], sites: list[str] | None = None) -> dict[str, SettingAnswer]:
    """The NAMES a Python file of FILES reads from the environment and gives to int() or float() (_read_with_int),
    each as that kind, "when used": these families' readers run when a program uses what they configure (a
    compilation, the GPU client's start), not when it imports its framework. Where the function that reads it is
    called by an installed JAX GPU plugin's initialize() (jax_plugins/*/__init__.py in SITES: jaxlib's
    generate_pjrt_gpu_plugin_options), the values say "at start" too, and the plugin's file is among the files: JAX
    calls initialize() as its backends start, whatever the program, and an exception there is logged ('Jax plugin
    configuration error') and leaves the plugin unregistered (jax/_src/xla_bridge.py discover_pjrt_plugins)."""
    typed: dict[str, SettingAnswer] = {}
    for path in files:
        if not names or not path.endswith(".py"):
            continue
        text = _read(path)
        present = [name for name in names if text is not None and name.encode() in text]
        if text is None or not present:
            continue
        pattern = re.compile(rb"['\"](" + b"|".join(re.escape(n.encode()) for n in present) + rb")['\"]")
        for count, match in enumerate(pattern.finditer(text)):
            parsed = _read_with_int(text, match) if count < 256 else None
            if parsed is not None:
                values = tuple(v for v in parsed[1] if v != "when used") + ("when used",)
                caller = _plugin_calling(text, match.start(), sites or []) if "when used" in parsed[1] else None
                held = (path, caller) if caller else (path,)
                typed[match.group(1).decode()] = SettingAnswer(parsed[0], values + (("at start",) if caller else ()),
                                                               held)
            elif count < 256 and match.group(1).decode() not in typed:
                compared = _read_compared(text, match)
                if compared is not None:
                    typed[match.group(1).decode()] = SettingAnswer("compared", compared, (path,))
        names = [name for name in names if name not in typed]
    return typed


# os.environ.get("NAME"[, default]) or os.getenv(...), then .lower() maybe, then == / != a text or (not) in a tuple of
# texts: a switch its reader compares with words (torch/_inductor/config.py: os.environ.get("TORCHINDUCTOR_X", "0")
# == "1"), where any other text is silently the other side of the comparison


@functools.cache
def _compared_pattern() -> re.Pattern[bytes]:
    return re.compile(
        rb"""\s*(?:,\s*(?:(['"])([^'"\\\n]{0,40})\1|[^()\n]{1,80}?))?\s*\)\s*(\.lower\(\)\s*)?"""
        rb"""(?:(==|!=)\s*(['"])([^'"\\\n]{0,40})\5|(not\s+in|in)\s*[(\[{]((?:\s*['"][^'"\\\n]{0,20}['"]\s*,?){1,12})\s*[)\]}])""")


@functools.cache
def _quoted_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"""['"]([^'"\\\n]{0,20})['"]""")


def _read_compared(text: bytes, match: re.Match[bytes]) -> tuple[str, ...] | None:
    """Where the variable named at MATCH is read with os.environ.get or os.getenv and its text compared with words
    (== '1', != '0', in ('1', 'true')): (the operator, "lower" or "exact", "default=TEXT", "default?" where the
    default is no literal or "unset" where there is none, then the words compared with); None where it is read
    otherwise, or compared with words that are not on or off words (a mode's name)."""
    before = text[max(0, match.start() - 120):match.start()]
    read = _getenv_pattern().search(before)
    if read is None or before[read.start():].startswith(b"os.environ["):
        return None
    found = _compared_pattern().match(text, match.end())
    if found is None:
        return None
    if found.group(4):
        operator, words = found.group(4).decode(), [found.group(6)]
    else:
        operator, words = " ".join(found.group(7).decode().split()), _quoted_pattern().findall(found.group(8))
    texts = [word.decode("utf-8", "replace") for word in words]
    if not texts or any(truth(word) is None for word in texts):
        return None  # compared with a mode's name, not an on or off word: nothing to say of other words
    if found.group(1):
        default = f"default={found.group(2).decode('utf-8', 'replace')}"
    elif found.group(0).lstrip().startswith(b","):
        default = "default?"  # a default that is no literal (a name, an expression)
    else:
        default = "unset"  # no default: os.environ.get returns None, which equals no word
    return (operator, "lower" if found.group(3) else "exact", default, *texts)


@functools.cache
def _top_def_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"^def (\w+)\(", re.MULTILINE)


def _plugin_calling(text: bytes, at: int, sites: list[str]) -> str | None:
    """The installed JAX GPU plugin (jax_plugins/*/__init__.py of SITES) whose initialize() calls the module-level
    function of TEXT that holds offset AT; None where none does (or AT is in no such function)."""
    functions = list(_top_def_pattern().finditer(text, 0, at))
    if not functions:
        return None
    function = functions[-1].group(1)
    call = re.compile(rb"(?<![\w])(?:\w+\.)?" + re.escape(function) + rb"\(")
    for site in sites:
        for plugin in sorted(glob.glob(os.path.join(glob.escape(site), "jax_plugins", "*", "__init__.py")))[:8]:
            body = _read(plugin) or b""
            start = body.find(b"\ndef initialize(")
            if start < 0:
                continue
            end = _top_def_pattern().search(body, start + 2)
            if call.search(body, start, end.start() if end else len(body)):
                return plugin
    return None


MAX_FILES = 64


def _plain_file(path: str) -> bool:
    """A regular file with something in it: never a FIFO (opening one waits), a folder, or an empty __init__.py."""
    try:
        return os.path.isfile(path) and os.path.getsize(path) > 0
    except OSError:
        return False


def _held(files: list[str], names: list[str]) -> set[str] | None:
    """Which NAMES the FILES hold: a shared library in its read-only data, any other file in its text (as a whole
    word). None where one cannot be read."""
    from cudnn_doctor.elf import ElfError, strings_held
    from cudnn_doctor.probes.file_words import names_in

    found: set[str] = set()
    for path in files:
        wanted = tuple(name for name in names if name not in found)
        if not wanted:
            break
        if ".so" in os.path.basename(path):
            try:
                found |= strings_held(path, wanted)
            except ElfError:
                return None
        else:
            said = names_in([path], list(wanted))
            if said is None:
                return None
            found |= said
    return found


def _installed_files(name: str, row: dict[str, Any], frameworks: list[Framework]) -> tuple[str, list[str]] | None:
    """The site-packages of the installed framework NAME and the files of it the ROW's names_from globs match there;
    None where it is not installed."""
    framework = next((f for f in frameworks if f.name == name and f.details.get("site_packages")), None)
    if framework is None:
        return None
    site = str(framework.details["site_packages"])
    return site, [path for pattern in row["names_from"] for path in sorted(glob.glob(os.path.join(glob.escape(site),
                                                                                                pattern)))]


# --- PyTorch: the keys its allocator parser knows -----------------------------------------------------------------

def allocator_keys(value: str, row: dict[str, Any], frameworks: list[Framework]) -> SettingAnswer | None:
    """Which keys of the allocator configuration VALUE the installed torch's c10 libraries (row names_from) hold as
    strings: its parser accepts no other key. None where torch or those libraries are not here."""
    installed = _installed_files("torch", row, frameworks)
    if installed is None:
        return None
    site, files = installed
    keys = sorted({allocator_tokens(item)[0] for item in allocator_items(value)} - {""})
    keys = [key for key in keys if re.fullmatch(r"[A-Za-z0-9_]+", key)][:MAX_NAMES]
    if not files or not keys:
        return None
    from cudnn_doctor.knowledge.data import load
    from cudnn_doctor.probes.file_words import names_in

    # a newer torch's check of a key's value: asked by its message (check_text), as the key's name is
    texts = [entry["check_text"] for entry in load("process_env").get("alloc_conf_key", [])
             if entry["key"] in keys and entry.get("check_text")]
    found = names_in(files, keys + texts)
    if found is None:
        return None
    return SettingAnswer("alloc_conf", tuple(name for name in keys + texts if name in found), tuple(files))


# --- PyTorch: the names TORCH_LOGS may hold, as the installed torch registers them --------------------------------

# torch/_logging/_internal.py's _gen_settings_regex: names of word characters and dots, each with an optional + or -,
# separated by commas and any white space after them


@functools.cache
def torch_logs_form_pattern() -> re.Pattern[str]:
    return re.compile(r"((\+|-)?[\w\.]+,\s*)*(\+|-)?[\w\.]+?")


@functools.cache
def _registered_pattern() -> re.Pattern[bytes]:
    return re.compile(rb"register_(?:log|artifact)\(\s*[\"']([\w.]+)[\"']")


def torch_log_names(value: str, row: dict[str, Any], frameworks: list[Framework],
                    env: dict[str, str]) -> SettingAnswer | None:
    """The entries of TORCH_LOGS VALUE the installed torch refuses when it is imported (kind torch_logs, values: the
    refused entries; none: it takes them), as its _parse_log_settings reads them: the names its _registrations.py
    registers, 'all', and modules found where its Python looks. None where torch or that file is not here."""
    installed = _installed_files("torch", row, frameworks)
    if installed is None:
        return None
    site, files = installed
    text = _read(files[0]) if files else None
    registered = {name.decode() for name in _registered_pattern().findall(text or b"")}
    if not {"dynamo", "inductor"} <= registered:  # every torch since 2.1 registers these two there
        return None  # not the torch this knows how to read: nothing said
    if value == "":  # taken, unless the installed parser makes an empty value a dict where a LogState is used
        internal = os.path.join(os.path.dirname(files[0]), "_internal.py")
        return SettingAnswer("torch_logs", ("",) if _empty_breaks_log_state(internal) else (), (internal,))
    if value in ("help", "+help") or not torch_logs_form_pattern().fullmatch(value):
        return SettingAnswer("torch_logs", (value,), (files[0],))
    refused = []
    for entry in re.sub(r"\s+", "", value).split(","):
        name = entry.replace("+", "").replace("-", "")
        if name in ("all", *registered) or _module_found(name, site, env):
            continue
        refused.append(entry)
    return SettingAnswer("torch_logs", tuple(refused[:MAX_NAMES]), (files[0],))


def _empty_breaks_log_state(path: str) -> bool:
    """Does torch's _logging/_internal.py at PATH turn an empty TORCH_LOGS into a plain dict (_parse_log_settings:
    `if settings == "": return {}`) that it then stores as its log state (_update_log_state_from_env) and asks for
    get_log_level_pairs() while torch is imported? torch 2.11 and 2.13 do: `import torch` raises AttributeError."""
    text = _read(path)
    return text is not None and re.search(rb"if settings == \"\":\s*return (?:\{\}|dict\(\))", text) is not None and \
        b"log_state = _parse_log_settings(log_setting)" in text and b"log_state.get_log_level_pairs()" in text


def _module_found(name: str, site: str, env: dict[str, str]) -> bool:
    """Could importlib.util.find_spec(NAME) find a module in torch's Python: its top name a package or module in its
    site-packages or on PYTHONPATH, or a module of Python's own. Only the top name is looked for (a submodule is
    its package's to say), so a module torch would find is never called unknown."""
    import sys

    top = name.split(".")[0]
    if not top or not all(name.split(".")):
        return False
    if top in getattr(sys, "stdlib_module_names", ()) or top in sys.builtin_module_names:
        return True
    for base in [site, *[entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]]:
        path = os.path.join(base, top)
        if os.path.isdir(path) or glob.glob(glob.escape(path) + ".*py*") or glob.glob(glob.escape(path) + ".*.so"):
            return True
    return False


def logging_format(value: str) -> SettingAnswer:
    """A format for Python's logging.Formatter, asked of Python's own logging module (kind logging_format, values:
    its words where it refuses the format; none where it takes it). 'short' and 'basic' are torch's own names."""
    if value in ("short", "basic"):
        return SettingAnswer("logging_format", (), ("logging",))
    import logging

    try:
        logging.Formatter(value)
    except (ValueError, KeyError, TypeError) as error:
        return SettingAnswer("logging_format", (f"{type(error).__name__}: {error}",), ("logging",))
    return SettingAnswer("logging_format", (), ("logging",))
