"""The doctor's `CUDNN_DOCTOR_*` variables, read and checked one way: a value that is set but not what the variable
takes (`abc`, `nan`, `inf`, a negative number of seconds, a word not in its list) is a usage error, one line with
the variable's name and what it takes, exit 2, before the command does anything. Unset or blank: the default.

`check_all()` runs in the guard of every command (runner.guarded); each reader uses the same functions, so a
value is never read differently from where it was checked. Settings of `check` (SELECT, IGNORE, STRICT, REQUIRE,
FORMAT) are checked with the project file's keys in settings.py."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping

from cudnn_doctor.errors import DoctorError

# name -> (lowest, highest, an example): a number of seconds (or a factor) in that closed range
NUMBERS: dict[str, tuple[float, float, str]] = {
    "CUDNN_DOCTOR_PROBE_TIMEOUT": (0.001, 1e6, "20"),
    "CUDNN_DOCTOR_HELPER_TIMEOUT": (0.001, 1e6, "10"),
    "CUDNN_DOCTOR_DEEP_TIMEOUT": (0.001, 1e6, "60"),
    "CUDNN_DOCTOR_ALLREDUCE_TIMEOUT": (0.001, 1e6, "60"),
    "CUDNN_DOCTOR_BENCH_TIMEOUT": (0.001, 1e6, "600"),
    "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": (0.1, 1e7, "3600"),
    "CUDNN_DOCTOR_RETRY_BACKOFF": (0.0, 60.0, "0.5"),
    "CUDNN_DOCTOR_READ_TIMEOUT": (0.01, 1e6, "60"),
    "CUDNN_DOCTOR_IMAGE_TIMEOUT": (0.001, 1e6, "30"),
    "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES": (1, float(1 << 60), "68719476736"),
}
DECIMAL = r"\+?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"  # ASCII: re's [0-9] is no \d
CHOICES: dict[str, tuple[str, ...]] = {
    "CUDNN_DOCTOR_CPU_BASELINE": ("auto", "numpy", "compiled"),
}


def _set(name: str, environ: dict[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return value if value is not None and value.strip() else None


def number(name: str, default: float, environ: dict[str, str] | None = None) -> float:
    """NAME's value as a finite number in its range, DEFAULT when unset; DoctorError (exit 2) otherwise."""
    value = _set(name, environ)
    if value is None:
        return default
    low, high, example = NUMBERS[name]
    if not value.strip().isascii():  # float() reads '३' and '٣' as 3; nothing else that reads the value would
        raise DoctorError(f"{name}={value!r}: not a number written with the digits 0-9",
                          fix=f"set it like {name}={example}, or unset it for the default", exit_code=2, code="CD007")
    import re

    # a decimal number as a user writes one (20, 0.5, 1e3): float() would also take '1_000', which no one means
    read = float(value.strip()) if re.fullmatch(DECIMAL, value.strip()) else math.nan
    if not math.isfinite(read) or not low <= read <= high:
        raise DoctorError(f"{name}={value!r}: not a number from {low:g} to {high:g}",
                          fix=f"set it like {name}={example}, or unset it for the default", exit_code=2, code="CD007")
    return read


def choice(name: str, default: str, environ: dict[str, str] | None = None) -> str:
    """NAME's value, one of its words (any case), DEFAULT when unset; DoctorError (exit 2) otherwise."""
    value = _set(name, environ)
    if value is None:
        return default
    if value.strip().lower() not in CHOICES[name]:
        raise DoctorError(f"{name}={value!r}: not one of {', '.join(CHOICES[name])}",
                          fix=f"set it like {name}={CHOICES[name][0]}, or unset it", exit_code=2, code="CD007")
    return value.strip().lower()


CACHE_VARIABLE = "CUDNN_DOCTOR_CACHE_DIR"


def home_folder(environ: dict[str, str] | None = None) -> str | None:
    """The user's home: HOME where it is an absolute path, else the password database's folder for this user (where
    Python's expanduser looks when HOME is unset); None where neither is. An empty HOME is not / and a relative one
    not the working folder: a cache, a prefix or a completion file put there would land in the wrong place."""
    env = os.environ if environ is None else environ
    home = env.get("HOME", "")
    if home.strip() and os.path.isabs(home):
        return home
    if os.name != "posix":
        found = os.path.expanduser("~")  # USERPROFILE, HOMEDRIVE and HOMEPATH on Windows
        return found if os.path.isabs(found) else None
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return None
    return entry if entry and os.path.isabs(entry) else None


def expand_user(path: str) -> str:
    """PATH with a leading ~ or ~/ read as home_folder() (so an empty HOME makes '~/x' no '/x', a relative one no path
    below the working folder); ~USER as Python's expanduser reads it."""
    if path == "~" or path.startswith("~/"):
        home = home_folder()
        if home is None:
            return path
        return home if path == "~" else os.path.join(home, path[2:])
    return os.path.expanduser(path)


def cache_override(environ: dict[str, str] | None = None) -> str | None:
    """CUDNN_DOCTOR_CACHE_DIR as a folder, None when unset or blank: a leading ~/ is the home folder (a value quoted
    where no shell expands it); a relative path (each working folder a cache of its own) or a path to something other
    than a folder (a file, a FIFO, /dev/null) is a usage error, named with the fix."""
    value = _set(CACHE_VARIABLE, environ)
    if value is None:
        return None
    fix = f"set it to a folder's absolute path, like {CACHE_VARIABLE}=$HOME/.cache/cudnn-doctor, or unset it"
    folder = value
    if value == "~" or value.startswith("~/"):
        home = home_folder(environ)
        if home is None:
            raise DoctorError(f"{CACHE_VARIABLE}={value!r}: ~ is the home folder, and HOME is not an absolute path",
                              fix=fix, exit_code=2, code="CD007")
        folder = home + value[1:]
    if not os.path.isabs(folder):
        raise DoctorError(f"{CACHE_VARIABLE}={value!r}: not an absolute path (each working folder would get a cache "
                          "of its own)", fix=fix, exit_code=2, code="CD007")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise DoctorError(f"{CACHE_VARIABLE}={value!r}: not a folder (a file, a FIFO or a device is there)", fix=fix,
                          exit_code=2, code="CD007")
    return folder


def check_all(environ: dict[str, str] | None = None) -> None:
    """Every variable of NUMBERS and CHOICES that is set, and the cache folder, checked: the first wrong one is a
    usage error."""
    for name, (low, _high, _example) in NUMBERS.items():
        number(name, low, environ)
    for name, words in CHOICES.items():
        choice(name, words[0], environ)
    cache_override(environ)


LOADER_LIST_SEPARATORS = ":;"  # glibc's ld.so splits LD_LIBRARY_PATH at both (elf/dl-load.c: fillin_rpath's ":;")


def loader_folders(value: str, expanded: bool = False, origin: str | None = None,
                   platform: str | None = None) -> list[str]:
    """LD_LIBRARY_PATH's folders as glibc's ld.so reads them: split at ':' and at ';', an empty entry the working
    folder (''), in order. Every reader of the variable goes through here, so a folder named a;b is two for it too.
    EXPANDED: the folders ld.so searches, its tokens $ORIGIN, $LIB and $PLATFORM (or ${...}) replaced as it replaces
    them (ORIGIN: the program's folder, this interpreter's by default); an entry whose $ORIGIN cannot be known is
    dropped, as ld.so drops it; PLATFORM: what ld.so puts for $PLATFORM (probes/hwcaps.loader_platform asks it).
    Not expanded: the entries as written, which is what a line that edits them names."""
    import re

    entries = re.split(f"[{LOADER_LIST_SEPARATORS}]", value) if value else []
    if not expanded:
        return entries
    out = []
    for entry in entries:
        folder = expand_loader_tokens(entry, origin, platform)
        if folder is not None:
            out.append(folder)
    return out


# ld.so's dynamic string tokens (ld.so(8), "Dynamic string tokens"; glibc elf/dl-load.c is_dst: the bare name ends
# where an identifier would, ${NAME} at its brace); any other $ stays as written
_LOADER_TOKEN = r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))"


def expand_loader_tokens(entry: str, origin: str | None = None, platform: str | None = None) -> str | None:
    """ENTRY (of LD_LIBRARY_PATH, LD_PRELOAD, a RUNPATH) with ld.so's tokens replaced: $ORIGIN by ORIGIN (default: the
    folder of this interpreter's real file, as ld.so takes the program's from /proc/self/exe), $LIB by the folder the
    loader took libc from (lib/x86_64-linux-gnu on Debian, lib64 on Fedora), $PLATFORM by PLATFORM, what ld.so
    itself says it is (probes/hwcaps.loader_platform: glibc before 2.37 says "haswell" or "xeon_phi" on an Intel
    CPU with AVX2 or AVX-512, not "x86_64"); without it, the machine's name (x86_64), which is ld.so's elsewhere."""
    if "$" not in entry:
        return entry
    import re

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "ORIGIN":
            import sys

            if origin is not None:
                return origin
            # the program's own file, as ld.so has it: sys.executable is PYTHONEXECUTABLE's path where that is set
            running = "/proc/self/exe" if os.path.exists("/proc/self/exe") else sys.executable
            return os.path.dirname(os.path.realpath(running))
        return loader_lib_token() if name == "LIB" else platform or os.uname().machine
    return re.sub(_LOADER_TOKEN, value, entry)


def loader_lib_token() -> str:
    """What ld.so puts for $LIB: the folder (below / or /usr) it loaded this process's libc from, asked of the process's
    own map; where that cannot be read, the multiarch folder if it exists, else lib64, else lib."""
    global _LIB_TOKEN
    if _LIB_TOKEN is None:
        _LIB_TOKEN = _read_lib_token()
    return _LIB_TOKEN


_LIB_TOKEN: str | None = None


def mapped_here() -> tuple[str, ...]:
    """The files mapped into this process, in /proc/self/maps' order, each once (bytes-safe; () where it cannot be
    read): the libc, the ld.so and the libraries the loader found for this very process. Read each time: a library
    loaded since is there (callers keep what they need). The one reader: _proc_maps."""
    from cudnn_doctor._proc_maps import mapped_files

    return tuple(mapped_files())


def _read_lib_token() -> str:
    for path in mapped_here():
        if os.path.basename(path).startswith("libc.so."):
            folder = os.path.dirname(path)
            folder = folder[len("/usr"):] if folder.startswith("/usr/") else folder
            return folder.lstrip("/") or "lib"
    machine = os.uname().machine
    for candidate in (f"lib/{machine}-linux-gnu", "lib64"):
        if os.path.isdir(os.path.join("/", candidate)):
            return candidate
    return "lib"


def split_preload(value: str) -> list[str]:
    """LD_PRELOAD's VALUE split as ld.so splits it: at colons and spaces only (glibc's rtld, preload_sep " :"); a tab
    or a newline is part of a name. Tokens left as written."""
    import re

    return [part for part in re.split(r"[: ]+", value) if part]


def preload_entries(env: dict[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD's entries as ld.so splits them (split_preload), its tokens ($ORIGIN, $LIB, $PLATFORM) expanded as
    ld.so expands them; an entry whose $ORIGIN cannot be known is left out, as ld.so leaves it."""
    parts = (expand_loader_tokens(part) for part in split_preload(env.get("LD_PRELOAD", "")))
    return tuple(part for part in parts if part)


XLA_WHITE_SPACE = " \t\r\n"  # XLA's only white space in XLA_FLAGS (parse_flags_from_env.cc kWS)


def xla_flag_values(value: str) -> list[tuple[str, str, str | None]]:
    """XLA_FLAGS (VALUE) split as XLA splits it (openxla/xla xla/parse_flags_from_env.cc, ParseArgvFromString): at
    its white space only (space, tab, CR, newline: not a vertical tab, not a no-break space), a value in double or
    single quotes taken whole (a backslash escaping the next character inside double quotes), and nothing read after
    the first entry that does not begin with '-' (XLA stops there: what follows has no effect); a value that does not
    begin with '-' is a file's name, not flags. [(name, the entry as written, its value or None)] for each entry that
    begins with '--'."""
    found: list[tuple[str, str, str | None]] = []
    at, end = _skip_white(value, 0), len(value)
    while at < end and value[at] == "-":
        name_end = at
        while name_end < end and value[name_end].isascii() and (value[name_end] in "-_" or value[name_end].isalnum()):
            name_end += 1
        flag: str | None
        if name_end + 1 < end and value[name_end] == "=" and value[name_end + 1] in "'\"":
            quote, stop, kept = value[name_end + 1], name_end + 2, []
            while stop < end and value[stop] != quote:
                if quote == '"' and value[stop] == "\\" and stop + 1 < end:
                    stop += 1
                kept.append(value[stop])
                stop += 1
            stop = min(stop + 1, end)  # past the closing quote, where there is one
            written, flag = value[at:stop], value[at:name_end + 1] + "".join(kept)
        else:
            stop = name_end
            while stop < end and value[stop] not in XLA_WHITE_SPACE:
                stop += 1
            written = flag = value[at:stop]
        if flag.startswith("--"):
            name, equals, given = flag[2:].partition("=")
            found.append((name, written, given if equals else None))
        at = _skip_white(value, stop)
    return found


def _skip_white(value: str, at: int) -> int:
    while at < len(value) and value[at] in XLA_WHITE_SPACE:
        at += 1
    return at


# --- the working folder's paths, for a child that starts elsewhere -----------------------------------------------
# Every child starts from a neutral folder ("/", child.NEUTRAL_CWD). A variable whose value its reader resolves against
# the working folder of the process that reads it names, in the child, another file than in a program started here:
# LD_PRELOAD=lib/libcuda.so.1 preloaded nothing, TMPDIR=tmp was /tmp, PYTHONPATH=src put /src on sys.path.
# child_environment makes each such value absolute (an absolute value, one that starts with '~' (a reader that expands
# it takes the home, wherever it runs) or an empty one is left as written). Which variables: the frameworks' and CUDA
# libraries' settings whose data row says kind = "path" (a file or folder its reader opens: the kernel takes a relative
# one from the working folder, openat(2) with AT_FDCWD) or "xla_flags" (compat/process_env.toml; knowledge.environment
# .working_folder_paths, given to read_paths_from by the command's guard), and these, which are no framework's setting:
# the loader's, the shell's and Python's own. How each is read:
#   "loader list": LD_LIBRARY_PATH's folders (loader_folders: ':' and ';', an empty entry the working folder),
#       ld.so's $ORIGIN left for the child's own loader
#   "preload": split_preload's entries; one with a '/' is a path, one without a name the loader searches for
#   "search list": entries at os.pathsep, an empty one the working folder
#   "path": one file or folder; LOG_WORDS the reader takes as no path (CUDNN_LOGDEST_DBG=stderr)
#   "xla flags": XLA_FLAGS' path-valued flags (XLA_PATH_FLAGS), or the file of flags a value that does not begin
#       with '-' names
WORKING_FOLDER_VARIABLES: dict[str, tuple[str, str]] = {
    "LD_LIBRARY_PATH": ("loader list", "ld.so(8) LD_LIBRARY_PATH; glibc elf/dl-load.c fillin_rpath: an empty entry is "
                                       "the working folder, a relative one opened as written"),
    "LD_PRELOAD": ("preload", "ld.so(8) LD_PRELOAD: a name with a slash is opened as a path; glibc elf/rtld.c "
                              "do_preload -> _dl_map_object"),
    "LD_AUDIT": ("preload", "ld.so(8) LD_AUDIT; glibc elf/rtld.c process_envvars: its entries opened as LD_PRELOAD's"),
    "LD_DEBUG_OUTPUT": ("path", "ld.so(8) LD_DEBUG_OUTPUT: the file LD_DEBUG's output goes to (glibc elf/rtld.c "
                                "process_envvars: open(2) of NAME.PID)"),
    "LD_PROFILE_OUTPUT": ("path", "ld.so(8) LD_PROFILE_OUTPUT: the folder of LD_PROFILE's output (glibc "
                                  "elf/dl-profile.c: open(2) of FOLDER/NAME.profile)"),
    "PATH": ("search list", "execvp(3), POSIX exec: an empty entry (or '.') is the working folder; CPython "
                            "Lib/shutil.py which and Lib/os.py get_exec_path read it the same"),
    "PYTHONPATH": ("search list", "CPython Modules/getpath.py: each entry through abspath() at start, '' the working "
                                  "folder (seen: PYTHONPATH=src:: puts $PWD/src and $PWD on sys.path)"),
    "TEMP": ("path", "CPython Lib/tempfile.py _candidate_tempdir_list: TMPDIR, TEMP, TMP in turn, each through "
                     "abspath() (_get_default_tempdir)"),
    "HOME": ("path", "CPython Lib/posixpath.py expanduser: HOME as written ('~/.cache/torch' under HOME=home is "
                     "home/.cache/torch, read from the working folder); the doctor's own folders never take a "
                     "relative HOME (home_folder)"),
    "XDG_CACHE_HOME": ("path", "pytorch torch/hub.py _get_torch_home: os.path.join(XDG_CACHE_HOME, 'torch') as "
                               "written (the XDG spec says a relative one is ignored; torch does not ignore it)"),
}
_DATA_PATHS: list[Callable[[], Mapping[str, str]]] = []  # read_paths_from's source, asked once


def read_paths_from(source: Callable[[], Mapping[str, str]]) -> None:
    """SOURCE (knowledge.environment.working_folder_paths): the data's variables whose value names a path, and how
    each is read ("path", "xla flags"), asked the first time a child's environment is made."""
    global _KINDS
    _DATA_PATHS[:] = [source]
    _KINDS = None


_KINDS: dict[str, str] | None = None


def working_folder_kinds() -> dict[str, str]:
    """Every variable child_environment reads -> how: WORKING_FOLDER_VARIABLES', then the data's (read_paths_from)."""
    global _KINDS
    if _KINDS is None:
        found = {name: kind for name, (kind, _source) in WORKING_FOLDER_VARIABLES.items()}
        for source in _DATA_PATHS:
            try:
                found.update({name: kind for name, kind in source().items() if name not in found})
            except Exception:  # noqa: BLE001 - damaged data: the command says so where it reads it; children start
                pass
        _KINDS = found
    return _KINDS


LOG_WORDS = ("stdout", "stderr")  # what the CUDA libraries' log destinations take as a stream, not a file
# XLA's flags whose value is a file or folder (openxla/xla xla/debug_options_flags.cc; tensorflow/tensorflow
# third_party/xla/xla/debug_options_flags.cc); "-" and "sponge" are xla_dump_to's streams, kept as written
XLA_PATH_FLAGS = ("xla_dump_to", "xla_gpu_cuda_data_dir", "xla_gpu_per_fusion_autotune_cache_dir",
                  "xla_gpu_dump_autotune_results_to", "xla_gpu_load_autotune_results_from",
                  "xla_gpu_kernel_cache_file", "xla_gpu_target_config_filename",
                  "xla_gpu_pgle_profile_file_or_directory_path", "xla_gpu_dump_llvmir_to")
XLA_DUMP_WORDS = ("-", "sponge", "test_undeclared_outputs_dir")


def child_environment(env: Mapping[str, str], here: str | None = None) -> dict[str, str]:
    """ENV for a child that starts from another folder than HERE (the working folder by default): each variable of
    working_folder_kinds() that names a relative path made absolute against HERE, so that the child opens, searches,
    preloads and writes what a program started here would. Everything else as written. Where the working folder was
    removed (nothing relative can be found there by anyone), ENV unchanged; on Windows too (its children keep the
    drive's paths)."""
    child = dict(env)
    kinds = working_folder_kinds()
    if os.name == "nt" or not any(child.get(name) for name in kinds):
        return child
    if here is None:
        from cudnn_doctor.operating_system import GONE_FOLDER, kernel_getcwd

        try:
            here = kernel_getcwd()  # the kernel's answer: a deleted working folder is gone (r22), not its old name
        except OSError:  # joined to a folder that does not exist: a relative entry names nothing, as in the deleted
            here = GONE_FOLDER  # folder (left as written, the child read it from "/": 'lib' is /lib there)
    def startable(name: str) -> bool:
        return len(name) + 1 + len(child[name].encode("utf-8", "surrogateescape")) < MAX_ARG_STRLEN

    for name, kind in kinds.items():
        value = child.get(name)
        if value:
            child[name] = _absolute_value(kind, value, here)
            if not startable(name) and kind in ("loader list", "preload", "search list"):
                child[name] = _absolute_value(kind, value, here, only_there=True)
            if not startable(name):  # as written, as this process was started with it: a path made that long names
                child[name] = value  # nothing either way (the kernel takes 4,096 bytes a path: ENAMETOOLONG)
    return child


# what exec(2) takes for one NAME=VALUE string (Linux's MAX_ARG_STRLEN, 32 pages): a variable made longer than this
# stops every child ("Argument list too long"); 6,000 relative LD_LIBRARY_PATH entries that name nothing (60 kB, with
# which any program starts) made absolute were more, and every probe said NVML failed (CD104) and cuDNN crashed (r22)
MAX_ARG_STRLEN = 32 * 4096


def _absolute_value(kind: str, value: str, here: str, only_there: bool = False) -> str:
    """VALUE (of KIND) with its relative paths made absolute against HERE; ONLY_THERE (a list made too long for exec):
    its relative entries that name nothing there left out (the reader finds nothing in them either)."""
    def there(entry: str, absolute: str) -> bool:
        return not only_there or absolute == entry or os.path.lexists(absolute)

    if kind == "loader list":
        pairs = [(entry, _from(here, entry, loader=True)) for entry in loader_folders(value)]
        return ":".join(absolute for entry, absolute in pairs if there(entry, absolute))
    if kind == "preload":
        entries = split_preload(value)
        if not any("/" in entry and not os.path.isabs(entry) for entry in entries):
            return value
        pairs = [(entry, _from(here, entry, loader=True) if "/" in entry else entry) for entry in entries]
        return " ".join(absolute for entry, absolute in pairs if there(entry, absolute))
    if kind == "search list":
        pairs = [(entry, _from(here, entry)) for entry in value.split(os.pathsep)]
        return os.pathsep.join(absolute for entry, absolute in pairs if there(entry, absolute))
    if kind == "xla flags":
        return _xla_flags_from(here, value)
    if value.strip() in LOG_WORDS:
        return value
    return _from(here, value) if value.strip() else value


def _from(here: str, entry: str, loader: bool = False) -> str:
    """ENTRY as the same path from anywhere: a relative one joined to HERE as written ('..' left for the kernel, which
    resolves it through links as the reader's own open does), an empty one HERE itself; absolute, '~...' (a reader that
    expands it finds the home wherever it runs) and, for the loader (LOADER), one that starts with $ORIGIN (the child is
    the program whose origin it names) left as written."""
    import re

    if os.path.isabs(entry) or entry.startswith("~"):
        return entry
    if loader and re.match(r"\$(\{ORIGIN\}|ORIGIN(?![A-Za-z0-9_]))", entry):
        return entry
    return os.path.join(here, entry) if entry else here


def _xla_flags_from(here: str, value: str) -> str:
    """XLA_FLAGS with each path flag's relative value (XLA_PATH_FLAGS) made absolute against HERE, in its place, the
    rest as written; a value that names a file of flags (it does not begin with '-'), that file's path."""
    stripped = value.lstrip(XLA_WHITE_SPACE)
    if stripped and not stripped.startswith("-"):
        return _from(here, value.strip(XLA_WHITE_SPACE))
    out, at = [], 0
    for name, written, given in xla_flag_values(value):
        if name not in XLA_PATH_FLAGS or not given or given in XLA_DUMP_WORDS:
            continue
        absolute = _from(here, given)
        if absolute == given:
            continue
        start = value.find(written, at)
        if start < 0:
            continue
        quoted = absolute if not any(c in absolute for c in XLA_WHITE_SPACE + "'\"\\") else \
            '"' + absolute.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += [value[at:start], f"--{name}={quoted}"]
        at = start + len(written)
    return "".join(out) + value[at:]
