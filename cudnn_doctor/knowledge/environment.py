"""The environment variables CUDA, cuDNN, cuBLAS, NCCL and the frameworks read, as compat/ holds them (issue 45).

One door for all who need them: the probe (which of them are set), the rules (each one's grammar, judged here the
way its reader reads it) and `--deep`'s bisection (which of them to unset alone). The names are the data's
(compat/process_env.toml [[setting]] and [[setting_family]], compat/multi_gpu.toml [[nccl_setting]]); nothing in the
code lists them again (tests/test_environment_settings.py greps for such a list)."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.records import record
from cudnn_doctor.versions import ascii_digits

TRUE_WORDS = ("1", "true", "yes", "y", "t", "on")  # what "on" is spelt as by the readers whose grammar takes words
FALSE_WORDS = ("0", "false", "no", "n", "f", "off")
CUDA_LIBRARY_READERS = ("cuda", "cudnn", "cublas")
MAX_VALUE = 65536  # characters: longer is a value nothing reads  # read by every program that loads the library: always present


@functools.cache
def rows() -> dict[str, dict[str, Any]]:
    """Every variable the data names -> its row: compat/process_env.toml [[setting]], then compat/multi_gpu.toml
    [[nccl_setting]] (those carry `framework = "nccl"`)."""
    found: dict[str, dict[str, Any]] = {row["variable"]: row for row in load("process_env").get("setting", [])}
    for row in load("multi_gpu").get("nccl_setting", []):
        kind = {"flag": "bool"}.get(row["grammar"], row["grammar"])
        found.setdefault(row["variable"], {**row, "framework": "nccl", "kind": kind})
    return found


def working_folder_paths() -> dict[str, str]:
    """The data's variables whose reader resolves a relative value against the working folder -> how the value is read
    (variables.child_environment): each row of kind "path" (a file or folder its reader opens: the kernel takes a
    relative one from the working folder, openat(2) with AT_FDCWD), and XLA's flags (kind "xla_flags": its path
    flags, or a file of flags)."""
    return {name: "xla flags" if row.get("kind") == "xla_flags" else "path" for name, row in rows().items()
            if row.get("kind") in ("path", "xla_flags")}


NCCL_OWN_GRAMMARS = ("interfaces", "flag", "level", "debug", "names", "bitset")  # rules/multi_gpu.py judges NCCL's rows of these


def families() -> list[dict[str, Any]]:
    """compat/process_env.toml [[setting_family]]: the variables of one reader, by prefix."""
    return list(load("process_env").get("setting_family", []))


def family_of(name: str) -> dict[str, Any] | None:
    """The family NAME belongs to (its prefix, and none of its exceptions), or None."""
    for family in families():
        if name.startswith(family["prefix"]) and not name.startswith(tuple(family.get("except", ()))):
            return family
    return None


def set_variables(env: dict[str, str]) -> dict[str, str]:
    """The variables of ENV the data knows (a row, a member of a family, or a launcher's count of processes that a
    [[feature]] weighs), by name; one whose reader takes an empty value for unset (row empty_is_unset) is left out
    where it is empty."""
    known = rows()
    launchers = {name for feature in features() for name in feature.get("launcher_variables", ())}
    return {name: env[name] for name in sorted(env) if (name in known or name in launchers or
                                                        family_of(name) is not None) and
            not (env[name] == "" and known.get(name, {}).get("empty_is_unset"))}


def features() -> list[dict[str, Any]]:
    """compat/process_env.toml [[feature]]: the uses of a feature (a collective, torch.compile, a GPU exception) at
    which some settings are first read."""
    return list(load("process_env").get("feature", []))


def feature_of(name: str) -> dict[str, Any] | None:
    """The [[feature]] whose use first reads NAME (its row's read_when, its reader's, or its family's), or None: read
    at import or at the first CUDA work."""
    row = rows().get(name)
    family = family_of(name) if row is None else None
    for feature in features():
        if row is not None and (row.get("read_when") == feature["name"] or row["framework"] in feature.get("readers", ())):
            return feature
        if family is not None and (family["prefix"] in feature.get("families", ()) or
                                   family["framework"] in feature.get("readers", ())):
            return feature
    return None


def launched(feature: dict[str, Any], settings: dict[str, str]) -> list[str]:
    """FEATURE's launcher variables of SETTINGS that count more than one process ('WORLD_SIZE=4'): a launcher started
    several, each of which may join the others."""
    out = []
    for name in feature.get("launcher_variables", ()):
        text = settings.get(name, "").strip()
        digits = text.lstrip("0")  # compared as text: a hostile count of thousands of digits is never made an int
        if ascii_digits(text) and (len(digits) > 1 or digits > "1"):
            out.append(f"{name}={text if len(text) <= 12 else text[:12] + '...'}")
    return out


def bisected(env: dict[str, str]) -> list[str]:
    """The variables of ENV that `--deep`'s bisection unsets one at a time: those the data knows, less those whose
    row says never (a scheduler's choice of GPUs)."""
    known = rows()
    # a launcher's count of processes alone (no row, no family) is weighed by the rules, never a setting to unset
    return [name for name in set_variables(env) if known.get(name, {}).get("bisect", True) and
            (name in known or family_of(name) is not None)]


def read_at_cuinit(env: dict[str, str]) -> list[str]:
    """The variables of ENV whose row says CUDA reads them in cuInit and may refuse to start over them (an injected
    tool's library, the MPS daemon's pipes): where one is set, cuInit itself is asked. A row's `read_at_cuinit =
    "outside_values"`: only where the value is none of the row's `values` (CUDA_DEVICE_ORDER=PCI_BUS: what CUDA
    makes of it, cuInit says; PCI_BUS_ID, set in many shells, costs no cuInit)."""
    return [row["variable"] for row in load("process_env").get("setting", [])  # early in check: not NCCL's table
            if row.get("read_at_cuinit") and row["variable"] in env
            and (row["read_at_cuinit"] is True or env[row["variable"]] not in row.get("values", ()))]


# the words said of a cache-dependent XLA flag ([[xla_path_flag]] cache_dependent) beside a warm JAX cache: the rules
# read them to keep --deep's failure of its own work a warning
CACHED_RESULTS = "the only results are those of the autotuning cache JAX keeps in "


def read_at_context(env: dict[str, str]) -> list[str]:
    """The variables of ENV of CUDA's own family (CUDA_*, less the toolkit's location and the images' labels) that
    the data cannot vouch for: no row of its own, or a value its row's grammar refuses; and those a row says CUDA
    reads as it makes a context (read_at_context: a user-triggered core dump's pipe), on. The driver reads some of its
    variables where it makes a context, not in cuInit (CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=250:
    every context refused on an H100), so where one is set the probe makes one (_probe_jobs.probe_cuda_context)."""
    known = rows()
    out = []
    for name in sorted(env):
        family = family_of(name)
        if family is None or family.get("framework") != "cuda":
            continue
        row = known.get(name)
        if row is None or (row.get("kind") in ("bool", "enum", "integer", "float") and grammar_problem(row, env[name])) \
                or (row.get("read_at_context") and env[name].strip() not in ("", "0")):
            out.append(name)
    return out[:16]


def context_retry_unset(env: dict[str, str], refused: tuple[str, ...] | list[str]) -> list[str]:
    """Where the first context was refused with REFUSED set (read_at_context's names): the variables to leave out of
    the child that makes it again. REFUSED, and every other setting of CUDA's own family but those choosing the GPU
    (their rows' chooses_gpu: the second context is made on the same GPU, through the same daemon): a row that vouches for one variable's value does not vouch for it beside another (round eighteen's
    published GPU set: CUDA_COREDUMP_PIPE, whose row holds a path, in a folder that does not exist beside
    CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1; made again without the switch alone the context was refused still, on an
    H100, and CUDA's refusal went unsaid). A GPU whose memory another process holds refuses it either way."""
    known = rows()
    others = [name for name in sorted(env) if name not in refused and not (known.get(name) or {}).get("chooses_gpu")
              and (family_of(name) or {}).get("framework") == "cuda"]
    return list(refused) + others


def reader(name: str) -> str | None:
    """Who reads NAME: its row's framework, else its family's."""
    row = rows().get(name)
    if row is not None:
        return str(row["framework"])
    family = family_of(name)
    return str(family["framework"]) if family else None


def cure_code(name: str) -> str:
    """The finding class of a `--deep` cure that unset NAME: its row's or family's cure_code; CUDA's, cuDNN's and
    cuBLAS's own settings CD416, the others CD411."""
    row = rows().get(name) or family_of(name) or {}
    if row.get("cure_code"):
        return str(row["cure_code"])
    return "CD416" if reader(name) in CUDA_LIBRARY_READERS else "CD411"


def truth(value: str) -> bool | None:
    """A boolean setting's value as its readers take words: True, False, or None where it is neither."""
    word = value.strip().lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None


def xla_path_flags() -> dict[str, dict[str, Any]]:
    """compat/process_env.toml [[xla_path_flag]]: the flags of XLA_FLAGS naming a file or folder XLA's GPU compiler
    reads or writes at the first compilation (or requiring another's results), by flag name."""
    return {row["flag"]: row for row in load("process_env").get("xla_path_flag", [])}


def pjrt_option_rows() -> dict[str, dict[str, Any]]:
    """compat/process_env.toml [[pjrt_option]]: the options JAX's CUDA plugin takes at PJRT_Client_Create, by name."""
    return {row["name"]: row for row in load("process_env").get("pjrt_option", [])}


def pjrt_entries(value: str) -> tuple[list[str], list[tuple[str, str]]]:
    """JAX_PJRT_CLIENT_CREATE_OPTIONS as the installed jax's _options_from_jax_configs splits it: nothing where it
    is empty, else each entry between ';' split at ':' and nothing stripped. The entries it refuses (not exactly two
    parts: no ':', two of them, or an empty entry after a last ';'), and the (key, text) pairs it passes on."""
    if not value:
        return [], []
    refused, pairs = [], []
    for entry in value.split(";"):
        parts = entry.split(":")
        if len(parts) != 2:
            refused.append(entry)
        else:
            pairs.append((parts[0], parts[1]))
    return refused, pairs


CONTENT = "its reader cannot parse it: "  # a path's problem that is its file's text, not the path (probes -> rules)
BLANKS = {"\r": "a carriage return (a CRLF file's line end)", "\n": "a line feed", "\t": "a tab", " ": "a space",
          "\xa0": "a no-break space", "\ufeff": "a byte-order mark"}


def shown_entry(entry: str) -> str:
    """An entry of a value as the user cannot see it: quoted with its escapes, and what the blank or control
    characters its reader keeps are ('cuda\\r' (with a carriage return ...))."""
    odd = [char for char in dict.fromkeys(entry) if char in BLANKS or not char.isprintable()]
    if not odd:
        return repr(entry)
    words = ", ".join(BLANKS.get(char, f"the {'blank' if char.isspace() else 'control character'} U+{ord(char):04X}")
                      for char in odd)
    return f"{entry!r} (with {words})"


def grammar_problem(row: dict[str, Any], value: str) -> str | None:
    """Why ROW's reader cannot use VALUE, in words; None where it can. For the kinds whose grammar is the row's own
    (bool, enum, integer, float, pattern, list); the others (paths, allocator settings, platforms, XLA flags) are
    judged where their facts are (the probe asks the path, the installed files). A regex is compiled by Python's own
    re, the reader's parser (only compiled, never run: no value is matched against it)."""
    kind = row["kind"]
    if len(value) > MAX_VALUE:  # no reader takes such a value, and a pattern is never run on it
        return f"a value of {len(value)} characters"
    values = [str(v) for v in row.get("values", [])]
    fold = (lambda text: text.lower()) if row.get("ignore_case") else (lambda text: text)
    if kind in ("bool", "enum"):
        if row.get("reader"):  # a reader of its own (NCCL's strtoll, its level names): as that code reads it
            return enum_reading(row, value)[1]
        if fold(value) in {fold(v) for v in values}:
            return None
        return f"{shown_entry(value)} is not one of {', '.join(values)}"
    if kind == "list":
        separator = row.get("separator", ",")
        reader = value_reader(row)
        wrong = [entry for entry in value.split(separator) if fold(trimmed(reader, entry)) not in
                 {fold(v) for v in values}]
        return f"{', '.join(shown_entry(w) for w in wrong)} {'is' if len(wrong) == 1 else 'are'} not among " \
               f"{', '.join(values)}" if wrong else None
    if kind == "pattern":
        flags = re.IGNORECASE if row.get("ignore_case") else 0
        return None if re.fullmatch(row["pattern"], trimmed(value_reader(row), value), flags) else \
            f"{shown_entry(value)} is not of the form it takes: {row['form']}"
    if kind == "regex":  # a regular expression its reader gives to Python's re (JAX's re.sub): re's own parser
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError) as error:
            return f"{shown_entry(value)} is not a regular expression to Python's re ({error})"
        return None
    if kind == "integer":
        number, problem = read_whole(value_reader(row), value)
        if problem or number is None:
            return problem
        return None if row.get("clipped") else _outside(row, number)
    if kind == "float" and "maximum" in row:  # a share with both bounds (the older rows judge their own)
        share, problem = read_float(value_reader(row), value)
        return problem if share is None else _outside(row, share)
    return None


def intended_value(row: dict[str, Any], value: str) -> str | None:
    """The one value of ROW's enum (its own grammar, no reader of its own) that VALUE was written for: the same in
    another letter case, or cut short at the end of one of its words (at least three characters, the start of one
    value alone); None where none or
    several fit. A cure that keeps what the user chose (CUDA_DEVICE_ORDER=pci_bus or PCI_BUS: PCI_BUS_ID, whose
    numbering CUDA_VISIBLE_DEVICES' indices follow) rather than the reader's default."""
    if row["kind"] != "enum" or row.get("reader"):
        return None
    given = value.strip().lower()
    values = [str(v) for v in row.get("values", [])]
    for fits in ([v for v in values if v.lower() == given],
                 [v for v in values if len(given) >= 3 and v.lower().startswith(given) and
                  v[len(given):len(given) + 1] in ("_", "-")]):  # cut at one of its words' ends
        if len(fits) == 1:
            return fits[0]
        if fits:
            return None
    return None


@functools.cache
def number_base0_pattern() -> re.Pattern[str]:
    # strtol's base 0, ASCII, whole
    return re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|[0-7]+|[1-9][0-9]*)")


@functools.cache
def number_base10_pattern() -> re.Pattern[str]:
    return re.compile(r"[+-]?[0-9]+")


def enum_reading(row: dict[str, Any], value: str) -> tuple[str | None, str | None]:
    """(the one of ROW's values its reader ([[value_reader]]) reads VALUE as, or None; why not, in NCCL's (or its
    reader's) own rule, or None): names first where the reader takes them (exactly, or in any case), then a number
    where it reads one (always, or only where the first character is a digit), an old level's number as its name. A
    number the reader reads as one of the values is that value, however it is written ('0x1', '01')."""
    reader = value_reader(row)
    values = [str(v) for v in row.get("values", [])]
    shown, who = shown_entry(value), reader["who"]
    names = reader.get("names", "none")
    named = trimmed(reader, value) if reader.get("names_trimmed") else value  # NCCL 2.30's parsers trim a name first
    if names == "exact" and named in values:
        return named, None
    if names == "any-case":
        found = next((v for v in values if v.lower() == named.lower()), None)
        if found is not None:
            return found, None
    numbers = reader.get("numbers", "always")
    listed = ", ".join(values)
    unread = f": {reader['on_unread']}" if reader.get("on_unread") else ""
    if numbers == "never":
        return None, f"{shown} is not one of {listed} to {who} ({'in any case' if names == 'any-case' else 'as written'}" \
                     f", no number){unread}"
    if numbers == "first-digit" and value[:1] not in tuple("0123456789"):
        return None, f"{shown} is neither one of {listed} (exactly as written) nor a number to {who} (its first " \
                     f"character a digit 0-9){unread}"
    number, words = read_whole(reader, value)
    if number is None:
        return None, f"{words}{unread}"
    # a number written as the reader writes numbers (0x40, 010 under base 0) is that number, never a problem; text
    # after it, or no number at all, is read otherwise than written: said, with what it is read as
    written = number_base0_pattern() if reader["base"] == 0 else number_base10_pattern()
    otherwise = None if written.fullmatch(trimmed(reader, value)) else words
    levels = reader.get("old_levels")
    if levels and number >= 0:
        return levels[min(number, len(levels) - 1)], otherwise
    if str(number) in values:
        return str(number), otherwise
    on_when = row.get("on_when")  # a flag NCCL tests as a number: `if (param)`, `param == 1`, or `param >= 0 ? param`
    if on_when == "positive":
        return ("1" if number > 0 else "0"), otherwise
    if on_when == "nonzero":
        return "1" if number else "0", otherwise
    if on_when == "one":
        return "0", f"{words or f'{shown} is read as {number} by {who}'}, and NCCL acts on 1 alone: it is as 0"
    said = words or f"{shown} is read as {number} by {who}"
    return None, f"{said}, not one of {listed}{unread}"


def names_problem(row: dict[str, Any], value: str) -> str | None:
    """Why ROW's list reader (NCCL's parseList: NCCL_PROTO, NCCL_ALGO) refuses VALUE, in its own words; None where it
    takes it. Entries at ';' (empty ones skipped, as strtok_r does), each 'PREFIX:' (any case; all but one that
    starts the value must have one: parseList compares the token's address with the string's), an optional '^', then
    names at ',' in any case."""
    reader = value_reader(row)
    values = [str(v).lower() for v in row.get("values", [])]
    prefixes = [p.lower() for p in reader.get("prefixes", [])]
    unread = f": {reader['on_unread']}" if reader.get("on_unread") else ""
    at = 0
    for entry in value.split(";"):
        first, at = at == 0, at + len(entry) + 1  # strtok_r's first token is 'first' only where it starts the value
        if not entry:
            continue
        pieces = [piece for piece in entry.split(":") if piece]
        if not pieces:
            return f"{shown_entry(entry)} holds no list (NCCL's parseList reads a null pointer there){unread}"
        prefix, names = (pieces[0], pieces[1]) if len(pieces) > 1 else (None, pieces[0])
        if prefix is None and not first:
            return f"{shown_entry(entry)}: every entry but the first must have a prefix ({', '.join(reader['prefixes'])}" \
                   f"){unread}"
        if prefix is not None and prefix.lower() not in prefixes:
            return f"{shown_entry(prefix)} is not a prefix {reader['who']} knows ({', '.join(reader['prefixes'])})" \
                   f"{unread}"
        for name in (part for part in names.removeprefix("^").split(",") if part):
            if name.lower() not in values:
                return f"{shown_entry(name)} is not one of {', '.join(str(v) for v in row['values'])} to " \
                       f"{reader['who']} (names in any case; no number){unread}"
    return None


def bitset_problem(row: dict[str, Any], value: str) -> str | None:
    """Why ROW's bitset reader (NCCL 2.30's ncclParamBitsetOf: NCCL_DEBUG_SUBSYS) refuses VALUE, in its own words;
    None where it takes it. Its `invert` only as the value's first character (for the whole list), entries at its
    `separator`, each trimmed of C's blanks and compared in any case, an empty one skipped: one unknown entry refuses
    the whole value (NCCL then keeps its default)."""
    reader = value_reader(row)
    invert, separator = reader.get("invert", ""), reader.get("separator", ",")
    body = value[len(invert):] if invert and value.startswith(invert) else value
    values = [str(v) for v in row.get("values", [])]
    unread = f": {reader['on_unread']}" if reader.get("on_unread") else ""
    for entry in body.split(separator):
        name = trimmed(reader, entry)
        if name and name.lower() not in (v.lower() for v in values):
            where = f" ('{invert}' leaves out the whole list, and only as the value's first character)" \
                if invert and invert in name else ""
            return f"{shown_entry(name)} is not one of {', '.join(values)} to {reader['who']} (names in any case, at " \
                   f"'{separator}'){where}, so it refuses the whole value{unread}"
    return None


@record(frozen=True)
class InterfaceList:
    """A list of interfaces (NCCL_SOCKET_IFNAME, NCCL_IB_HCA) as NCCL reads it: whether it leaves out what it names,
    whether it names exactly, its entries' names (with a port, for IB), and why NCCL does not read it as the user's
    list at all (too short: NCCL picks by itself), else None."""

    exclude: bool
    exact: bool
    names: tuple[str, ...]
    ports: tuple[int | None, ...]
    unread: str | None = None

    def keeps(self, name: str, port: int | None = None) -> bool:
        """Whether NCCL keeps the interface NAME (of PORT, an adapter's: matchIfList ^ searchNot, an entry's port
        matching any where it names none, or where PORT is not known): no entry at all matches every name."""
        if self.unread is not None:
            return True
        matched = not self.names or any(
            (name == entry if self.exact else name.startswith(entry)) and (port is None or wanted in (None, port))
            for entry, wanted in zip(self.names, self.ports, strict=True))
        return matched != self.exclude


def interface_list(row: dict[str, Any], value: str) -> InterfaceList:
    """VALUE of ROW (an NCCL interface list) read by its reader ([[value_reader]] nccl-interfaces): its `invert`
    first, then its `exact`, each for the whole list and only in that order; entries at `separator`, each cut at its
    first `port_separator`, one with an empty name skipped, each name cut to `prefix_bytes` bytes, at most the row's
    `max_entries`; a value shorter than the row's `min_length` is not the user's list."""
    reader = value_reader(row)
    if len(value.encode("utf-8", "surrogateescape")) < row.get("min_length", 0):
        return InterfaceList(False, False, (), (), unread=(
            f"{reader['who']} reads only a value of {row['min_length']} characters or more as the user's list: NCCL "
            "picks its interfaces by itself"))
    exclude = bool(reader.get("invert")) and value.startswith(reader["invert"])
    rest = value[len(reader["invert"]):] if exclude else value
    exact = bool(reader.get("exact")) and rest.startswith(reader["exact"])
    rest = rest[len(reader["exact"]):] if exact else rest
    names: list[str] = []
    ports: list[int | None] = []
    keep = reader.get("prefix_bytes", 1 << 20)
    for entry in rest.split(reader.get("separator", ",")):
        name, _colon, port = entry.partition(reader.get("port_separator", ":"))
        if not name:
            continue
        if len(names) >= row.get("max_entries", 1 << 20):
            break
        names.append(name.encode("utf-8", "surrogateescape")[:keep].decode("utf-8", "ignore"))
        digits = re.match(r"[ \t]*[+-]?[0-9]+", port.split(reader.get("port_separator", ":"))[0])
        ports.append(int(digits.group()) if digits else None)
    return InterfaceList(exclude, exact, tuple(names), tuple(ports))


C_BLANKS = " \t\n\v\f\r"  # C's isspace() in the C locale


@functools.cache
def decimal_pattern() -> re.Pattern[str]:
    # strtod's decimal form, ASCII only
    return re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def value_reader(row: dict[str, Any]) -> dict[str, Any]:
    """compat/process_env.toml [[value_reader]]: the grammar ROW's reader parses a number with (its `reader`, else
    the row marked default)."""
    readers = load("process_env").get("value_reader", [])
    name = row.get("reader")
    return next(r for r in readers if (r["name"] == name if name else r.get("default")))


def _blank(kind: str) -> Any:
    return {"none": lambda char: False, "c": lambda char: char in C_BLANKS, "unicode": str.isspace}[kind]


def trimmed(reader: dict[str, Any], value: str) -> str:
    """VALUE less the blanks READER skips before it and allows after it (none, C's, or Python's Unicode ones)."""
    lead, trail = _blank(reader["leading"]), _blank(reader["trailing"])
    start, end = 0, len(value)
    while start < end and lead(value[start]):
        start += 1
    while end > start and trail(value[end - 1]):
        end -= 1
    return value[start:end]


def read_whole(reader: dict[str, Any], value: str) -> tuple[int | None, str | None]:
    """(the whole number READER reads from VALUE, or None where it refuses it; why it does not read VALUE as
    written, in words, or None), as that reader's code parses it: its blanks, its digits (ASCII, or any Unicode
    decimal digit for Python's int()), '_' between digits, strtol's base 0 (0x, a leading 0 octal), what it does
    with the rest and with no number at all, and the integer it holds the number in."""
    shown, who = shown_entry(value), reader["who"]
    lead = _blank(reader["leading"])
    at, end = 0, len(value)
    while at < end and lead(value[at]):
        at += 1
    sign = -1 if value[at:at + 1] == "-" else 1
    at += value[at:at + 1] in ("+", "-")
    base = 10
    if reader["base"] == 0 and value[at:at + 2].lower() == "0x" and value[at + 2:at + 3] and \
            value[at + 2] in "0123456789abcdefABCDEF":
        base, at = 16, at + 2
    elif reader["base"] == 0 and value[at:at + 1] == "0":
        base = 8
    allowed = {16: "0123456789abcdefABCDEF", 8: "01234567", 10: "0123456789"}[base]

    def digit(char: str) -> bool:
        return char in allowed or (base == 10 and reader["digits"] == "unicode" and char.isdecimal())

    digits: list[str] = []
    while at < end and (digit(value[at]) or (reader["underscores"] and value[at] == "_" and digits and
                                             at + 1 < end and digit(value[at + 1]))):
        if value[at] != "_":
            digits.append(str(int(value[at], 16)) if base == 16 else value[at] if base == 8 else
                          str(unicodedata.decimal(value[at])))
        at += 1
    if not digits:
        if reader["no_digits"] == "zero":
            return 0, f"{shown} holds no number: {who} reads it as 0, without a word"
        return None, f"{shown} is not a whole number to {who}"
    rest = trimmed({"leading": reader["trailing"], "trailing": "none"}, value[at:])
    if rest and reader["rest"] == "refused":
        return None, f"{shown} is not a whole number to {who}"
    number = sign * _digits_value(digits, base)
    bits = reader["bits"]
    if bits and not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        return None, f"{shown} is beyond the {bits}-bit number {who} holds it in"
    if rest:
        return number, f"{shown} is read as {number} by {who}, which stops at {rest[:20]!r}"
    if base == 8 and number:
        return number, f"{shown} is read as {number} by {who}: a leading 0 makes it octal"
    return number, None


def _digits_value(digits: list[str], base: int) -> int:
    """The number DIGITS (0-9 each, of BASE) make; one of more than 40 digits is taken as 10**40, beyond every
    integer a C reader holds and every bound (Python's own int() stops at 4,300 digits)."""
    text = "".join(digits).lstrip("0") or "0"
    if len(text) > 40:
        return 10 ** 40
    return int(text, base)


def read_float(reader: dict[str, Any], value: str) -> tuple[float | None, str | None]:
    """(the number READER reads from VALUE, or None; why not, in words): Python's float() for a reader of Unicode
    digits, else strtod's decimal form in ASCII (no 'inf', 'nan', '1_0' or other digits)."""
    shown = shown_entry(value)
    if reader["digits"] == "unicode":
        try:
            number = float(value)
        except ValueError:
            return None, f"{shown} is not a number"
    else:
        text = trimmed(reader, value)
        if not decimal_pattern().fullmatch(text):
            return None, f"{shown} is not a number to {reader['who']}"
        number = float(text)
    return (number, None) if math.isfinite(number) else (None, f"{shown} is not a number")


def _outside(row: dict[str, Any], number: float) -> str | None:
    low, high = row.get("minimum"), row.get("maximum")
    if low is not None and number < low:
        return f"{number:g} is below {low:g}" + (f" (it takes {low:g} to {high:g})" if high is not None else "")
    if high is not None and number > high:
        return f"{number:g} is above {high:g}" + (f" (it takes {low:g} to {high:g})" if low is not None else "")
    return None


BEYOND = 10 ** 18  # a rank this large is no rank (and an int() of more digits than Python takes)


def slow(row: dict[str, Any], value: str) -> bool:
    """Does VALUE turn on what ROW's slow_when names (a boolean in any of its spellings, an integer clipped)?"""
    when = row.get("slow_when")
    if when is None:
        return False
    if row["kind"] == "bool":
        return truth(value) is not None and truth(value) == truth(str(when))
    read = read_whole(value_reader(row), value)[0] if row["kind"] == "integer" else None
    if read is not None:
        number = read
        if row.get("clipped"):
            number = max(int(row.get("minimum", number)), min(int(row.get("maximum", number)), number))
        return str(number) == str(when)
    if isinstance(when, list):  # an enum's values that each turn it on (JAX_PLATFORM_NAME=cpu, tpu, rocm)
        return (value.strip().lower() if row.get("ignore_case") else value) in when
    return bool(value == when)


def fails(row: dict[str, Any], value: str) -> bool:
    """Does VALUE turn on what ROW's fails_when names (a value its reader takes, that makes a program's ordinary
    steps raise: JAX_TRANSFER_GUARD=disallow and a result read back)?"""
    when = row.get("fails_when")
    if not when:
        return False
    word = value.strip().lower() if row.get("ignore_case") else value.strip()
    return word in [str(w).lower() if row.get("ignore_case") else str(w) for w in when]


def oversubscribed(row: dict[str, Any], settings: dict[str, str]) -> str | None:
    """The variable that lets ROW's share exceed the whole GPU on purpose (row oversubscribed_by: XLA's unified
    memory, TF_FORCE_UNIFIED_MEMORY), where SETTINGS turn it on; None otherwise."""
    name = row.get("oversubscribed_by")
    return str(name) if name and truth(settings.get(str(name), "")) else None


def ignored(row: dict[str, Any], settings: dict[str, str]) -> str | None:
    """The NAME=value of ROW's ignored_when that SETTINGS hold (its reader then does not use ROW's variable), or None."""
    for pair in row.get("ignored_when", ()):
        name, _, value = str(pair).partition("=")
        if settings.get(name, "").strip().lower() == value.lower():
            return str(pair)
    return None


def relation_problem(row: dict[str, Any], value: str, settings: dict[str, str], gpus: int | None) -> str | None:
    """Why the whole number VALUE of ROW does not fit what it must stay below (row below: another variable that is
    set, as a launcher's RANK below WORLD_SIZE; row below_gpus: the GPUs a program here sees, as LOCAL_RANK picks
    one of them), in words; None where it fits or nothing says."""
    reader = value_reader(row)
    number = read_whole(reader, value)[0]
    if number is None or abs(number) >= BEYOND:  # no rank (and past int()'s digit limit)
        return None
    other = row.get("below")
    bound = read_whole(value_reader(rows().get(str(other), row)), settings[str(other)])[0] \
        if other and str(other) in settings else None
    if bound is not None and abs(bound) < BEYOND:
        if number >= bound:
            return f"{number} is not below {other}={bound} (it counts from 0)"
    if row.get("below_gpus") and gpus is not None and number >= gpus:
        return (f"{number} is not below the {gpus} GPU{'s' if gpus != 1 else ''} a program started here sees "
                f"(cuda:{number} does not exist)")
    return None


def allocator_items(value: str) -> list[str]:
    """The top-level key:value items of an allocator configuration (PYTORCH_CUDA_ALLOC_CONF), as c10's
    ConfigTokenizer splits them: at commas outside a [..] list, which holds commas of its own. Each item keeps its
    text as written; allocator_tokens drops its white space as the tokenizer does ('max_split _size_mb' is the key
    'max_split_size_mb')."""
    items, depth, current = [], 0, ""
    for char in value:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return [item.strip(C_SPACE) for item in items if item.strip(C_SPACE)]


C_SPACE = " \t\n\v\f\r"


def allocator_tokens(item: str) -> list[str]:
    """ITEM split as c10's ConfigTokenizer splits (c10/core/AllocatorConfig.h): each of , : [ ] a token of its own,
    the text between them another, white space dropped."""
    tokens, buffer = [], ""
    for char in item:
        if char in ",:[]":
            if buffer:
                tokens.append(buffer)
                buffer = ""
            tokens.append(char)
        elif char not in C_SPACE:
            buffer += char
    return tokens + ([buffer] if buffer else [])


ULL_MAX = 2**64 - 1


def c_stoull(text: str) -> tuple[int | None, str]:
    """std::stoull(TEXT) (base 10, glibc's strtoull): an optional sign, then the longest run of digits; what follows
    is ignored ('512MB' is 512, '1e3' is 1), a '-' negates modulo 2**64 ('-1' is 18446744073709551615). None and
    the exception where it throws: no digit (std::invalid_argument), beyond 2**64-1 (std::out_of_range)."""
    match = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", text)
    if match is None:
        return None, "std::invalid_argument: stoull"
    digits = match.group(2).lstrip("0") or "0"
    if len(digits) > len(str(ULL_MAX)):  # beyond 2**64-1 whatever the digits: never int() of thousands of them
        return None, "std::out_of_range: stoull"  # (Python refuses past 4,300 digits: a ValueError, not stoull's)
    number = int(digits)
    if number > ULL_MAX:
        return None, "std::out_of_range: stoull"
    return ((-number) % 2**64 if match.group(1) == "-" else number), ""


@functools.cache
def _stod_pattern() -> re.Pattern[str]:
    return re.compile(r"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                      r"(?:[pP][+-]?[0-9]+)?)|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                      r"|(?P<inf>[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)|(?P<nan>[nN][aA][nN](?:\([0-9A-Za-z_]*\))?))")


SMALLEST_NORMAL = 2.2250738585072014e-308


def c_stod(text: str) -> tuple[float | None, str]:
    """std::stod(TEXT) (glibc's strtod in the C locale): the longest prefix that is a decimal or hexadecimal
    number, inf, infinity or nan; what follows is ignored ('0.5abc' is 0.5). None and the exception where it
    throws: no number (std::invalid_argument), or one beyond a double's range, too large or too small
    (ERANGE: std::out_of_range)."""
    match = _stod_pattern().match(text)
    if match is None:
        return None, "std::invalid_argument: stod"
    sign = -1.0 if match.group("sign") == "-" else 1.0
    if match.group("inf"):
        return sign * math.inf, ""
    if match.group("nan"):
        return math.nan, ""
    hexadecimal = match.group("hex")
    body = hexadecimal or match.group("dec")
    try:
        number = float.fromhex(body) if hexadecimal else float(body)
    except (OverflowError, ValueError):
        return None, "std::out_of_range: stod"
    digits = re.sub(r"[pP].*$", "", body[2:]) if hexadecimal else re.sub(r"[eE].*$", "", body)
    if math.isinf(number) or (0 < abs(number) < SMALLEST_NORMAL) or (number == 0 and digits.strip("0.")):
        return None, "std::out_of_range: stod"
    return sign * number, ""
