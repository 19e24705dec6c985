"""The loading child's work: load cuDNN the way one program loads it, and say what the loader mapped. Its script is
_job_child.py (run as `_job_child.py _load_jobs ...`), which imports this module (from its bytecode) and calls run_as_child.

Usage: python -I -S _job_child.py _load_jobs USER SITE_PACKAGES RECIPE CALL FUNCTIONS SONAME CHECKS LATER [ARGS [LOADS [LIBRARIES]]]

  USER           a framework's name, or "ld.so" (any program that asks the loader by name)
  SITE_PACKAGES  the folder the framework is installed in ("-": none)
  RECIPE         the framework's own file that loads its CUDA libraries, relative to SITE_PACKAGES ("-": none)
  CALL           the function of RECIPE that does it (torch: _load_global_deps)
  FUNCTIONS      the functions of RECIPE it needs, comma-separated (exec'd from the installed file itself)
  SONAME         libcudnn.so.9
  CHECKS         the front library's calls that load each sub-library, comma-separated (cudnnOpsVersionCheck, ...)
  LATER          sub-libraries cuDNN loads only when it runs (the engines), comma-separated
  ARGS           CALL's arguments, a Python literal list (ast.literal_eval): ["cudnn", "libcudnn.so.*[0-9]"]
  LOADS          the sub-library each of CHECKS loads, comma-separated in their order (libcudnn_graph.so.9, ...)
  LIBRARIES      the CUDA libraries other than cuDNN, asked after it (issue 45): a Python literal dict, {"recipe":
                 [file, call, functions, args, modules] or None (the framework's code that preloads its wheels'
                 libraries: torch's _load_global_deps, JAX's _load_nvidia_libraries), "libraries": [[soname,
                 [symbols], version function, how it answers], ...], "runpath": [folders its own libraries find
                 them in]}: each soname opened by name as the framework's libraries and XLA's loader then open it
                 (the copy its code mapped answers; else the loader searches), in a forked copy of this process

It runs the framework's own preloading code from its installed files (not an import of the framework: no GPU and
no second of start-up), then opens SONAME as the framework's libraries would find it, then calls the front
library's version checks, which load each sub-library as cuDNN does, and opens the engine libraries. After each
step it writes one line, at once, so that a crash (a truncated library ends in SIGBUS) still says how far it came.
Where a sub-library does not load (and before the first, whose failure cuDNN's front library answers with abort()),
the loader itself is asked for that file, along the search list it gives the front library: its own words ("version
`GLIBC_2.38' not found", "libfoo.so.1: cannot open shared object file") name the cause, which cuDNN's status hides.
Each line starts with RS "CDL" and a tab: a preloaded library that prints to stdout cannot forge or break one.
Standard library only, old syntax: it may run under the framework's own Python.
"""

import ast
import ctypes
import os
import stat
import sys

if __package__:  # imported by the doctor (the tests, the benchmarks)
    from ._proc_maps import mapped_files
else:  # a job child (_job_child.py imported _proc_maps from this folder first), or this file run by its path
    _FOLDER = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(_FOLDER)  # last, after the standard library's folders, and taken off at once
    try:
        from _proc_maps import mapped_files  # type: ignore[no-redef]
    finally:
        sys.path.remove(_FOLDER)

MARK = "\x1eCDL\t"
WAITS = "not a regular file: the loader opens it and waits (a FIFO waits for a writer for ever)"
# a character or block device: the loader opens it and reads its ELF header from it, and a device gives none (/dev/zero
# zeros: "invalid ELF header"; /dev/null nothing: "file too short"); never opened here (opening some devices acts)
DEVICE = "a device file, not a library: the loader reads no ELF header from it and stops there"
MAX_RECIPE_BYTES = 4 << 20
ALLOWED_IMPORTS = ("os", "sys", "ctypes", "glob", "platform", "importlib", "pathlib", "textwrap", "re", "logging",
                   "functools", "typing", "traceback", "warnings", "math", "__future__", "collections", "itertools")


def say(key, *fields):
    """One line of the answer, written now (unbuffered): KEY and each of FIELDS separated by tabs, a backslash, tab or
    newline inside a field escaped (a folder's name may hold any of them: the reader splits at the tabs first), on
    the runner's answer channel (_child_stdio's answer_fd: opened again where a library this child loaded closed it
    or put another file on its number, as one pointing every descriptor at /dev/null does), else on stdout."""
    escaped = [_text(field).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\0", "\\0")
               for field in fields or ("",)]
    data = b"\t".join([(MARK + key).encode("utf-8")] + [_bytes(field) for field in escaped]) + b"\n"
    descriptor = _STDIO["answer_fd"]() if "answer_fd" in _STDIO else 1
    while data:
        data = data[os.write(descriptor, data):]


def _text(value):
    """VALUE as text: its str(), or words where that raises (an exception whose __str__ fails, an integer past 4,300
    digits): what a framework raised is never a reason for this child to die."""
    try:
        return str(value) if not isinstance(value, int) or value.bit_length() < 14000 else \
            f"(an integer of {value.bit_length()} bits)"
    except Exception:  # noqa: BLE001 - any failure of its own str() is said, not raised
        return f"(a {type(value).__name__} whose str() fails)"


def _bytes(text):
    """TEXT in UTF-8, a file name's undecodable bytes (surrogateescape) as those bytes; a lone surrogate of another
    kind (an exception's words may hold one) written as its escape, never a UnicodeEncodeError."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def mapped():
    """Every file mapped into this process, once each, in the order of its first mapping (bytes-safe; the one reader,
    _proc_maps.py)."""
    return mapped_files()


def say_new(before):
    """Each file mapped since BEFORE (a list of paths), one line each; the new list."""
    now = mapped()
    for path in now:
        if path not in before:
            say("mapped", path)
    return now


class NoRecipe(Exception):
    """The installed framework has no such file or function: not a failure of the framework."""


def run_recipe(site, recipe, call, functions, args=(), raised=None, announce=None, first=()):
    """The framework's own loading code: FUNCTIONS of SITE/RECIPE, exec'd from the installed file with the standard
    modules it imports, then CALL(). RAISED, a list: the first exception each of the other functions raised is
    added to it, though CALL swallows it (torch's _load_global_deps does: `except Exception: pass`). ANNOUNCE, a
    function: called with each file its code opens (ctypes.CDLL), before it is opened (a file cut short kills the
    process inside the open: the last one announced is the one). FIRST: folders put before PYTHONPATH's on sys.path
    (the working folder, which `python -c`, the REPL and a script kept there put first)."""
    path = os.path.join(site, recipe)
    if not os.path.isfile(path):
        raise NoRecipe(f"{path} is not a file")
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        data = os.read(descriptor, MAX_RECIPE_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_RECIPE_BYTES:
        raise NoRecipe(f"{path} is larger than {MAX_RECIPE_BYTES} bytes")
    try:
        tree = ast.parse(data, path)
    except (SyntaxError, ValueError) as error:  # not Python this interpreter reads: the import would say so itself
        raise NoRecipe(f"{path} does not parse: {error}") from None
    wanted = set(functions)
    body = []
    for node in tree.body:
        if isinstance(node, ast.Import) and all(a.name.split(".")[0] in ALLOWED_IMPORTS for a in node.names):
            body.append(node)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ALLOWED_IMPORTS and not node.level:
            body.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name in wanted:
            body.append(node)
    found = set(n.name for n in body if isinstance(n, ast.FunctionDef))
    if call not in found:
        raise NoRecipe(f"{recipe} has no function {call} (another release of the framework)")
    module = ast.Module(body=body, type_ignores=[])
    namespace = {"__file__": path, "__name__": "cudnn_doctor_recipe", "_running_with_deploy": lambda: False}
    sys.path.insert(0, site)
    exec(compile(module, path, "exec"), namespace)
    # a program's PYTHONPATH comes before its site-packages (this child runs isolated, -I): the framework's own search
    # of sys.path for its wheels' libraries (torch's _preload_cuda_lib) meets those folders first, as there
    sys.path[:0] = [*first, *(entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry)]
    if raised is not None:
        for name in [n for n in wanted if n != call and callable(namespace.get(n))]:
            namespace[name] = _recording(namespace[name], name, raised)
    if announce is not None and getattr(namespace.get("ctypes"), "CDLL", None) is ctypes.CDLL:
        namespace["ctypes"] = _Announcing(announce)
    namespace[call](*args)


class _Announcing:
    """ctypes as the framework's loading code sees it, each CDLL's file announced before it is opened."""

    def __init__(self, announce):
        self._announce = announce

    def __getattr__(self, name):
        return getattr(ctypes, name)

    def CDLL(self, name, *args, **kwargs):  # noqa: N802 (ctypes' own name)
        self._announce(_text(name))
        return ctypes.CDLL(name, *args, **kwargs)

    @property
    def cdll(self):  # JAX's plugin: ctypes.cdll.LoadLibrary(path)
        return self

    def LoadLibrary(self, name, *args, **kwargs):  # noqa: N802 (ctypes' own name)
        return self.CDLL(name, *args, **kwargs)


def _recording(function, name, raised):
    def recorded(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as error:
            if not raised:
                raised.append(f"{name} raised {type(error).__name__}: {_text(error)[:300]}")
            raise
    return recorded


def seed_modules(site, modules):
    """Each of MODULES ({"torch.version": "torch/version.py"}) made from its installed file's plain assignments of
    literals alone, and put in sys.modules: the framework's loading code imports it (torch's _get_cuda_dep_paths:
    `from torch.version import cuda`), and importing it from its package would run the whole framework."""
    import types

    for name, relative in sorted((modules or {}).items()):
        path = os.path.join(site, relative)
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            try:
                data = os.read(descriptor, MAX_RECIPE_BYTES)
            finally:
                os.close(descriptor)
            tree = ast.parse(data, path)
        except (OSError, SyntaxError, ValueError):
            continue
        module = types.ModuleType(name)
        module.__file__ = path
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        setattr(module, target.id, ast.literal_eval(node.value))
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        pass
        sys.modules[name] = module


def libraries(user, site, spec):
    """The CUDA libraries other than cuDNN as USER gets them (LIBRARIES in the usage above): its own preloading code
    run first, then each soname opened as its libraries open it, each in a forked copy of this process (a file cut
    short kills the copy, not this one). Lines: libs-start, lib-recipe (its code's own words), lib-mapped (each file
    its code mapped), then for each library lib-start SONAME, lib-try SONAME FILE (a file about to be opened by its
    path), lib SONAME HOW FILE WORDS ("ok" where it loads; HOW: mapped | LD_LIBRARY_PATH | RUNPATH | by name),
    lib-missing SONAME SYMBOLS, lib-version SONAME RAW, or lib-died SONAME HOW-IT-DIED; then libs-done."""
    say("libs-start", user)
    recipe = spec.get("recipe")
    maps = mapped()
    if recipe and site != "-":
        file, call, functions, args, modules = (list(recipe) + [[], {}])[:5]
        say("lib-recipe-start", f"{file}: {call}")
        raised = []
        try:
            seed_modules(site, modules)
            run_recipe(site, file, call, list(functions), list(args), raised,
                       announce=lambda path: say("lib-recipe-try", path),
                       first=[spec["working_folder"]] if spec.get("working_folder") else [])
            say("lib-recipe", "ok" + (f" ({raised[0]}, which {call} swallows)" if raised else ""))
        except NoRecipe as error:
            say("lib-recipe", f"no-recipe: {_text(error)}")
        except BaseException as error:  # its own code's failure (torch's caller swallows it): said, and on
            say("lib-recipe", f"{type(error).__name__}: {_text(error)}")
    for path in mapped():
        if path not in maps:
            say("lib-mapped", path)
    runpath = [folder for folder in spec.get("runpath", []) if folder]
    rows = [list(row) + [[]] * (5 - len(row)) for row in spec.get("libraries", [])]
    needs = bound_needs(spec.get("binders", []), {row[0]: list(row[4]) for row in rows})
    named = spec.get("named") or {}
    for soname, symbols, version, kind, _ in rows:
        say("lib-start", soname)
        lookups = (spec.get("binders", []), named[soname]) if soname in named else None
        _library_in_a_fork(soname, list(symbols), version, kind, runpath, needs.get(soname, ()), lookups)
    say("libs-done")


ELF_SECTION = "<IIQQQQIIQQ"  # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
SHT_DYNSYM, SHT_DYNAMIC, SHT_VERNEED, SHT_VERSYM = 11, 6, 0x6FFFFFFE, 0x6FFFFFFF


def bound_needs(binders, prefixes):
    """{soname: [(binder, symbol, version node or ''), ...]}: the functions and data the framework's own libraries
    (BINDERS: libtorch_cuda.so, ...) take from each soname of PREFIXES, read from their dynamic symbol tables: an
    undefined, non-weak symbol whose version need names that soname as its file (libcudart.so.13's
    cudaGetDeviceCount@libcudart.so.13), or an unversioned one of a library they need (DT_NEEDED) whose name starts
    with that library's prefix (ncclCommInitRank). The loader binds each as the binder loads (Python's imports load
    with RTLD_NOW), and refuses the binder where none of the scope defines it. ELF64 little-endian only."""
    import struct

    out = {}
    for binder, data in _binaries(binders):
        try:
            for soname, symbol, node in _undefined_of(data, prefixes, struct):
                out.setdefault(soname, []).append((binder, symbol, node))
        except (struct.error, ValueError, IndexError, OverflowError):
            pass
    return out


def _binaries(binders):
    """(binder, its bytes mapped) for each of the first 8 BINDERS that is a regular file, each unmapped once the
    caller moves on. Never waits: a FIFO under the name is opened without blocking, seen not regular, and left."""
    import mmap

    for binder in binders[:8]:
        try:
            descriptor = os.open(binder, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                continue
            data = mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            continue
        finally:
            os.close(descriptor)
        try:
            yield binder, data
        finally:
            data.close()


def _section_headers(data, struct):
    """(the section headers of the ELF64 little-endian image DATA, the first 4096, and the index of the one holding
    their names), or None for another file, or one whose headers are not Elf64_Shdr's 64 bytes each."""
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_at = struct.unpack_from("<HHH", data, 0x3A)
    if entsize != 64:
        return None
    return [struct.unpack_from(ELF_SECTION, data, shoff + i * entsize) for i in range(min(count, 4096))], names_at


def _undefined_of(data, prefixes, struct):
    headers = _section_headers(data, struct)
    if headers is None:
        return []
    sections = headers[0]

    def text(table, at):
        start = sections[table][4] + at
        end = data.find(b"\0", start, start + 4096)
        return data[start:end].decode("ascii", "replace") if end >= 0 else ""

    by_type = {}
    for index, section in enumerate(sections):
        by_type.setdefault(section[1], (index, section))
    if SHT_DYNSYM not in by_type:
        return []
    _, dynsym = by_type[SHT_DYNSYM]
    strings = dynsym[6]
    nodes = {}  # version index -> (the file that must define it, the node)
    if SHT_VERNEED in by_type:
        _, verneed = by_type[SHT_VERNEED]
        at, files = verneed[4], 0
        while files < 256:
            _, cnt, file_at, aux, following = struct.unpack_from("<HHIII", data, at)
            file, here = text(strings, file_at), at + aux
            for _ in range(min(cnt, 256)):
                _, _, other, name_at, step = struct.unpack_from("<IHHII", data, here)
                nodes[other & 0x7FFF] = (file, text(strings, name_at))
                if not step:
                    break
                here += step
            files += 1
            if not following:
                break
            at += following
    needed = set()
    if SHT_DYNAMIC in by_type:
        _, dynamic = by_type[SHT_DYNAMIC]
        for tag, value in struct.iter_unpack("<qQ", data[dynamic[4]:dynamic[4] + dynamic[5] // 16 * 16]):
            if tag == 0:
                break
            if tag == 1:
                needed.add(text(strings, value))
    versym = None
    if SHT_VERSYM in by_type:
        _, section = by_type[SHT_VERSYM]
        versym = data[section[4]:section[4] + section[5]]
    unversioned = sorted(((prefix, soname) for soname, listed in prefixes.items() if soname in needed
                          for prefix in listed), key=lambda item: -len(item[0]))
    found = []
    import array

    table = data[dynsym[4]:dynsym[4] + dynsym[5] // 24 * 24]
    sections_of = array.array("H", table)[3::12]  # each Elf64_Sym's st_shndx: 0 where it is undefined here
    for index in [at for at, shndx in enumerate(sections_of) if not shndx]:
        name_at, info = struct.unpack_from("<IB", table, index * 24)
        if not name_at or info >> 4 != 1:  # nameless, or not GLOBAL (a WEAK one may be absent)
            continue
        version = struct.unpack_from("<H", versym, index * 2)[0] & 0x7FFF if versym is not None else 0
        if version in nodes:
            file, node = nodes[version]
            if file in prefixes:
                found.append((file, text(strings, name_at), node))
        elif version <= 1 and unversioned:
            name = text(strings, name_at)
            owner = next((soname for prefix, soname in unversioned if name.startswith(prefix)), None)
            if owner is not None:
                found.append((owner, name, ""))
    return found


def _library_in_a_fork(soname, symbols, version, kind, runpath, needs=(), lookups=None):
    """SONAME asked in a forked copy of this process, where opening a file may kill it; one its link map already
    holds (the framework's own code mapped it) opens no file, so it is asked here: a fork of a process with the
    framework's libraries mapped (gigabytes) costs each time, and a dozen of them cost seconds on the GPU machine."""
    if _loaded_as(soname) is not None:
        _library_here(soname, symbols, version, kind, runpath, needs, lookups)
        return
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:
        code = 5
        try:
            code = _library_here(soname, symbols, version, kind, runpath, needs, lookups)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        say("lib-died", soname, f"opening it killed the process with {_signal_name(os.WTERMSIG(status))}")
    elif os.WEXITSTATUS(status) not in (0,):
        say("lib-died", soname, f"opening it ended the process with status {os.WEXITSTATUS(status)}")


def _library_here(soname, symbols, version, kind, runpath, needs=(), lookups=None):
    """In the forked copy: SONAME as the program's libraries get it. Already mapped (the framework's own code loaded
    it, or a library it loaded needs it): that copy, whatever the path holds. Else the loader's order for a library
    that needs it: LD_LIBRARY_PATH (with its glibc-hwcaps subfolders), then RUNPATH (the framework's own folders),
    each file opened by its path as the loader takes it (one of another ELF class skipped, as the loader skips it),
    then the loader itself by name (its cache, the system's folders)."""
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
    lib, how, words = None, "mapped", "ok"
    path_folders = with_levels([f for f in os.environ.get("LD_LIBRARY_PATH", "").replace(";", ":").split(":") if f])
    loaded = _loaded_as(soname)
    if loaded is not None:
        lib = ctypes.CDLL(loaded, mode=mode)  # the object already there: no file opened
    elif not any(_waits(os.path.join(folder, soname)) for folder in path_folders):
        # the loader by name, told to load nothing (it answers with an object whose soname matches; where none
        # does, it searches and opens files, so never where one of them is a FIFO)
        try:
            lib = ctypes.CDLL(soname, mode=mode | getattr(os, "RTLD_NOLOAD", 4))
        except (OSError, UnicodeDecodeError):
            lib = None
    if lib is None:
        for source, folders in (("LD_LIBRARY_PATH", path_folders), ("RUNPATH", with_levels(runpath))):
            for folder in folders:
                candidate = os.path.join(folder, soname)
                try:
                    kind_of = os.stat(candidate).st_mode
                except OSError:
                    continue
                if _waits(candidate):
                    say("lib", soname, source, candidate, _unopened_words(kind_of))
                    return 0
                say("lib-try", soname, candidate)
                try:
                    lib = ctypes.CDLL(candidate, mode=mode)
                except (OSError, UnicodeDecodeError) as error:
                    text = str(error)
                    if "wrong ELF class" in text or (text.startswith(candidate + ":") and
                                                     "cannot open shared object" in text):
                        continue  # skipped when searching: the loader goes on
                    say("lib", soname, source, candidate, text)
                    return 0
                how = source
                break
            if lib is not None:
                break
    if lib is None:
        how = "by name"
        try:
            lib = ctypes.CDLL(soname, mode=mode)
        except (OSError, UnicodeDecodeError) as error:
            say("lib", soname, how, "-", error)
            return 0
    path = _path_of(lib) or "-"
    say("lib", soname, how, path, words)
    missing = []
    for symbol in symbols:
        try:
            getattr(lib, symbol)
        except (AttributeError, UnicodeDecodeError):
            missing.append(symbol)
    if missing:
        say("lib-missing", soname, ",".join(missing))
    if version and version not in missing:
        say("lib-version", soname, _ask_version(lib, version, kind))
    if lookups and path != "-" and not _in_folders(path, runpath):
        # a copy other than the framework's own: the names its libraries look up with dlsym when first called
        # (XLA's stub tables), read from their read-only data, asked of it as the loader's bindings are
        needs = list(needs) + looked_up(lookups[0], lookups[1][0], lookups[1][1])
    if needs:
        unbound = _unbound(lib, needs)
        say("lib-bound", soname, len(needs))
        if unbound:
            say("lib-unbound", soname, unbound[0][0], ",".join(
                f"{symbol}@{node}" if node else symbol for _, symbol, node in unbound[:8]) + (
                f",+{len(unbound) - 8}" if len(unbound) > 8 else ""))
    return 0


def _in_folders(path, folders):
    """Whether the file at PATH (its real path) lies directly in one of FOLDERS (the framework's own wheels)."""
    home = os.path.dirname(os.path.realpath(path))
    return any(os.path.realpath(folder) == home for folder in folders if folder)


MAX_NAMES = 4096  # names asked of one copy at the most
MAX_RODATA = 256 << 20  # bytes of one binder's read-only data read at the most


def looked_up(binders, prefix, longer):
    """[(binder, name, None)]: the function names starting with PREFIX (not with one of LONGER, another library's)
    that BINDERS hold as whole C strings in their .rodata section: the table XLA's stubs look each function up by
    (openxla/xla xla/tsl/cuda/*_stub.cc kSymbols) when it is first called. ELF64 little-endian; never waits on a
    FIFO; at most MAX_NAMES names and MAX_RODATA bytes a binder."""
    import re
    import struct

    pattern = re.compile(rb"(?<=\0)(" + re.escape(prefix.encode("ascii")) + rb"[A-Za-z0-9_]{1,120})(?=\0)")
    skip = tuple(p.encode("ascii") for p in longer)
    out, seen = [], set()
    for binder, data in _binaries(binders):
        try:
            span = _rodata(data, struct)
            if span is None:
                continue
            for match in pattern.finditer(data, span[0], min(span[1], span[0] + MAX_RODATA)):
                name = match.group(1)
                if name in seen or name.startswith(skip):
                    continue
                seen.add(name)
                out.append((binder, name.decode("ascii"), None))
                if len(out) >= MAX_NAMES:
                    return out
        except (struct.error, ValueError, IndexError, OverflowError):
            pass
    return out


def _rodata(data, struct):
    """(start, end) of the .rodata section of the ELF64 image DATA, or None."""
    headers = _section_headers(data, struct)
    if headers is None:
        return None
    sections, names_at = headers
    if names_at >= len(sections):
        return None
    names = sections[names_at]
    for section in sections:
        start = names[4] + section[0]
        if data[start:start + 8] == b".rodata\0":
            end = section[4] + section[5]
            return (section[4], end) if 0 <= section[4] <= end <= len(data) else None
    return None


def _unbound(lib, needs):
    """The (binder, symbol, node) of NEEDS that the loader binds nowhere: not in LIB (this copy and what it needs:
    dlvsym/dlsym on its handle, the symbol's own version node asked), nor anywhere in the program's global scope
    (dlvsym on RTLD_DEFAULT: the preloaded objects, and what was loaded RTLD_GLOBAL, such as a framework's own copy
    mapped after a preloaded one), which is where the loader looks first for a library it loads."""
    try:
        libc = ctypes.CDLL(None)
        dlsym, dlvsym = libc.dlsym, libc.dlvsym
    except (AttributeError, OSError):
        return []
    dlsym.restype = dlvsym.restype = ctypes.c_void_p
    dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    out = []
    for binder, symbol, node in needs:
        name = symbol.encode("ascii", "replace")
        # node None: a name looked up with dlsym on this copy's own handle (XLA's stubs), not the program's scope
        handles = (lib._handle,) if node is None else (lib._handle, None)
        if not any((dlvsym(handle, name, node.encode("ascii", "replace")) if node else dlsym(handle, name))
                   for handle in handles):
            out.append((binder, symbol, node))
    return out


def _unopened_words(mode):
    """The words for a file the loader would open but this child does not: a FIFO waits, a device is no library."""
    return WAITS if stat.S_ISFIFO(mode) else DEVICE


def _waits(path):
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def _loaded_as(soname):
    """The path of an object already in this process's link map that was loaded as SONAME (its file so named, or
    named for its release: libcublasLt.so.13.1.0.3), walked from the program's own (dlinfo RTLD_DI_LINKMAP); None."""
    try:
        libdl = ctypes.CDLL(None)
        libdl.dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        pointer = ctypes.POINTER(_LinkMapFull)()
        if libdl.dlinfo(ctypes.CDLL(None)._handle, 2, ctypes.byref(pointer)) != 0:
            return None
        steps = 0
        while pointer and steps < 4096:
            name = pointer.contents.l_name
            if name:
                base = os.path.basename(os.fsdecode(name))
                if base == soname or base.startswith(soname + "."):
                    return os.fsdecode(name)
            pointer = pointer.contents.l_next
            steps += 1
    except (AttributeError, OSError, ValueError, UnicodeDecodeError):
        return None
    return None


def _ask_version(lib, name, kind):
    """The library's own answer to its version function NAME: "property" fn(type, int*) for major, minor, patch;
    "pair" fn(int*, int*); "int" fn(int*); "return" fn() -> size_t. '' where it does not answer 0."""
    try:
        function = getattr(lib, name)
        if kind == "return":
            function.restype = ctypes.c_size_t
            return str(function())
        function.restype = ctypes.c_int
        if kind == "property":
            parts = []
            for which in (0, 1, 2):
                value = ctypes.c_int(-1)
                if function(ctypes.c_int(which), ctypes.byref(value)) != 0:
                    return ""
                parts.append(str(value.value))
            return ".".join(parts)
        if kind == "pair":
            major, minor = ctypes.c_int(-1), ctypes.c_int(-1)
            return f"{major.value}.{minor.value}" if function(ctypes.byref(major), ctypes.byref(minor)) == 0 else ""
        value = ctypes.c_int(-1)
        return str(value.value) if function(ctypes.byref(value)) == 0 else ""
    except (AttributeError, OSError, ValueError, UnicodeDecodeError):
        return ""


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


class _LinkMapFull(ctypes.Structure):
    pass


_LinkMapFull._fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p), ("l_ld", ctypes.c_void_p),
                         ("l_next", ctypes.POINTER(_LinkMapFull)), ("l_prev", ctypes.POINTER(_LinkMapFull))]


def _path_of(lib):
    """The file the loader mapped LIB's object from, asked of the loader itself (dlinfo RTLD_DI_LINKMAP: its
    link_map's l_name), or None."""
    try:
        libdl = ctypes.CDLL(None)
        libdl.dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        pointer = ctypes.POINTER(_LinkMap)()
        if libdl.dlinfo(lib._handle, 2, ctypes.byref(pointer)) != 0 or not pointer or not pointer.contents.l_name:
            return None
        return os.fsdecode(pointer.contents.l_name)
    except (AttributeError, OSError, ValueError, UnicodeDecodeError):
        return None


def status_name(lib, status):
    try:
        lib.cudnnGetErrorString.restype = ctypes.c_char_p
        lib.cudnnGetErrorString.argtypes = [ctypes.c_int]
        name = lib.cudnnGetErrorString(status)
        return name.decode("ascii", "replace") if name else ""
    except (AttributeError, OSError, UnicodeDecodeError):
        return ""


def main(argv):
    spec = ast.literal_eval(argv[10]) if len(argv) > 10 and argv[10] not in ("", "-") else None
    recipe = (spec or {}).get("recipe") or []
    if len(recipe) > 4 and argv[1] != "-":  # the modules its loading code imports, made from their files first: the
        seed_modules(argv[1], recipe[4])  # cuDNN step runs the same code (torch's _get_cuda_dep_paths)
    code = cudnn_steps(argv)
    if spec is not None:
        libraries(argv[0], argv[1], spec)
    return code


def cudnn_steps(argv):
    user, site, recipe, call, functions, soname, checks, later = argv[:8]
    if soname == "-":  # asked the CUDA libraries alone
        say("start", user)
        say("no-cudnn", "-")
        say("done")
        return 0
    args = ast.literal_eval(argv[8]) if len(argv) > 8 else []
    loads = [n for n in (argv[9] if len(argv) > 9 else "").split(",") if n]
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
    maps = mapped()
    say("start", user)
    if recipe != "-" and site != "-":
        try:
            run_recipe(site, recipe, call, [f for f in functions.split(",") if f], args)
            say("recipe", "ok")
        except NoRecipe as error:  # another release of the framework: the loader by name instead, and said
            say("no-recipe", error)
        except OSError as error:  # the loader refused the file its code loads (or what that file needs): the answer
            say("recipe", f"{type(error).__name__}: {_text(error)}")
            say_new(maps)
            say("done")
            return 0
        except BaseException as error:  # its code found nothing to load (no wheel of cuDNN): said, then as below
            say("recipe", f"{type(error).__name__}: {_text(error)}")
        maps = say_new(maps)
        if not any(os.path.basename(p).startswith(soname) for p in maps):
            # its code loaded no cuDNN: the framework's own libraries find it through their RUNPATH when they load,
            # which asking the loader by name from here would not repeat
            say("not-preloaded", soname)
            say("done")
            return 0
    try:
        lib = ctypes.CDLL(soname, mode=mode)
    except (OSError, UnicodeDecodeError) as error:
        say("open-error", error)
        return 0
    maps = say_new(maps)
    # the file of the object the loader answered with (two copies of one soname can be mapped at once: one loaded by
    # path, one by name), asked of the loader itself
    front = _file_of(lib, "cudnnGetVersion") or next(
        (p for p in mapped() if os.path.basename(p).startswith(soname.split(".so")[0] + ".so")), "")
    say("front", front)
    folders = _search_list(front) if front and loads else None
    say("check-start", "cudnnGetVersion")  # said first: a file that kills the loader kills it in this step
    if loads and folders is not None:  # the first sub-library: the front library aborts where it cannot load it
        maps, words = ask_loader(loads[0], folders, maps)
        if words in (WAITS, DEVICE):  # cuDNN's own open would wait or open a device: not asked, said
            say("check", "cudnnGetVersion", -1, words)
            say("done")
            return 0
    try:
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        say("version", lib.cudnnGetVersion())
    except (AttributeError, UnicodeDecodeError):
        say("version", "")
    for check in [c for c in checks.split(",") if c]:
        say("check-start", check)
        try:
            function = getattr(lib, check)
        except (AttributeError, UnicodeDecodeError):  # ctypes decodes dlerror's words, a folder's bytes in them
            say("check", check, -1, "not exported")
            continue
        function.restype = ctypes.c_int
        status = function()
        say("check", check, status, status_name(lib, status))
        maps = say_new(maps)
        index = checks.split(",").index(check)
        if status != 0 and index < len(loads) and folders is not None:  # cuDNN's status: it did not load; why
            maps, _words = ask_loader(loads[index], folders, maps)
    graph = next((p for p in mapped() if os.path.basename(p).startswith("libcudnn_graph.so")), None)
    names = [n for n in later.split(",") if n]
    if names:
        version = _version_of(lib)
        folders = _search_list(graph) if graph else None
        if folders is None:  # no graph library mapped (cuDNN 8, a fake front): the loader by name, from here
            later_child(graph or "-", version, names)
        else:
            _ask_loader_as_cudnn(graph, folders, version, names)
    say("done")
    return 0


def ask_loader(name, folders, maps):
    """The file the loader takes for NAME from the front library among FOLDERS (LD_LIBRARY_PATH, then its RUNPATH, as
    the loader gave them: where a user places files; each with the glibc-hwcaps subfolders ld.so searches first), and
    the loader's own words opening it: one line "asked NAME FILE WORDS" ("ok" where it loads). A file of another
    machine or ELF class, or one this user may not read, the loader skips, as it does searching, and goes on; a FIFO
    or device is never opened (the loader would wait on it). Each file is opened in a forked copy of this process, so
    what this one maps stays what cuDNN's own loading maps (a copy opened here by its path would answer cuDNN's later
    open by name). Where no folder holds NAME, the words say so and name the files there the loader never takes for
    it (another name, a link that ends nowhere). Returns MAPS as given and the loader's words."""
    path, words = "-", ""
    searched = with_levels(folders or [])
    for folder in searched:
        candidate = os.path.join(folder, name)
        if not os.path.lexists(candidate):
            continue
        try:
            kind = os.stat(candidate).st_mode
        except OSError:
            continue  # a dangling link: the loader finds nothing there and searches on
        if stat.S_ISFIFO(kind) or stat.S_ISCHR(kind) or stat.S_ISBLK(kind):
            path, words = candidate, _unopened_words(kind)
            break
        said = _open_in_a_fork(candidate)
        if said is None:
            continue  # another class or machine, or a file it may not read: skipped when searching
        path, words = candidate, said
        break
    if not words:  # none in its own search list: the cache's or a system folder's, not opened here (loading one
        # by name from this code could take another copy than cuDNN would)
        words = "not in the search list"
        near = near_misses(name, searched)
        if folders:
            words = "no such file as {} in the folders the loader searches from the library that opens it ({}){}" \
                .format(name, ", ".join(searched), "; " + near if near else "")
    say("asked", name, path, words)
    return maps, words


def _open_in_a_fork(candidate):
    """CANDIDATE opened by its path in a forked copy of this process: "ok", the loader's words refusing it, words
    naming the signal that killed the copy, or None where the loader would skip it when searching (another ELF class
    or machine, by path 'No such file'; a file it may not read)."""
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
    if not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: open it, say how, and end there whatever happens (never back into this process's code)
        code = 5
        try:
            os.close(read_end)
            code, said = 0, b"ok"
            try:
                ctypes.CDLL(candidate, mode=mode)
            except (OSError, UnicodeDecodeError) as error:
                text = str(error)
                skipped = "wrong ELF class" in text or (text.startswith(candidate + ":") and
                                                        "cannot open shared object" in text)
                code, said = (3, b"") if skipped else (4, text.encode("utf-8", "surrogateescape"))
            while said:
                said = said[os.write(write_end, said):]
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as answer:
        while True:
            chunk = answer.read(65536)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"opening it killed the process with {_signal_name(os.WTERMSIG(status))}"
    code = os.WEXITSTATUS(status)
    if code == 3:
        return None
    if code == 4:
        return b"".join(chunks).decode("utf-8", "surrogateescape")
    return "ok" if code == 0 else f"opening it ended the process with status {code}"


def _signal_name(number):
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


HWCAPS = "glibc-hwcaps"
_LEVELS = []  # type: list[list[str]]


def levels():
    """The glibc-hwcaps subfolder names this process's ld.so searches, best first, as its --help lists them
    ("supported, searched"); asked once, and only where a folder searched has such a subfolder."""
    if _LEVELS:
        return _LEVELS[0]
    import subprocess

    found = []
    loader = next((p for p in mapped() if os.path.basename(p).startswith("ld-") and ".so" in os.path.basename(p)),
                  None)
    if loader:
        try:
            text = subprocess.run([loader, "--help"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, timeout=5, check=False).stdout.decode("utf-8", "replace")
        except (OSError, subprocess.SubprocessError):
            text = ""
        lines = text.splitlines()
        for index, line in enumerate(lines):
            if line.startswith("Subdirectories of glibc-hwcaps directories"):
                for entry in lines[index + 1:]:
                    if not entry.startswith("  "):
                        break
                    level, _, marks = entry.strip().partition(" ")
                    if "searched" in marks and level and "/" not in level and level not in (".", ".."):
                        found.append(level)
                break
    _LEVELS.append(found)
    return found


def with_levels(folders):
    """FOLDERS as ld.so searches them: before each, its glibc-hwcaps subfolders that ld.so searches here (ld.so(8),
    glibc 2.33 and later), best first. dlinfo's search list names only the folders themselves."""
    if not any(os.path.isdir(os.path.join(folder or ".", HWCAPS)) for folder in folders):
        return list(folders)
    out = []
    for folder in folders:
        if os.path.isdir(os.path.join(folder or ".", HWCAPS)):
            out += [os.path.join(folder, HWCAPS, level) for level in levels()
                    if os.path.isdir(os.path.join(folder, HWCAPS, level))]
        out.append(folder)
    return out


def near_misses(name, folders, limit=3):
    """Files in FOLDERS that a person takes for NAME and the loader never does, in words: a link of that name that
    ends nowhere, a name with blanks around it, another case, or more of a version after it (libcudnn_graph.so.9.0:
    cuDNN asks for .so.9 and its own release's full name only)."""
    found = []
    for folder in folders:
        candidate = os.path.join(folder, name)
        if os.path.islink(candidate) and not os.path.exists(candidate):
            try:
                target = os.readlink(candidate)
            except OSError:
                target = "?"
            found.append(f"{candidate} is a link that ends nowhere (-> {target})")
        try:
            entries = sorted(os.listdir(folder or "."))[:4096]
        except OSError:
            continue
        for entry in entries:
            if entry == name:
                continue
            if entry.strip() == name:
                found.append(f"{os.path.join(folder, entry)!r} has blanks in its name")
            elif entry.lower() == name.lower():
                found.append(f"{os.path.join(folder, entry)} differs in case")
            elif entry.startswith(name + ".") or entry.startswith(name + "-"):
                found.append(f"{os.path.join(folder, entry)} has another name, which the loader is not asked for")
    return "; ".join(found[:limit])


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _file_of(lib, symbol):
    """The file the loader mapped the object of LIB's SYMBOL from (dladdr), or None."""
    try:
        address = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
        libdl = ctypes.CDLL(None)
        libdl.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        if address and libdl.dladdr(address, ctypes.byref(info)) and info.dli_fname:
            return os.fsdecode(info.dli_fname)
    except (AttributeError, OSError, ValueError, UnicodeDecodeError):
        pass
    return None


def _version_of(lib):
    """cuDNN's own version as 'major.minor.patch' (cudnnGetVersion), or ''."""
    try:
        number = int(lib.cudnnGetVersion())
    except (AttributeError, OSError, ValueError):
        return ""
    if number >= 90000:
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


class _SerPath(ctypes.Structure):
    _fields_ = [("dls_name", ctypes.c_char_p), ("dls_flags", ctypes.c_uint)]


class _SerInfo(ctypes.Structure):
    _fields_ = [("dls_size", ctypes.c_size_t), ("dls_cnt", ctypes.c_uint), ("dls_serpath", _SerPath * 1)]


RTLD_DI_SERINFO, RTLD_DI_SERINFOSIZE, LA_SER_DEFAULT = 4, 5, 0x40


def _search_list(graph):
    """The folders the loader searches for a dlopen by name made from GRAPH (its LD_LIBRARY_PATH, then GRAPH's own
    DT_RUNPATH with $ORIGIN expanded), asked of the loader itself (dlinfo RTLD_DI_SERINFO); the system's default
    folders left out (the cache comes before them). None where the loader cannot say."""
    try:
        libdl = ctypes.CDLL(None)
        handle = ctypes.CDLL(graph, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2))._handle
        dlinfo = libdl.dlinfo
        dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        size = _SerInfo()
        if dlinfo(handle, RTLD_DI_SERINFOSIZE, ctypes.byref(size)) != 0 or size.dls_size < ctypes.sizeof(_SerInfo):
            return None
        buffer = ctypes.create_string_buffer(size.dls_size)
        header = _SerInfo.from_buffer(buffer)
        header.dls_size, header.dls_cnt = size.dls_size, size.dls_cnt
        if dlinfo(handle, RTLD_DI_SERINFO, buffer) != 0:
            return None
        paths = ctypes.cast(ctypes.addressof(header.dls_serpath), ctypes.POINTER(_SerPath))
        return [os.fsdecode(paths[i].dls_name) for i in range(header.dls_cnt)
                if paths[i].dls_name and not paths[i].dls_flags & LA_SER_DEFAULT]
    except (AttributeError, OSError, ValueError, UnicodeDecodeError):
        return None


def _ask_loader_as_cudnn(graph, folders, version, names):
    """The engine libraries as cuDNN's graph library opens them when work runs: by name, from its own code, so the
    loader searches FOLDERS (LD_LIBRARY_PATH, then the graph library's DT_RUNPATH). A process cannot call dlopen
    as another object, so a grandchild does, whose LD_LIBRARY_PATH is FOLDERS in that order, with GRAPH already
    loaded (the engines need it by soname); its lines go to this same answer channel (opened again by its path
    there). One that dies is said here."""
    import subprocess

    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(folders)
    try:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_job_child.py")
        done = subprocess.run([sys.executable, "-I", "-S", *_BYTECODE_FLAGS, script, "_load_jobs", "--later", graph, version,
                               ",".join(names)], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              check=False)
        code = done.returncode
    except OSError as error:
        say("later-start", names[0], "-")
        say("later", names[0], f"could not start the loader's child: {error}")
        return
    if code != 0:
        say("later-died", _how(code))


def _how(code):
    import signal

    if code < 0:
        try:
            return "the process was killed by " + signal.Signals(-code).name
        except ValueError:
            return f"the process was killed by signal {-code}"
    return f"the process exited with status {code}"


def later_child(graph, version, names):
    """In the grandchild: GRAPH loaded by its path, then each of NAMES by the names cuDNN's graph library tries, in
    its order (name.so.X.Y.Z, name.so.X.Y, name.so.X, name.so: the '%s.%d.%d.%d' formats in its strings); the
    first the loader opens is the one cuDNN gets. Where none opens, cuDNN goes on without it (its library mode
    AUTO falls back to JIT without the precompiled engines)."""
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
    maps = mapped()
    if graph != "-":
        try:
            ctypes.CDLL(graph, mode=mode)
        except OSError:
            pass
    maps = mapped()
    numbers = [n for n in version.split(".") if n and n.isascii() and n.strip("0123456789") == ""]
    for name in names:
        base = name.split(".so")[0] + ".so"
        tries = [".".join([base] + numbers[:count]) for count in (3, 2, 1)] + [base] if numbers else [name, base]
        say("later-start", name, " ".join(tries))
        errors = []
        for candidate in tries:
            try:
                ctypes.CDLL(candidate, mode=mode)
                errors = None
                break
            except (OSError, UnicodeDecodeError) as error:  # the loader's own words, those of a file it refused first
                said = str(error)
                if not said.startswith(candidate + ":"):  # a file of that name it refused (its dependency, its glibc)
                    errors.append(f"the loader refuses {_first_file(candidate)}: {said}")
                elif "no such file" not in said.lower():
                    errors.append(said)
        if errors == []:
            near = near_misses(name, with_levels([f for f in os.environ.get("LD_LIBRARY_PATH", "").split(":") if f]))
            errors = [f"{name}: cannot open shared object file: No such file or directory" + (f" ({near})" if near
                                                                                            else "")]
        say("later", name, "ok" if errors is None else "; ".join(errors))
        maps = say_new(maps)
    say("later-done")
    return 0


def _first_file(name):
    """The file NAME names in the first folder of this process's LD_LIBRARY_PATH (with the glibc-hwcaps subfolders
    ld.so searches first) that holds one (the grandchild's is the search list cuDNN's graph library has), else NAME."""
    for folder in with_levels([f for f in os.environ.get("LD_LIBRARY_PATH", "").split(":") if f]):
        if os.path.lexists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return name


def usage_error(argv):
    """What is wrong with ARGV (the script's path, then the loading child's arguments, or --later LIBRARY TARGET
    NAMES) as the doctor writes it, in words; None where it is such a command line."""
    if argv[1:2] == ["--later"]:
        return None if len(argv) >= 5 else "--later LIBRARY TARGET NAMES"
    words = "USER SITE RECIPE CALL FUNCTIONS SONAME CHECKS LATER [ARGS [LOADS [SPEC]]]"
    if len(argv) < 9:
        return words
    for index in (9, 11):  # the recipe's arguments and the libraries' spec: Python literals, "-" for none
        if len(argv) > index and argv[index] not in ("", "-"):
            try:
                ast.literal_eval(argv[index])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return words + ": ARGS and SPEC are Python literals"
    return None


def run_as_child(argv, stdio):
    """The child's run (_job_child.py calls it, its argv without the word _load_jobs): STDIO is the namespace of _child_stdio.py, already run (each of
    stdin, stdout and stderr a preloaded library closed is /dev/null again; its answer_fd: the answer channel as it
    is when a line is written). The later child it starts gets this one's bytecode options (-B, -X pycache_prefix)."""
    global _STDIO
    _STDIO = stdio
    _BYTECODE_FLAGS[:] = (["-B"] if sys.dont_write_bytecode else []) + \
        (["-Xpycache_prefix=" + sys.pycache_prefix] if getattr(sys, "pycache_prefix", None) else [])
    if argv[1:2] == ["--later"]:
        sys.exit(later_child(argv[2], argv[3], argv[4].split(",")))
    sys.exit(main(argv[1:]))


_STDIO = {"__name__": "_child_stdio"}  # imported (the benchmarks, the tests): nothing of _child_stdio's
_BYTECODE_FLAGS: list = []  # run_as_child: -B, -Xpycache_prefix=... as this child was started
