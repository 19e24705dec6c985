"""`check --deep` on a node's GPUs: an NCCL all-reduce through torch.distributed, one process per GPU, as torchrun
starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, a free MASTER_PORT). Started by the child runner
(probes/nccl.py); imports only the standard library itself, torch in each rank.

Usage: python -I _allreduce_child.py launch WORLD MIB ITERATIONS DEADLINE_S SITE_PACKAGES [HERE BOOT]
Each rank is started as a program of the user's imports torch (BOOT: probes/deep.py's, `python -c BOOT THIS rank`):
PYTHONPATH and the user's site-packages in force for torch's import, not for this script's own; in the working folder
HERE, without it on sys.path (--deep's framework child names a module there that shadows torch).
Prints one JSON object: ok, world_size, bytes, ms, algbw_gbs, busbw_gbs (nccl-tests: algbw * 2 (n - 1) / n),
nccl_version, library (the libnccl the ranks mapped), can_access_peer ("0-1": cuDeviceCanAccessPeer, through
torch), last_words (NCCL's WARN lines and the error, as printed), timed_out, error. The launcher kills its ranks at
DEADLINE_S, so a hang is an answer quoting what NCCL said before it, never a hang of the doctor.
"""

import json
import os
import socket
import subprocess
import sys
import time


def launch(world, mib, iterations, deadline_s, site, here="", boot=""):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ranks = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.setdefault("NCCL_DEBUG", "WARN")  # NCCL's own last words, where the user asked for nothing else
        start = [sys.executable, "-c", boot] if boot else [sys.executable, "-I"]
        ranks.append(subprocess.Popen(start + [os.path.abspath(__file__), "rank", str(mib), str(iterations), site,
                                               here], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True))
    deadline = time.monotonic() + deadline_s
    outputs = [None] * world
    timed_out = False
    for index, process in enumerate(ranks):
        try:
            outputs[index] = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            break
    for index, process in enumerate(ranks):
        if process.poll() is None:
            try:
                os.killpg(process.pid, 9)
            except OSError:
                pass
        if outputs[index] is None:
            outputs[index] = process.communicate()
    answers = []
    words = []
    for out, err in outputs:
        answers.append(_last_json(out.decode("utf-8", "replace")))
        # NCCL writes its log to stdout (NCCL_DEBUG_FILE unset), Python and torch to stderr
        text = out.decode("utf-8", "replace") + "\n" + err.decode("utf-8", "replace")
        words += [line.strip() for line in text.splitlines() if not line.startswith("{")
                  and ("NCCL WARN" in line or "Error" in line)][-6:]
    first = answers[0] or {}
    failed = next((a for a in answers if a and not a.get("ok")), None)
    answer = dict(first)
    answer["world_size"] = world
    answer["ok"] = bool(not timed_out and first.get("ok") and all(a and a.get("ok") for a in answers))
    answer["timed_out"] = timed_out
    if failed is not None:
        answer["error"] = failed.get("error")
    elif timed_out:
        answer["error"] = f"the all-reduce did not finish within {deadline_s:g} s (a rank hangs)"
    elif not answer["ok"]:
        codes = [p.returncode for p in ranks]
        answer["error"] = f"a rank ended without an answer (exit {codes})"
    seen = []
    for line in words + ([answer["error"]] if answer.get("error") else []):
        if line and line not in seen:
            seen.append(line[:500])
    answer["last_words"] = seen[-8:]
    sys.stdout.write(json.dumps(answer))


def _last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _as_the_program_has_it(here):
    """sys.path as Python set it up for a program started here (BOOT kept it in _DOCTOR_PATH: PYTHONPATH's folders in
    their places), the working folder off it; the modules this script imported forgotten (a json.py on PYTHONPATH is
    what torch's import would get); in the working folder HERE, where it can be entered."""
    path = globals().get("_DOCTOR_PATH")
    if path is not None:
        sys.path[:] = [p for p in path if p not in ("", ".")]
        at_start = globals().get("_DOCTOR_AT_START") or ()
        for module in [m for m in sys.modules if m not in at_start]:
            del sys.modules[module]
    if here and os.path.isdir(here) and os.access(here, os.X_OK):
        os.chdir(here)


def rank(mib, iterations, site, here=""):
    _as_the_program_has_it(here)
    if site and site not in sys.path:
        sys.path.insert(0, site)
    answer = {"ok": False}
    try:
        import torch
        import torch.distributed as dist

        index = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
        torch.cuda.set_device(index)
        if index == 0:
            answer["can_access_peer"] = {f"{a}-{b}": bool(torch.cuda.can_device_access_peer(a, b))
                                         for a in range(world) for b in range(world) if a != b}
        dist.init_process_group("nccl", device_id=torch.device("cuda", index))
        count = mib * (1 << 20) // 4
        x = torch.full((count,), float(index + 1), device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        expected = world * (world + 1) / 2
        if float(x[0]) != expected or float(x[-1]) != expected:
            raise RuntimeError(f"the all-reduce gave {float(x[0])} where {expected} was due")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        start.record()
        for _ in range(iterations):
            dist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / iterations
        algbw = count * 4 / (ms / 1000) / 1e9
        answer.update(ok=True, bytes=count * 4, ms=round(ms, 4), algbw_gbs=round(algbw, 2),
                      busbw_gbs=round(algbw * 2 * (world - 1) / world, 2),
                      nccl_version=".".join(str(part) for part in torch.cuda.nccl.version()),
                      library=_mapped("libnccl"))
        dist.destroy_process_group()
    except BaseException as error:  # every failure is the answer
        answer["error"] = (f"{type(error).__name__}: {error}")[:1500]
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a failed process group's destructors may wait on the others: the answer is out, nothing to wait for


def _mapped(fragment):
    """The first file mapped into this process whose name starts with FRAGMENT; None where none is."""
    return next((path for path in _STDIO["mapped_files"]() if os.path.basename(path).startswith(fragment)), None)



def _keep_stdio():
    """Each of stdin, stdout and stderr a preloaded library closed is /dev/null again: _child_stdio.py, the one
    copy for every child script (they import only the standard library), run from its file; its namespace
    (mapped_files: what this process mapped) kept in _STDIO."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_stdio.py")
    with open(path) as source:  # read and closed first: it may hold the number of a closed descriptor meanwhile
        text = source.read()
    _STDIO["__file__"] = path  # its mapped_files finds _proc_maps.py beside it
    exec(compile(text, path, "exec"), _STDIO)


_STDIO = {"__name__": "_child_stdio"}


if __name__ == "__main__":
    _keep_stdio()
    if sys.argv[1] == "launch":
        launch(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6], *sys.argv[7:9])
    else:
        rank(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], *sys.argv[5:6])
