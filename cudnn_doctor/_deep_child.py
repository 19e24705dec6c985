"""Runs in a child process for `check --deep`: import one framework and say what it really loaded.

Usage: python -c BOOT _deep_child.py FRAMEWORK SITE_PACKAGES   (probes/deep.py's BOOT)

Started as a program of the user's would be, PYTHONPATH and the user's site-packages in force, but from a neutral
folder and without the working folder on sys.path (a `torch/` folder where the user stands is not the installed
torch); SITE_PACKAGES, the folder the framework was found in, is added with its .pth files where the interpreter
does not already have it. It may run under another Python than the
doctor's (the one that owns that site-packages), so it imports only the standard library and keeps
to old syntax. Answers one JSON line on stdout.
"""

import json
import os
import site
import sys
import time

STARTED = time.time()  # the child's own start: where its seconds go (benchmarks/deep_speed.py)


def mapped_cudnn():
    """The libcudnn files mapped into this process, bytes-safe (surrogateescape)."""
    return [path for path in _STDIO["mapped_files"]() if os.path.basename(path).startswith("libcudnn")]



def _own_site(folder):
    """Whether FOLDER is one of this interpreter's own site-packages folders (its user site included), or lies in the
    prefix of the program that was started (argv[0] as the doctor named it: a venv's bin/python3): with
    PYTHONEXECUTABLE naming another Python, site answers for that one, and a program started here does not have the
    venv's site-packages either (CPython's Modules/getpath.py)."""
    real = os.path.realpath(folder)
    started = (getattr(sys, "orig_argv", None) or [""])[0]
    if os.sep in started:
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(started)))
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) and real.startswith(os.path.realpath(prefix) + os.sep):
            return True
    try:
        own = list(site.getsitepackages()) + [site.getusersitepackages()]
    except (AttributeError, OSError):  # an old virtualenv's site module
        return False
    return any(os.path.realpath(path) == real for path in own if path)


def _as_the_program_has_it(answer):
    """sys.path as Python set it up for a program started here (PYTHONPATH's folders back in their places; the
    working folder first where the child was started there as `python -c` is and Python put it so), after the
    folders this script added, and the modules this script imported since Python started forgotten: the framework's
    imports then find what a program's would (a json.py on PYTHONPATH or in that folder included)."""
    path = globals().get("_DOCTOR_PATH")
    if path is None:  # started otherwise (an older parent): as it is
        return
    here = bool(globals().get("_DOCTOR_HERE"))
    restored = [p for p in path if here or p not in ("", ".")]
    added = [p for p in sys.path if p not in restored]
    first = [p for p in restored[:1] if p in ("", ".")]  # the working folder, where Python put it first: still first
    sys.path[:] = first + added + restored[len(first):]
    at_start = globals().get("_DOCTOR_AT_START") or ()
    for module in [m for m in sys.modules if m not in at_start]:
        del sys.modules[module]
    if here:
        answer["working_folder"] = os.getcwd()


def ask_torch(answer):
    import torch

    answer["version"] = torch.__version__
    answer["cuda"] = torch.version.cuda
    answer["cudnn_version"] = torch.backends.cudnn.version()
    answer["cuda_available"] = torch.cuda.is_available()
    answer["device_count"] = torch.cuda.device_count() if answer["cuda_available"] else 0
    if not answer["cuda_available"]:
        raise RuntimeError(f"torch.cuda.is_available() is False (torch.cuda.device_count() is {torch.cuda.device_count()})")
    answer["imported_at"] = round(time.time() - STARTED, 3)
    # a tiny cuDNN convolution and a cuDNN LSTM: the sub-libraries a program's first steps load
    x = torch.randn(2, 8, 16, 16, device="cuda")
    torch.nn.functional.conv2d(x, torch.randn(8, 8, 3, 3, device="cuda"), padding=1)
    torch.cuda.synchronize()
    answer["conv_ran"] = True
    lstm = torch.nn.LSTM(8, 16, batch_first=True).cuda()
    lstm(torch.randn(2, 5, 8, device="cuda"))
    torch.cuda.synchronize()
    answer["lstm_ran"] = True


def ask_tensorflow(answer):
    import tensorflow as tf

    info = tf.sysconfig.get_build_info()
    answer["version"] = tf.__version__
    answer["cuda"] = info.get("cuda_version")
    answer["cudnn_version"] = info.get("cudnn_version")
    answer["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]


def ask_jax(answer):
    # XLA's own settings, the user's XLA_FLAGS among them, as a program of theirs would have them: with autotuning
    # off XLA takes cuDNN's first engine only, which fails where a program's autotuning finds one that works (seen on
    # an H100 with the precompiled engines unloadable: JIT mode)
    import jax

    answer["version"] = jax.__version__
    devices = jax.devices()
    answer["devices"] = [str(d) for d in devices]
    answer["cache_entries_read"] = read_back_cache()
    gpus = [d for d in devices if getattr(d, "platform", None) == "gpu"]
    if not gpus:
        raise RuntimeError("JAX has no GPU: it runs on {}".format(", ".join(answer["devices"])))
    answer["devices_at"] = round(time.time() - STARTED, 3)
    # inputs copied in (no kernel compiled for them) and cuDNN's own layout (NHWC, no transposes around it): the
    # one module XLA compiles is the cuDNN convolution itself. One input goes in as a program's would, a host array
    # handed to the operation, and the result is read back: the two transfers JAX makes without being asked, which
    # its transfer guard (JAX_TRANSFER_GUARD=disallow) refuses in every program
    import numpy

    x = numpy.ones((2, 16, 16, 8), numpy.float32)
    w = jax.device_put(numpy.ones((3, 3, 8, 8), numpy.float32), gpus[0])
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y.block_until_ready()
    numpy.asarray(y)
    answer["conv_ran"] = True
    # the convolution is a cuDNN call, for which XLA assembles nothing: one fused kernel that calls a libdevice
    # function (exp) is what XLA compiles with ptxas and links with libdevice, as nearly every program's first
    # operation is (compat/first_use.toml): that proves or refutes what check read of them
    import jax.numpy as jnp

    z = jnp.exp(y * 0.0)
    z.block_until_ready()
    numpy.asarray(z)
    answer["kernel_ran"] = True


MAX_CACHE_ENTRIES, MAX_CACHE_BYTES = 512, 64 << 20


def read_back_cache():
    """With JAX's persistent-cache errors fatal (jax_raise_persistent_cache_errors) and its cache set, each entry of
    the cache read back through JAX's own reader (compilation_cache.decompress_executable, then
    extract_executable_and_time), as a program's compilation that hits it reads it, and raising as there: the
    doctor's convolution has a key of its own, which the cache may not hold, while a program started here hits the
    entries it wrote (round eighteen: cut entries failed JAX with 'Error -5 while decompressing data' and --deep's
    own work ran clean). The files are read, never written (JAX's cache.get would touch their access times). At most
    MAX_CACHE_ENTRIES entries and MAX_CACHE_BYTES; how many were read, or None where the switch is off (JAX warns and
    compiles again), no cache is set, or this JAX has no such reader."""
    try:
        from jax._src import compilation_cache, config
    except ImportError:  # a JAX without these modules (another layout, a stand-in): no such reader
        return None
    switch = getattr(config, "raise_persistent_cache_errors", None)
    folder = getattr(config, "compilation_cache_dir", None)
    enabled = getattr(config, "enable_compilation_cache", None)
    decompress = getattr(compilation_cache, "decompress_executable", None)
    extract = getattr(compilation_cache, "extract_executable_and_time", None)
    if switch is None or folder is None or decompress is None or extract is None or not switch.value:
        return None
    if not folder.value or (enabled is not None and not enabled.value):
        return None
    import stat

    try:
        names = sorted(name for name in os.listdir(folder.value) if name.endswith("-cache"))[:MAX_CACHE_ENTRIES]
    except OSError:  # a folder that cannot be listed: JAX's own first compilation meets it (its _get_cache)
        return None
    budget, read = MAX_CACHE_BYTES, 0
    for name in names:
        path = os.path.join(folder.value, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
            continue  # a FIFO, a link, a folder: never opened; past the budget: not read
        with open(path, "rb") as entry:
            data = entry.read(info.st_size + 1)
        budget -= len(data)
        extract(decompress(data))  # JAX's own words where it cannot: what the program's compilation raises
        read += 1
    return read


def frames_of(error, limit=48):
    """The frames ERROR was raised through, and those of the exceptions it was raised from or during (a framework
    that wraps a plugin's failure in its own words), outermost first: "file:line:function" each, the last LIMIT."""
    frames, seen = [], set()
    while error is not None and id(error) not in seen and len(seen) < 8:
        seen.add(id(error))
        chain = []
        tb = error.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            chain.append(f"{code.co_filename}:{tb.tb_lineno}:{code.co_name}")
            tb = tb.tb_next
        frames = chain + frames
        error = error.__cause__ or error.__context__
    return frames[-limit:]


def imported_elsewhere(site_packages, error=None):
    """Modules imported by now (top-level names) that came from somewhere else than SITE_PACKAGES and Python's own
    library while SITE_PACKAGES holds a copy of that name: the other copy a program got (a folder or zip on
    PYTHONPATH, the working folder, the user site, a sourceless .pyc). name -> the file it came from. A package whose
    own import failed is no longer in sys.modules: the modules ERROR's frames ran in are asked too."""
    import sysconfig

    home = os.path.realpath(site_packages) if site_packages else ""
    if not home or not os.path.isdir(home):
        return {}
    own = [os.path.realpath(p) for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")) if p]
    installed = set(name.split(".")[0] for name in os.listdir(home))
    found = {}
    places = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None) or ""
        if not origin and module is not None:
            spec = getattr(module, "__spec__", None)
            locations = list(getattr(spec, "submodule_search_locations", None) or ())
            origin = locations[0] if locations else ""
        places.append((name, origin))
    seen = set()
    while error is not None and id(error) not in seen and len(seen) < 8:
        seen.add(id(error))
        tb = error.__traceback__
        while tb is not None:
            places.append((str(tb.tb_frame.f_globals.get("__name__") or ""), tb.tb_frame.f_code.co_filename))
            tb = tb.tb_next
        error = error.__cause__ or error.__context__
    for name, origin in places:
        name = name.split(".")[0]
        if not name or name not in installed or name in found or not origin or origin.startswith("<"):
            continue
        real = os.path.realpath(origin)
        if real.startswith(home + os.sep) or any(real.startswith(folder + os.sep) for folder in own):
            continue
        found[name] = origin
        if len(found) >= 16:
            break
    return found


FRAMEWORKS = {"torch": ask_torch, "tensorflow": ask_tensorflow, "jax": ask_jax}
MAX_TEXT = 8 << 10  # characters of each end of a string the answer keeps (the runner keeps 8 MiB of the whole)


MAX_DEPTH = 32  # levels of nesting kept of what a framework answers
MAX_ITEMS = 1000  # items kept of each list or object it answers


def bounded(value, depth=MAX_DEPTH):
    """VALUE (the answer: dicts, lists, strings, numbers) with each string longer than 2 x MAX_TEXT cut to its two ends
    (an error's words name the library or status at either end), so that the answer always fits the channel whole:
    an exception whose message holds megabytes (a tensor's repr, a path list) is still the framework's answer. An
    integer str() cannot write (over 4,300 digits: ValueError), an object whose str() raises, what is nested deeper
    than MAX_DEPTH or holds more than MAX_ITEMS items are said in words, never a reason for the answer to be lost."""
    if isinstance(value, str):
        if len(value) <= 2 * MAX_TEXT:
            return value
        return f"{value[:MAX_TEXT]} [... {len(value) - 2 * MAX_TEXT} characters ...] {value[-MAX_TEXT:]}"
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else _text(value)  # the parent keeps its digits (json_values)
    if isinstance(value, (dict, list, tuple)) and depth <= 0:
        return f"(nested deeper than {MAX_DEPTH} levels)"
    if isinstance(value, dict):
        items = list(value.items())
        kept = dict((bounded(_text(key)), bounded(item, depth - 1)) for key, item in items[:MAX_ITEMS])
        if len(items) > MAX_ITEMS:
            kept["..."] = f"and {len(items) - MAX_ITEMS} more"
        return kept
    if isinstance(value, (list, tuple)):
        kept = [bounded(item, depth - 1) for item in value[:MAX_ITEMS]]
        return kept + ([f"... and {len(value) - MAX_ITEMS} more"] if len(value) > MAX_ITEMS else [])
    return bounded(_text(value))


def _text(value):
    """VALUE as text: its str(), or words where that raises (an integer past 4,300 digits, a __str__ that fails)."""
    try:
        return str(value) if not isinstance(value, int) or value.bit_length() < 14000 else \
            f"(an integer of {value.bit_length()} bits)"
    except Exception:  # noqa: BLE001 - whatever its __str__ raises, the answer is still written
        return f"(a {type(value).__name__} whose str() fails)"


def main(argv):
    name = argv[1]
    site_packages = argv[2] if len(argv) > 2 else ""
    if site_packages and site_packages not in sys.path and not _own_site(site_packages):
        # not this interpreter's own: first, with its .pth files (one of its own that a program started here does not
        # have on sys.path, a start-up hook or a setting took away: the framework is then not found, as there)
        site.addsitedir(site_packages)
        sys.path.remove(site_packages)
        sys.path.insert(0, site_packages)
    if "answer_fd" in _STDIO:  # up: its start-up (sitecustomize, .pth files) is done; the runner's start timeout ends
        try:
            os.write(_STDIO["answer_fd"](), b"\n")
        except OSError:  # no channel to say it on: the answer at the end says what it can
            pass
    answer = {}
    started = time.time()
    _as_the_program_has_it(answer)
    try:
        FRAMEWORKS[name](answer)
        answer["seconds"] = round(time.time() - started, 3)
        answer["mapped_cudnn"] = mapped_cudnn()
    except BaseException as error:  # the answer is data; the parent decides what it means
        answer["error"] = f"{type(error).__name__}: {error}"
        try:
            answer["traceback"] = frames_of(error)
            answer["elsewhere"] = imported_elsewhere(site_packages, error)
        except Exception:  # what the failure's frames say is more evidence, never a reason to lose the answer
            pass
        try:
            answer["mapped_cudnn"] = mapped_cudnn()
        except OSError:
            pass
    sys.stdout.flush()
    # the runner's answer channel, not stdout (which a library may print on), as it is now: a library the framework
    # loaded may have closed it (_child_stdio's answer_fd opens it again)
    data = ("\n" + json.dumps(bounded(answer), default=_text) + "\n").encode("utf-8", "surrogateescape")
    descriptor = _STDIO["answer_fd"]() if "answer_fd" in _STDIO else 1
    while data:
        data = data[os.write(descriptor, data):]
    os._exit(0)  # skip teardown: a framework's atexit handlers may hang or crash


def _keep_stdio():
    """Each of stdin, stdout and stderr a preloaded library closed is /dev/null again: _child_stdio.py, the one
    copy for every child script (they import only the standard library), run from its file; its namespace (its
    answer_fd: the answer channel as it is when the answer is written) kept in _STDIO."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_stdio.py")
    with open(path) as source:  # read and closed first: it may hold the number of a closed descriptor meanwhile
        text = source.read()
    _STDIO["__file__"] = path  # its mapped_files finds _proc_maps.py beside it
    exec(compile(text, path, "exec"), _STDIO)


_STDIO = {"__name__": "_child_stdio"}

if __name__ == "__main__":
    _keep_stdio()
    main(sys.argv)
