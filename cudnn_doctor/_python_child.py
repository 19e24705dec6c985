"""Runs in a framework's own Python, started as a program of the user's is (its site code, .pth files, sitecustomize
and PYTHONPATH in force; from a neutral folder, the working folder "" first on sys.path as `python -c` has it): ONE
start answers every question plain `check` asks of that Python (issue 45). probes/framework_python.py builds the
request from what each question needs and reads the answer; the questions' own modules say what the answers mean.

Usage: python -c BOOT _python_child.py REQUEST   (probes/framework_python.py's BOOT; REQUEST a JSON object)

REQUEST's keys, each a question (absent: not asked):
  "mapped": [names]     the GPU libraries whose file names start so that the process has mapped when its program's
                        first line runs: what the start-up hooks loaded (probes/python_start.py)
  "resolve": [names]    where `import NAME` would find each top-level name, as Python's own finders answer (nothing of
                        it runs), and the site-packages folders this Python calls its own (probes/python_start.py)
  "groups", "modules"   the entry points of those groups, as the framework asks importlib.metadata, with where each
                        plugin's module is; and where each module is found, with unchecked bytecode compiled from
                        another source named (probes/python_finder.py)
  "torch_visible": path torch's own NVML-based count of the GPUs CUDA_VISIBLE_DEVICES selects, its functions run
                        from the installed torch/cuda/__init__.py at PATH (probes/visible_devices.py)
  "numpy": true         numpy imported and one matrix product run, as a program's first numpy steps are
                        (probes/cpu_kernels.py)

Each answer is one line of JSON on the runner's answer channel, written as soon as it is known, in this order:
{"started": true} first (the program's first line ran), then "mapped", "resolved" with "own_sites", "finder", and
"numpy" last. numpy's question runs in a process forked at the first line (its start-up shared, its import the
longest question, side by side with the others); numpy refusing at import, or OpenBLAS dying of SIGILL, then ends
this process as it ended that one (numpy's own words on stderr) after the other answers are out. Paths are their bytes as UTF-8 with surrogate escapes. Standard library only,
old syntax: it runs under whatever Python 3 the framework's environment has.
"""

import os
import sys


def say(record):
    """RECORD (a dict) as one line of JSON on the answer channel (_child_stdio's answer_fd: opened again where a
    start-up hook closed it)."""
    import json

    data = (json.dumps(record) + "\n").encode("ascii")
    descriptor = _STDIO["answer_fd"]() if "answer_fd" in _STDIO else 1
    while data:
        data = data[os.write(descriptor, data):]


def text(path):
    """PATH (str or bytes) as its bytes read as UTF-8 with surrogate escapes: the doctor decodes it so, whatever
    this Python's file system encoding."""
    raw = path if isinstance(path, bytes) else os.fsencode(path)
    return raw.decode("utf-8", "surrogateescape")


def mapped(names):
    """The files this process has mapped whose names start with one of NAMES, each once (/proc/self/maps)."""
    prefixes = tuple(names)
    return [text(path) for path in _STDIO["mapped_files"]() if os.path.basename(path).startswith(prefixes)]



def resolved(names):
    """(name, the file `import NAME` finds: '' a namespace portion, '-' where no finder has it) for each top-level
    NAME, asked of each finder on sys.meta_path in turn (a spec: nothing of it runs)."""
    out = []
    for name in names:
        spec = None
        for finder in sys.meta_path:
            try:
                spec = finder.find_spec(name, None)
            except Exception:
                spec = None
            if spec is not None:
                break
        where = "-" if spec is None else (spec.origin or "") if spec.origin != "namespace" else ""
        out.append([name, text(where)])
    return out


def own_sites():
    """The site-packages folders this Python calls its own (site's answer: a program's sys.path lacks one only where
    a hook or a setting took it away)."""
    site = sys.modules.get("site")
    try:
        own = list(site.getsitepackages()) + [site.getusersitepackages()] if site else []
    except Exception:
        own = []
    return [text(folder) for folder in own]


def found(groups, modules):
    """What the framework's import will meet: each plugin GROUP's entry points (importlib.metadata, as the framework
    asks it; its own words where it raises) with where each one's module is, and where each of MODULES is found."""
    out = {"groups": {}, "modules": {}}
    try:
        import importlib.util
    except Exception:
        importlib = None
    for group in groups:
        try:
            from importlib.metadata import entry_points
            points = list(entry_points(group=group))
        except Exception as error:
            out["groups"][group] = {"raised": (type(error).__name__ + ": " + str(error))[:400]}
            continue
        entries = []
        for point in points[:64]:
            module = point.value.split(":")[0].strip()
            top = module.split(".")[0]
            try:
                spec = importlib.util.find_spec(top) if top else None
                where = "" if spec is None else (spec.origin or ",".join(spec.submodule_search_locations or ()))
                missing = spec is None
                said = "No module named " + repr(top) if missing else ""
            except Exception as error:
                where, missing, said = "", True, (type(error).__name__ + ": " + str(error))[:400]
            dist = getattr(point, "dist", None)
            entries.append({"name": point.name, "value": point.value, "module": top, "missing": missing,
                            "said": said, "where": where, "dist": str(getattr(dist, "_path", "") or "")})
        out["groups"][group] = {"entries": entries}
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except Exception as error:
            out["modules"][name] = {"error": (type(error).__name__ + ": " + str(error))[:300]}
            continue
        if spec is None:
            out["modules"][name] = None
            continue
        answer = {"origin": spec.origin or "", "locations": list(spec.submodule_search_locations or ())[:8],
                  "loader": type(spec.loader).__name__}
        other = foreign_build(answer["locations"][:1])
        if other:
            answer["foreign"] = other
        source = spec.origin or ""
        if source.endswith(".py") and os.path.isfile(source):
            try:  # PEP 552: a hash-based .pyc whose check is off runs whatever source it was compiled from
                cached = importlib.util.cache_from_source(source)
                with open(cached, "rb") as handle:
                    head = handle.read(16)
                flags = int.from_bytes(head[4:8], "little") if len(head) == 16 else 0
                if flags & 1 and not flags & 2:
                    with open(source, "rb") as handle:
                        if importlib.util.source_hash(handle.read()) != head[8:16]:
                            answer["stale"] = cached
            except Exception:
                pass
        out["modules"][name] = answer
    out["path"] = list(sys.path)[:64]
    try:
        import importlib.machinery
        out["suffixes"] = list(importlib.machinery.EXTENSION_SUFFIXES)[:8]
    except Exception:
        out["suffixes"] = []
    try:
        import sysconfig
        out["stdlib"] = [sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")]
    except Exception:
        out["stdlib"] = []
    return out


def foreign_build(folders):
    """The tags of a package's compiled modules (in FOLDERS, its first folder, up to 4000 entries deep 4) where every
    tagged one is for another interpreter or platform than this Python imports (importlib.machinery's
    EXTENSION_SUFFIXES, the interpreter's own list): a copy built for another Python, which this one cannot import.
    [] where one fits, none is tagged or nothing can be read."""
    import re
    try:
        import importlib.machinery
        ours = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    except Exception:
        return []
    tagged = re.compile(r"[^.]+(\.(?:cpython-|cp3|pypy|graalpy)[^.]*\.(?:so|pyd))$")
    tags, fits, seen = set(), False, 0
    pending = [(folder, 0) for folder in folders if isinstance(folder, str)]
    while pending and seen < 4000 and not fits:
        folder, depth = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < 4:
                        pending.append((entry.path, depth + 1))
                    continue
            except OSError:
                continue
            match = tagged.match(entry.name)
            if match is None:
                continue
            if match.group(1) in ours:
                fits = True
                break
            tags.add(text(match.group(1)))
    return [] if fits else sorted(tags)[:4]


def numpy_works():
    """numpy imported and one product through its BLAS; what it raises is not caught: its words go to stderr."""
    import numpy

    a = numpy.ones((64, 64))
    float((a @ a).sum())


def numpy_forked():
    """numpy's question in a process forked from this one, its start-up shared: it runs while this one answers the
    others (numpy's import is the longest of them). Its process id; None where there is no fork (Windows) or no
    process can be made (then numpy is asked in this one, after the others)."""
    if not hasattr(os, "fork"):
        return None
    import signal
    import warnings

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # ignored where the doctor was started so: the fork is waited for
    try:
        with warnings.catch_warnings():  # Python 3.12 warns where a start-up hook left a thread running
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:  # no process left under the user's limit: asked here, last
        return None
    if pid:
        return pid
    if "die_with_parent" in _STDIO:  # a fork does not keep the parent's death signal: ends with the one that waits
        _STDIO["die_with_parent"]()
    try:
        numpy_works()
    except BaseException:
        import traceback

        traceback.print_exc()  # numpy's words on stderr, as Python prints what nothing caught
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def numpy_answer(pid):
    """The forked question's end: its answer when it worked, else this process ends as it did (its exit status, or
    its signal), so the runner reads numpy's failure as from a child of its own."""
    if pid is None:
        numpy_works()
        say({"numpy": "worked"})
        return
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by someone else: how it ended is not known, numpy's answer stays unsaid
        return
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        say({"numpy": "worked"})
        return
    sys.stdout.flush()
    sys.stderr.flush()
    if os.WIFSIGNALED(status):
        import resource
        import signal

        try:  # the fork dumped its core where the system keeps them; this process leaves none beside it
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        except (ValueError, OSError):
            pass
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


TORCH_VISIBLE = ("_parse_visible_devices", "_raw_device_count_nvml", "_raw_device_uuid_nvml",
                 "_transform_uuid_to_ordinals", "_device_count_nvml")


def torch_visible(path):
    """How many GPUs torch's own NVML-based count gives in this environment: the functions TORCH_VISIBLE of the
    installed torch/cuda/__init__.py (PATH), taken from its source as they are (their annotations left out) and run
    here, where CUDA_VISIBLE_DEVICES is the user's and libnvidia-ml.so.1 is the one torch's CDLL finds, without
    importing torch (torch.version.hip: None, a CUDA build). torch.cuda.device_count() is this count wherever NVML
    answers (torch/cuda/__init__.py device_count: nvml_count unless negative). None where a function is missing."""
    import ast
    import typing
    import warnings

    with open(path, "rb") as handle:
        source = handle.read(4 << 20)
    tree = ast.parse(source, path)
    chosen = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in TORCH_VISIBLE]
    if sorted(node.name for node in chosen) != sorted(TORCH_VISIBLE):
        return None
    for node in ast.walk(ast.Module(body=chosen, type_ignores=[])):
        if isinstance(node, ast.FunctionDef):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(value=None)
    module = ast.fix_missing_locations(ast.Module(body=chosen, type_ignores=[]))

    class Version:
        hip = None

    class Torch:
        version = Version

    space = {"__name__": "torch.cuda", "os": os, "warnings": warnings, "cast": typing.cast, "torch": Torch}
    exec(compile(module, path, "exec"), space)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = space["_parse_visible_devices"]()
        count = space["_device_count_nvml"]()
    return {"count": int(count), "parsed": [str(entry)[:80] for entry in list(parsed)[:16]]}


def answer(make):
    """The record MAKE returns, said; where making or saying it raises (a start-up hook's finder or path entry of a
    kind no answer can hold), that question stays unanswered and the next is still asked."""
    try:
        say(make())
    except Exception:
        pass


def main(request):
    say({"started": True})
    numpy = numpy_forked() if request.get("numpy") else None
    if "mapped" in request:  # what start-up loaded, before this process imports anything more
        answer(lambda: {"mapped": mapped(request["mapped"])})
    if "resolve" in request:
        answer(lambda: {"resolved": resolved(request["resolve"]), "own_sites": own_sites()})
    if "groups" in request or "modules" in request:
        answer(lambda: {"finder": found(request.get("groups") or [], request.get("modules") or [])})
    if "torch_visible" in request:
        answer(lambda: {"torch_visible": torch_visible(request["torch_visible"])})
    if request.get("numpy"):
        numpy_answer(numpy)


def _keep_stdio():
    """Each of stdin, stdout and stderr a start-up hook closed is /dev/null again: _child_stdio.py, the one copy for
    every child script, run from its file; its namespace (answer_fd) kept in _STDIO."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_stdio.py")
    with open(path) as source:  # read and closed first: it may hold the number of a closed descriptor meanwhile
        code = source.read()
    _STDIO["__file__"] = path  # its mapped_files finds _proc_maps.py beside it
    exec(compile(code, path, "exec"), _STDIO)


_STDIO = {"__name__": "_child_stdio"}

def _own_imports(text):
    """The modules this script needs, imported while PYTHONPATH's folders are off sys.path (probes/framework_python's
    BOOT: a json.py or typing.py there would stop this script where the user's program may never import it); then
    sys.path as Python set it up for the program ("" first, as `python -c` has it; PYTHONPATH's folders in their
    places), for the questions about what the program's imports find. The request (REQUEST's JSON text), read."""
    import ast  # noqa: F401
    import importlib.machinery  # noqa: F401
    import importlib.util  # noqa: F401
    import json
    import re  # noqa: F401
    import signal  # noqa: F401
    import sysconfig  # noqa: F401
    import traceback  # noqa: F401
    import typing  # noqa: F401
    import warnings  # noqa: F401

    try:
        import resource  # noqa: F401
    except ImportError:  # not on Windows
        pass
    request = json.loads(text)
    if "groups" in request:
        try:
            import importlib.metadata  # noqa: F401
        except ImportError:  # before Python 3.8: found() answers without it
            pass
    path = globals().get("_DOCTOR_PATH")
    if path is not None:
        sys.path[:] = path
    return request


if __name__ == "__main__":
    _keep_stdio()
    main(_own_imports(sys.argv[1]))
