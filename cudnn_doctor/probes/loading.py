"""cuDNN as each framework really loads it here, and as any program asking the loader by name gets it.

Not a model of the loader: for each installed framework with a [[loading]] row of compat/process_env.toml, a child
with the user's own environment runs the framework's own loading code from its installed files (torch's
_load_global_deps, JAX's _load_nvidia_libraries), opens the front library as the framework's libraries then find
it, lets cuDNN's version checks load each sub-library and opens the engines; one more child does the same for a
program that asks the loader by name ("ld.so"). Each child's steps come back as they happen (_load_jobs.py), so a
child that dies on a truncated library still says which one. Started beside the other probes; never judges.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from typing import Any

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, job_child_argv
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Framework, LoadStep, ObservedLoad, SeenLibrary
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.origin import SYSTEM, origin
from cudnn_doctor.versions import ascii_digits, decode_cudnn

JOBS = "_load_jobs"  # the job child's module of jobs for the loading children (child.JOB_CHILD)
MARK = b"\x1eCDL\t"
LOADER = "ld.so"


def _row_for(framework: Framework, site: str, table: str = "loading") -> dict[str, Any] | None:
    """The first row of TABLE ([[loading]]: cuDNN's preloading; [[library_loading]]: every library's) of FRAMEWORK
    whose file this install has, defining every function the row runs."""
    from cudnn_doctor.user_files import read_text_or_empty

    for row in load("process_env").get(table, []):
        if row["framework"] != framework.name:
            continue
        for path in sorted(glob.glob(os.path.join(glob.escape(site), row["file"]))):
            text = read_text_or_empty(path, 4 << 20)
            if all(f"def {name}(" in text for name in row["functions"]):
                return {**row, "file": os.path.relpath(path, site)}
    return None


def _version_row(major: int) -> dict[str, Any] | None:
    return next((r for r in load("process_env").get("version_check", []) if int(r["major"]) == major), None)


def _major(framework: Framework) -> int:
    """The cuDNN major the framework uses (its library's soname) or expects (its pin's first field, 0-9 only: a pin
    such as 9x.1 or 9-1, from a METADATA file that is the user's, names none): 9 where neither says one."""
    for text in (framework.cudnn_used, framework.cudnn_expected):
        name = os.path.basename(text or "")
        if ".so." in name:
            digits = name.split(".so.", 1)[1].split(".")[0]
            if ascii_digits(digits) and len(digits) <= 4:
                return int(digits)
        first = (text or "").split(".")[0]
        if ascii_digits(first) and len(first) <= 4:
            return int(first)
    return 9


class LoadChildren:
    """One child per framework that loads cuDNN with code of its own, and one for the loader by name, all started
    now; answers read later."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str], ctx: SearchContext, timeout: float,
                 loader_too: bool, libraries: tuple[str, ...] = ()) -> None:
        from cudnn_doctor.probes.context import interpreter_for

        self.users: list[tuple[str, str | None]] = []
        self.frameworks = {f.name: f for f in frameworks}
        self.libraries = libraries
        self.env = env
        self.ctx = ctx  # the user's environment, as the loader reads it: how each library mapped came
        requests: list[ChildRequest] = []
        majors: set[int] = set()
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if not site or framework.details.get("assumed") or framework.details.get("cpu_only"):
                continue
            row = _row_for(framework, site)
            python = interpreter_for(site) if row else None
            version = _version_row(_major(framework))
            if row is None or python is None or version is None:
                continue
            majors.add(int(version["major"]))
            self.users.append((framework.name, f"{row['file']}: {row['call']}"))
            asked = library_spec(framework, site, libraries) if libraries else None
            if asked is not None and working_folder_first(env, ctx.cwd) and cut_short_in(ctx.cwd or ""):
                asked["working_folder"] = ctx.cwd  # its code then opens that copy, as `python -c` started there does
            requests.append(self._request(python, framework.name, site, row, version, env, timeout, asked))
        if loader_too or libraries:
            by_name = library_spec(None, "-", libraries) if libraries else None
            for major in sorted(majors or {9}) if loader_too else [0]:
                version = _version_row(major) if loader_too else None
                if version is not None or by_name:
                    self.users.append((LOADER, None))
                    args = self._args(LOADER, "-", None, version) if version is not None else \
                        (LOADER, "-", "-", "-", "-", "-", "", "", "[]", "")
                    requests.append(ChildRequest(job_child_argv(JOBS, *args, repr(by_name) if by_name else "-"), env,
                                                 timeout, "the loading child", answer_channel=True))
                    by_name = None  # the libraries asked once, by the first such child
        self.batch = ChildBatch(requests, deadline=deadline_in(timeout), parallel=max(1, len(requests)))

    @staticmethod
    def _args(user: str, site: str, row: dict[str, Any] | None, version: dict[str, Any]) -> tuple[str, ...]:
        major = int(version["major"])
        return (user, site, row["file"] if row else "-", row["call"] if row else "-",
                ",".join(row["functions"]) if row else "-", f"{version['front']}.so.{major}",
                ",".join(version["checks"]), ",".join(f"{name}.so.{major}" for name in version["later"]),
                repr(list(row["args"])) if row else "[]", ",".join(f"{name}.so.{major}" for name in version["loads"]))

    def _request(self, python: str, user: str, site: str, row: dict[str, Any], version: dict[str, Any],
                 env: dict[str, str], timeout: float, libraries: dict[str, Any] | None = None) -> ChildRequest:
        return ChildRequest(job_child_argv(JOBS, *self._args(user, site, row, version),
                                           repr(libraries) if libraries else "-", python=python), env, timeout,
                            f"loading cuDNN as {user} does", answer_channel=True)

    def results(self) -> tuple[ObservedLoad, ...]:
        answers = self.batch.answers()
        seen = tuple(parse_answer(user, recipe, answer.answer, answer.exit_code, answer.timed_out, answer.error)
                     for (user, recipe), answer in zip(self.users, answers, strict=True))
        seen = tuple(self._with_wheel_died_in(load) for load in seen)
        return tuple(dataclasses.replace(load, libraries=tuple(with_how_it_came(with_wheel_facts(
            library, self.frameworks.get(load.user)), self.ctx) for library in load.libraries),
            needed=needed_by(self.frameworks.get(load.user))) if load.libraries else load for load in seen)

    def _with_wheel_died_in(self, load: ObservedLoad) -> ObservedLoad:
        """LOAD with the wheel that owns the file its preloading code died opening, where one's RECORD lists it."""
        framework = self.frameworks.get(load.user)
        site = str(framework.details.get("site_packages") or "") if framework is not None else ""
        if not load.library_recipe_died_at or not site:
            return load
        cwd = self.ctx.cwd or ""
        if working_folder_first(self.env, cwd) and load.library_recipe_died_at.startswith(cwd.rstrip("/") + "/"):
            return dataclasses.replace(load, library_recipe_died_folder=cwd)
        owner = _owner(site, load.library_recipe_died_at)
        return dataclasses.replace(load, library_recipe_died_wheel=f"{owner[0]}=={owner[1]}") if owner else load


def cuda_libraries_on_path(env: dict[str, str], folders: list[str]) -> tuple[str, ...]:
    """The sonames of compat's [[cuda_library]] rows that an LD_LIBRARY_PATH folder (FOLDERS, as the loader searches
    them) holds a file of, or that an LD_PRELOAD entry names (libcublas.so.13.1.0.3 -> libcublas.so.13): where the
    copy a program gets of one may not be its framework's own. Empty: nothing to ask (no child, no cost)."""
    from cudnn_doctor.variables import preload_entries

    sonames = sorted({soname for row in load("process_env").get("cuda_library", [])
                      for soname in row["sonames"].values()})
    present: set[str] = set()
    for folder in dict.fromkeys(folders):  # each folder once (a long LD_LIBRARY_PATH repeats them), and one stat for
        if os.path.isdir(folder or "."):  # one that is none (ld.so's search skips it as well)
            present.update(soname for soname in sonames if os.path.lexists(os.path.join(folder, soname)))
    found = [soname for soname in sonames if soname in present]
    for entry in preload_entries(env):
        name = os.path.basename(entry)
        found += [soname for soname in sonames if name == soname or name.startswith(soname + ".")]
    return tuple(dict.fromkeys(found))


def broken_in_own_wheels(frameworks: list[Framework], env: dict[str, str] | None = None,
                         cwd: str | None = None) -> tuple[str, ...]:
    """The sonames of compat's [[cuda_library]] rows of which a Python framework's own wheels (SITE/nvidia/*/lib, the
    folders its own code and its libraries' RUNPATH take them from by full path) hold a file the loader cannot use:
    not ELF (a Git LFS pointer), cut short, for another machine, or a link to nothing. The framework maps that copy
    before any on LD_LIBRARY_PATH, so only its own loading child can say what it does: these sonames are asked there
    as those on the path are (nothing is started where every copy reads whole). And a PYTHONPATH folder's own
    nvidia/*/lib: torch's code globs sys.path for its wheels' libraries, and PYTHONPATH comes before site-packages;
    and the working folder CWD's (`python -c`, the REPL and a script kept there put it first), unless PYTHONSAFEPATH."""
    sonames = {soname for row in load("process_env").get("cuda_library", []) for soname in row["sonames"].values()}
    broken: list[str] = []
    sites = dict.fromkeys(str(f.details.get("site_packages") or "") for f in frameworks if f.name in ("torch", "jax"))
    shadows = [entry for entry in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if entry][:16]
    shadows += [cwd] if cwd and working_folder_first(env or {}, cwd) else []
    for site in [*[s for s in sites if s][:8], *(shadows if any(sites) else [])]:
        # a shadow's copy that the loader refuses is refused by the framework's code too, which swallows it, and its
        # libraries' RUNPATH then find the wheels' own: only one cut short, which kills the code opening it, counts
        shadow = site not in sites
        for folder in sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib")))[:32]:
            try:
                names = sorted(n for n in os.listdir(folder)[:4096] if n in sonames)
            except OSError:
                continue
            broken += [name for name in names if name not in broken and (problem := unusable(
                os.path.join(folder, name))) and (not shadow or problem.startswith("truncated"))]
        if shadow:
            continue
        # gone, or of another size than pip wrote (another release copied over it: its headers read whole)
        broken += [name for name, (path, size) in recorded(site, sonames).items() if name not in broken and (
            not os.path.lexists(path) or (size is not None and os.path.isfile(path) and os.stat(path).st_size != size))]
    return tuple(broken)


def working_folder_first(env: dict[str, str], cwd: str | None) -> bool:
    """Whether a Python started in CWD as `python -c` (the REPL, a script kept there) searches CWD first, and CWD holds
    an nvidia folder there, which torch's code searches for its wheels' libraries: PYTHONSAFEPATH unset, CWD not /."""
    return bool(cwd) and not env.get("PYTHONSAFEPATH") and os.path.realpath(cwd or "/") != "/" and \
        os.path.isdir(os.path.join(cwd or "", "nvidia"))


def cut_short_in(folder: str) -> bool:
    """Whether FOLDER's nvidia/*/lib holds a [[cuda_library]] soname cut short (what kills the code that opens it)."""
    sonames = {soname for row in load("process_env").get("cuda_library", []) for soname in row["sonames"].values()}
    for lib in sorted(glob.glob(os.path.join(glob.escape(folder), "nvidia", "*", "lib")))[:32]:
        try:
            names = [n for n in os.listdir(lib)[:4096] if n in sonames]
        except OSError:
            continue
        if any((unusable(os.path.join(lib, name)) or "").startswith("truncated") for name in names):
            return True
    return False


def listed_in_records(site: str, sonames: set[str]) -> dict[str, str]:
    """{soname: its file} for each of SONAMES that an nvidia-* wheel's RECORD in SITE lists under nvidia/*/lib/: the
    files pip wrote, whether or not they are still there."""
    return {name: path for name, (path, _) in recorded(site, sonames).items()}


def recorded(site: str, sonames: set[str]) -> dict[str, tuple[str, int | None]]:
    """{soname: (its file, the size its wheel's RECORD gives it, or None)} for each of SONAMES an nvidia-* wheel's
    RECORD in SITE lists under nvidia/*/lib/ (PEP 376: path, hash, size)."""
    found: dict[str, tuple[str, int | None]] = {}
    for record in sorted(glob.glob(os.path.join(glob.escape(site), "nvidia_*.dist-info", "RECORD")))[:64]:
        for path, size in record_rows(record):
            parts = path.split("/")
            if len(parts) == 4 and parts[0] == "nvidia" and parts[2] == "lib" and parts[3] in sonames:
                listed = (os.path.join(site, *parts), int(size) if ascii_digits(size) and len(size) <= 15 else None)
                first = found.setdefault(parts[3], listed)
                if first[0] == listed[0] and first[1] != listed[1]:  # listed twice, of two sizes: it gives none
                    found[parts[3]] = (first[0], None)
    return found


def record_rows(record: str) -> list[tuple[str, str]]:
    """(path, size) for each row of the wheel's RECORD file RECORD (its first 4 MiB) read as the installer writes it
    and reads it (a CSV file: a field with a comma or a quote is quoted), whose path names a file inside the
    installation: relative, no '.' or '..' part, no empty part (a row climbing out, `../../etc/passwd`, names
    nothing of the wheel's). Rows that are no CSV are left out."""
    import csv

    from cudnn_doctor.user_files import read_text_or_empty

    rows: list[tuple[str, str]] = []
    for line in read_text_or_empty(record, 4 << 20).splitlines():
        try:
            fields = next(csv.reader([line]), [])
        except csv.Error:
            continue
        parts = fields[0].split("/") if fields else []
        if not parts or any(part in ("", ".", "..") or "\x00" in part for part in parts):
            continue
        rows.append((fields[0], fields[2].strip() if len(fields) >= 3 else ""))
    return rows


def replaced(path: str, site: str) -> str | None:
    """PATH (a file of an nvidia-* wheel in SITE) in words where its size is not the one its wheel's RECORD gives it:
    another file was put in its place (another release copied over it) or it was cut; None where they agree or the
    RECORD gives none. A stat, no read of the file."""
    entry = recorded(site, {os.path.basename(path)}).get(os.path.basename(path))
    if entry is None or entry[1] is None or os.path.realpath(entry[0]) != os.path.realpath(path):
        return None
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    return None if size == entry[1] else f"{size} bytes, where its wheel's RECORD gives {entry[1]}"


def library_spec(framework: Framework | None, site: str, sonames: tuple[str, ...]) -> dict[str, Any] | None:
    """What the loading child asks of the CUDA libraries for FRAMEWORK (None: a program that opens them by name):
    its own preloading code ([[library_loading]]), the libraries of SONAMES for its CUDA major (every major for
    the loader by name) with the functions frameworks call and the one that answers their release, and the folders
    its own libraries' DT_RUNPATH names."""
    rows = load("process_env").get("cuda_library", [])
    major = _cuda_major(framework) if framework is not None else None
    loading = _row_for(framework, site, "library_loading") if framework is not None and site != "-" else None
    # and those it needs at start: where its own code did not map its wheel's copy (a dependency refused), the copy
    # it then gets is asked too (one its code mapped answers at once)
    at_start = set(loading.get("at_start", [])) if loading is not None else set()
    libraries: list[list[Any]] = []
    for row in rows:
        for key, soname in sorted(row["sonames"].items()):
            if (soname in sonames or row["stem"] in at_start) and (major is None or key == major) and \
                    soname not in [entry[0] for entry in libraries]:
                libraries.append([soname, list(row["symbols"]), row["version"], row["version_kind"],
                                  list(row.get("prefixes", []))])
    if not libraries:
        return None
    recipe, runpath, binders = None, [], []
    if framework is not None and site != "-":
        if loading is not None:
            recipe = [loading["file"], loading["call"], list(loading["functions"]), list(loading["args"]),
                      dict(loading.get("modules", {}))]
            runpath = _runpath_of(site, loading.get("runpath_from", []))
            binders = [path for pattern in loading.get("binds_from", [])
                       for path in sorted(glob.glob(os.path.join(glob.escape(site), pattern)))[:2]]
        if not runpath:  # the wheels' layout: nvidia/<part>/lib, nvidia/cu<major>/lib
            runpath = sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib")))
    # binders: the framework's own libraries whose undefined symbols the child asks each copy for (dlvsym); named:
    # soname -> [the prefix of the names its binders look up with dlsym when first called, longer prefixes of others]
    prefixes = dict(loading.get("names_from", {})) if loading is not None and binders else {}
    named = {entry[0]: [prefixes[_stem(entry[0])], sorted(p for p in prefixes.values() if p != prefixes[_stem(
        entry[0])] and p.startswith(prefixes[_stem(entry[0])]))] for entry in libraries if _stem(entry[0]) in prefixes}
    return {"recipe": recipe, "libraries": libraries, "runpath": runpath, "binders": binders[:8], "named": named}


def _stem(soname: str) -> str:
    return soname.split(".so")[0]


def _cuda_major(framework: Framework) -> str | None:
    text = str(framework.cuda_built_for or "")
    major = text.split(".")[0]
    return major if ascii_digits(major) else None


def needed_by(framework: Framework | None) -> tuple[str, ...]:
    """The sonames the framework's own libraries ([[library_loading]] runpath_from: torch/lib/libtorch_cuda.so, JAX's
    xla_cuda_plugin.so) need (DT_NEEDED), read from their ELF headers: one the loader refuses ends its import."""
    site = str(framework.details.get("site_packages") or "") if framework is not None else ""
    row = _row_for(framework, site, "library_loading") if framework is not None and site else None
    if row is None:
        return ()
    from cudnn_doctor.elf import ElfError, read_elf

    found: list[str] = []
    for pattern in row.get("runpath_from", []):
        for path in sorted(glob.glob(os.path.join(glob.escape(site), pattern)))[:4]:
            try:
                found += [name for name in read_elf(path).needed if name not in found]
            except (ElfError, OSError):
                continue
    return tuple(found[:128])


def _runpath_of(site: str, libraries: list[str]) -> list[str]:
    """The folders the DT_RUNPATH (or DT_RPATH) of the framework's own LIBRARIES (globs in SITE) names, $ORIGIN
    expanded, that exist: where its libraries find a CUDA library its own code did not map (read from their ELF
    headers)."""
    from cudnn_doctor.elf import ElfError, read_elf

    folders: list[str] = []
    for pattern in libraries:
        for path in sorted(glob.glob(os.path.join(glob.escape(site), pattern)))[:4]:
            try:
                info = read_elf(path)
            except (ElfError, OSError):
                continue
            origin = os.path.dirname(path)
            for entry in (*info.runpath, *info.rpath):
                folder = os.path.normpath(entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
                if os.path.isdir(folder) and folder not in folders:
                    folders.append(folder)
    return folders


def with_how_it_came(library: SeenLibrary, ctx: SearchContext) -> SeenLibrary:
    """LIBRARY with its file resolved and how that copy came into the program (probes/origin: an LD_PRELOAD entry
    as written, an LD_LIBRARY_PATH folder or one of its glibc-hwcaps subfolders, the framework's own wheel, its
    libraries' RUNPATH, or the loader's cache and system folders)."""
    if not library.path:
        return dataclasses.replace(library, real=None, via=SYSTEM, via_entry=None,
                                   own_real=os.path.realpath(library.own) if library.own else None)
    via, entry = origin(library.path, library.soname, ctx, own=library.own, runpath=library.how == "RUNPATH")
    return dataclasses.replace(library, real=os.path.realpath(library.path), via=via, via_entry=entry,
                               own_real=os.path.realpath(library.own) if library.own else None)


def with_wheel_facts(library: SeenLibrary, framework: Framework | None) -> SeenLibrary:
    """LIBRARY as seen, with what the files say of it: the toolkit's link stub it is, the copy the framework's own
    nvidia-* wheel holds under its soname, and what the framework's metadata asks of that wheel (Requires-Dist)."""
    from cudnn_doctor.probes.process_env import link_stub

    stub = link_stub(library.path) if library.path else ""
    own, pinned, own_release, distribution = None, None, None, None
    site = str(framework.details.get("site_packages") or "") if framework is not None else ""
    if site:
        copies = sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib", glob.escape(library.soname))))
        if not copies and not library.ok:  # its wheel's file gone: where pip wrote it (the wheel's RECORD)
            copies = list(listed_in_records(site, {library.soname}).values())
        own = copies[0] if copies else None
        distribution = _owner(site, own) if own else None
        own_release = distribution[1] if distribution else None
        requirements = framework.details.get("nvidia_requirements") if framework is not None else None
        if distribution and isinstance(requirements, dict) and requirements.get(distribution[0]):
            pinned = f"{distribution[0]}{requirements[distribution[0]]}"
        elif own is None and isinstance(requirements, dict):  # its wheel not installed: what its metadata asks of it
            pinned = pin_without_wheel(library.soname, requirements)
    return dataclasses.replace(library, stub=stub or None, own=own, pinned=pinned, own_release=own_release,
                               own_wheel=f"{distribution[0]}=={distribution[1]}" if own and distribution else None,
                               own_problem=unusable(own) if own and not library.ok else None,
                               own_replaced=replaced(own, site) if own and library.ok else None)


def unusable(path: str) -> str | None:
    """Why the loader cannot use PATH as a library of this machine, read from its headers (not ELF, cut short, built
    for another machine, a link to nothing); None where it reads whole."""
    from cudnn_doctor.elf import ElfError, host_arch, read_elf

    if not os.path.lexists(path):
        return "missing (its wheel's RECORD lists it; the file is gone)"
    if not os.path.exists(path):
        return "a link to nothing"
    try:
        arch = read_elf(path).arch
    except ElfError as error:
        return str(error)
    except OSError as error:
        return f"cannot read it: {error.strerror or error}"
    return None if arch == host_arch() else f"built for {arch}, not for this machine ({host_arch()})"


def pin_without_wheel(soname: str, requirements: dict[str, str]) -> str | None:
    """What a framework's metadata asks (REQUIREMENTS: its Requires-Dist of nvidia-* wheels) of the wheel that ships
    SONAME (compat/first_use.toml [[library_wheel]]: libcublas.so.12 -> nvidia-cublas, -cu12 or not), where that
    wheel is not installed; None where it asks nothing of it."""
    stem = _stem(soname)
    wheel = next((row["wheel"] for row in load("first_use").get("library_wheel", []) if stem in row["stems"]), None)
    if wheel is None:
        return None
    for name, spec in requirements.items():
        if re.sub(r"-cu\d+$", "", str(name)) == wheel and spec:
            return f"{name}{spec}"
    return None


def _owner(site: str, path: str) -> tuple[str, str] | None:
    """(distribution, version) of the nvidia-* wheel whose RECORD lists PATH (a file in SITE), read from its
    dist-info; None where none does."""

    relative = os.path.relpath(path, site)
    for record in sorted(glob.glob(os.path.join(glob.escape(site), "nvidia_*.dist-info", "RECORD")))[:64]:
        if any(listed == relative for listed, _size in record_rows(record)):
            name, _, version = os.path.basename(os.path.dirname(record))[:-len(".dist-info")].rpartition("-")
            return name.lower().replace("_", "-"), version
    return None


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            # a NUL (in a framework's words) as U+FFFD: FIELD is NUL once the line is read
            out.append({"t": "\t", "n": "\n", "\\": "\\", "0": "\ufffd"}.get(text[index + 1], text[index + 1]))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


FIELD = "\x00"  # between a line's fields once read: no path, loader's word or variable can hold a NUL


def _fields(line: bytes) -> str:
    """One line of the child's (its fields separated by tabs, a tab, newline or backslash inside one escaped: say())
    with its fields separated by FIELD, each unescaped and named as this process names files."""
    from cudnn_doctor.child import file_names

    return FIELD.join(file_names(_unescape(field)) for field in line.decode("utf-8", "surrogateescape").split("\t"))


def parse_answer(user: str, recipe: str | None, stdout: str | bytes, exit_code: int | None, timed_out: bool,
                 error: str | None) -> ObservedLoad:
    """The child's lines (those behind its mark only: a preloaded library's own output is not an answer) as an
    ObservedLoad; a child that died says in which step."""
    data = stdout if isinstance(stdout, bytes) else stdout.encode("utf-8", "surrogateescape")
    # whole lines only: a child killed inside a write longer than the pipe's atomic 4096 bytes leaves half of one
    lines = [_fields(line[len(MARK):]) for line in data.split(b"\n")[:-1] if line.startswith(MARK)]
    steps: list[LoadStep] = []
    mapped: list[str] = []
    front = version = None
    pending: tuple[str, str | None] | None = None
    done = False
    skipped = None
    refused: dict[str, tuple[str, str]] = {}  # sub-library -> the file the loader found and would not load, its words
    missing: dict[str, str] = {}  # sub-library -> where the loader looked and found no file of its name
    crashed: dict[str, str] = {}  # sub-library -> the file whose opening killed the forked copy that opened it
    taken: dict[str, str] = {}  # sub-library -> the file the loader takes for it (opened whole in a forked copy)
    libraries, library_recipe, died_at = _libraries_of(lines, exit_code, timed_out, error)
    for line in lines:
        key, _, value = line.partition(FIELD)
        if key.startswith("lib"):  # the CUDA libraries other than cuDNN: _libraries_of's
            continue
        if key == "asked":
            name, _, rest = value.partition(FIELD)
            path, _, words = rest.partition(FIELD)
            if words.startswith("opening it killed the process") and path != "-":  # mapped, then died: its file
                crashed[name] = path
            elif words == "ok" and path != "-":  # the file the loader takes: where cuDNN's own step fails, that one
                taken[name] = path
            elif words != "ok" and path != "-":
                refused[name] = (path, f"the loader refuses {path}: {words}")
            elif path == "-" and words.startswith("no such file as "):  # where the loader looks, and what is there
                missing[name] = words
        elif key == "mapped":
            mapped.append(value)
            if steps:
                steps[-1].mapped += (value,)
        elif key == "recipe":
            steps.append(LoadStep("recipe", value == "ok", value))
        elif key == "open-error":
            steps.append(LoadStep("open", False, value))
        elif key == "front":
            front = value or None
            steps.append(LoadStep("open", bool(value), "ok" if value else "nothing mapped"))
        elif key == "version":
            version = decode_cudnn(int(value)) if ascii_digits(value) and len(value) <= 20 else None
            pending = None
        elif key in ("no-recipe", "not-preloaded", "no-cudnn"):
            recipe = None  # its own code loads no cuDNN here: what its libraries' RUNPATH finds is the files' to say
            skipped = value
        elif key == "check-start":
            pending = (value, None)
        elif key == "check":
            name, status, said = (value.split(FIELD) + ["", ""])[:3]
            if said != "not exported":  # a front library without the checks (cuDNN 8's, a fake) says nothing here
                steps.append(LoadStep(name, status == "0", said or f"status {status}", _sublibrary_of(name)))
            pending = None
        elif key == "later-start":
            name, _, target = value.partition(FIELD)
            pending = (name, target)
        elif key == "later":
            name, _, said = value.partition(FIELD)
            file = said[len("the loader refuses "):].split(": ", 1)[0] if said.startswith("the loader refuses /") else None
            steps.append(LoadStep(name, said == "ok", said, name, refused=file))
            pending = None
        elif key == "later-died" and pending is not None:  # the grandchild that opened the engines died there
            died_at = f"{value} while loading {pending[0]}"
            steps.append(LoadStep(pending[0], False, died_at, pending[0]))
            pending = None
        elif key == "done":
            done = True
    died = None
    if not done:
        how = "did not finish in time" if timed_out else _how_it_died(exit_code, error)
        if pending is not None:
            library = pending[0] if pending[1] is not None else _sublibrary_of(pending[0])
            died = f"{how} while loading {library}" + (f" ({pending[1]})" if pending[1] else "")
            steps.append(LoadStep(pending[0], False, died, library))
        else:
            died = how
    steps = [_with_loader_words(step, refused, missing, crashed, taken) for step in steps]
    if skipped is not None or not lines:  # its own code loads no cuDNN here (or it was asked none: the CUDA
        # libraries alone), or the child never got as far as a word
        return ObservedLoad(user, None, None, (), tuple(mapped), None, None, libraries, library_recipe,
                            library_recipe_died_at=died_at)
    return ObservedLoad(user, front, version, tuple(steps), tuple(mapped), recipe, died, libraries, library_recipe,
                        library_recipe_died_at=died_at)


def _libraries_of(lines: list[str], exit_code: int | None, timed_out: bool,
                  error: str | None) -> tuple[tuple[SeenLibrary, ...], str | None, str | None]:
    """The CUDA libraries other than cuDNN in the child's lines (_load_jobs.libraries): one SeenLibrary each that
    it asked, and what the framework's own preloading code said. A library whose forked copy died is refused with
    how, naming the file it was opening; where the child itself ended before it said libs-done, the library it was
    at, or its preloading code, is said so, with the file that code was opening (the third of the answer)."""
    out: list[SeenLibrary] = []
    recipe: str | None = None
    recipe_pending: str | None = None
    recipe_opening: str | None = None  # the last file its preloading code announced it opens
    died_at: str | None = None
    pending: str | None = None
    trying: dict[str, str] = {}
    done = False
    for line in lines:
        key, _, value = line.partition(FIELD)
        parts = value.split(FIELD)
        if key == "lib-recipe-start":
            recipe_pending = value
        elif key == "lib-recipe-try" and recipe_pending:
            recipe_opening = value
        elif key == "lib-recipe":
            recipe, recipe_pending = f"{recipe_pending}: {value}" if recipe_pending else value, None
        elif key == "lib-start":
            pending = value
        elif key == "lib-try" and len(parts) >= 2:
            trying[parts[0]] = parts[1]
        elif key == "lib" and len(parts) >= 4:
            soname, how, path, said = parts[0], parts[1], parts[2], "\t".join(parts[3:])
            out.append(SeenLibrary(soname, how, None if path == "-" else path, said))
            pending = None
        elif key == "lib-missing" and len(parts) >= 2 and out and out[-1].soname == parts[0]:
            out[-1] = dataclasses.replace(out[-1], missing=tuple(n for n in parts[1].split(",") if n))
        elif key == "lib-version" and len(parts) >= 2 and out and out[-1].soname == parts[0]:
            out[-1] = dataclasses.replace(out[-1], version=_decoded(parts[0], parts[1]))
        elif key == "lib-bound" and len(parts) >= 2 and out and out[-1].soname == parts[0] and \
                ascii_digits(parts[1]) and len(parts[1]) <= 9:
            out[-1] = dataclasses.replace(out[-1], bound=int(parts[1]))
        elif key == "lib-unbound" and len(parts) >= 3 and out and out[-1].soname == parts[0]:
            out[-1] = dataclasses.replace(out[-1], binder=parts[1],
                                          unbound=tuple(n for n in parts[2].split(",") if n)[:9])
        elif key == "lib-died" and len(parts) >= 2:
            out.append(SeenLibrary(parts[0], "died", trying.get(parts[0]), parts[1]))
            pending = None
        elif key == "libs-done":
            done = True
    if not done and (pending or recipe_pending):
        how = "did not finish in time" if timed_out else _how_it_died(exit_code, error)
        if pending:
            out.append(SeenLibrary(pending, "died", trying.get(pending), f"{how} while loading {pending}"))
        else:
            recipe = f"{recipe_pending}: {how}" + (f" while opening {recipe_opening}" if recipe_opening else "")
            died_at = recipe_opening
    return tuple(out), recipe, died_at


def _decoded(soname: str, raw: str) -> str | None:
    """A library's answer to its version function as a dotted release, by its [[cuda_library]] row's scale (an
    integer split into parts); a dotted answer as it is."""
    if not raw:
        return None
    if not ascii_digits(raw):
        return raw if all(ascii_digits(p) and len(p) <= 20 for p in raw.split(".")) else None
    if len(raw) > 20:  # no release function answers more than a 64-bit number: another writer's line
        return None
    row = next((r for r in load("process_env").get("cuda_library", []) if soname in r["sonames"].values()), None)
    scale = [int(n) for n in (row or {}).get("scale", [])]
    if not scale:
        return raw
    number, parts = int(raw), []
    for unit in scale:
        parts.append(str(number // unit))
        number %= unit
    return ".".join(parts)


def _with_loader_words(step: LoadStep, refused: dict[str, tuple[str, str]], missing: dict[str, str],
                       crashed: dict[str, str], taken: dict[str, str]) -> LoadStep:
    """A failed step whose sub-library's file the loader itself refused, in the loader's words (which name the cause:
    a dependency it cannot find, a C library too old) before cuDNN's status or how the child died; one whose
    sub-library no folder the loader searches holds, with those folders and the files there it never takes for it
    (cuDNN's front library ends the program with SIGABRT where that is its graph library: the cause is the file
    missing, not a file broken); one whose file killed the copy that opened it, with that file; one whose file the
    loader took, with that file."""
    if step.ok:  # cuDNN went on; where the loader refused the file it found first, with another file: said
        first = refused.get(step.library or "")
        return dataclasses.replace(step, refused_first=first[1], refused_first_file=first[0]) if first else step
    found = refused.get(step.library or "")
    if found:
        return dataclasses.replace(step, said=f"{found[1]} ({step.said})", refused=found[0])
    died_on = crashed.get(step.library or "")
    if died_on:  # the loader mapped it and the process died of it (a cut-short file: SIGBUS): that file, broken
        return dataclasses.replace(step, said=f"{step.said} ({died_on})", refused=died_on)
    nowhere = missing.get(step.library or "")
    if nowhere:
        return dataclasses.replace(step, said=f"{nowhere} ({step.said})")
    loaded = taken.get(step.library or "")  # the loader took this file, and cuDNN's step with it failed: that file
    return dataclasses.replace(step, refused=loaded) if loaded and not step.refused else step


def _how_it_died(exit_code: int | None, error: str | None) -> str:
    import signal

    if exit_code is not None and exit_code < 0:
        try:
            return f"the process was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"the process was killed by signal {-exit_code}"
    if exit_code is not None and exit_code > 128:
        try:
            return f"the process was killed by {signal.Signals(exit_code - 128).name}"
        except ValueError:
            pass
    return error or f"the process exited with status {exit_code}"


def _sublibrary_of(check: str) -> str | None:
    """cudnnOpsVersionCheck -> libcudnn_ops.so.9, from the [[version_check]] rows; cudnnGetVersion, the front
    library's first call, loads the first of them (cuDNN 9's front forwards every call to libcudnn_graph)."""
    for row in load("process_env").get("version_check", []):
        if check == "cudnnGetVersion" and row["loads"]:
            return f"{row['loads'][0]}.so.{row['major']}"
        if check in row["checks"]:
            return f"{row['loads'][row['checks'].index(check)]}.so.{row['major']}"
    return None
