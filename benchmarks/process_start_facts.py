"""The process a program starts in, against the real frameworks on the GPU machine (issue 45): what the shell gives
every program besides its variables (a umask, signals left ignored, a stack limit, a PATH without the system's folders),
Python's start (the working folder first on sys.path, PYTHONSAFEPATH), the locale, glibc's tunables and malloc
variables, an unusable TMPDIR or HOME. Each case is set up alone, in a bash of its own, in a scratch folder; three
answers side by side: torch's first GPU work (a cuDNN convolution and LSTM), JAX's (a convolution), and what plain and
--deep `cudnn-doctor check` say (error and warning codes), and whether fix's env lines, sourced in that same bash,
make the failing judges work. A case that a judge fails and check names no code of is "missed"; one both judges pass
and check gives an error is "false_error". What it proves feeds compat/process_start.toml's `proof` (a row proven
here becomes a rule, an error) and README's 'What a program started here gets'.

The umask and SIGCHLD cases run as root and, where the user `nobody` exists, as it too (root reads files whatever
their mode; others do not): `--as-nobody` off by default, since the frameworks' files must then be readable by it.

  python3 benchmarks/process_start_facts.py --out DIR [--only NAME,...] [--no-doctor] [--as-nobody]
      [--no-deep] [--parallel N] [--budget-s S]
      (writes DIR/process_start_facts.json; three cases at once, JAX not preallocating; within --budget-s, default
      540 s: a case not started by then is "not run")
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/cudnn-doctor-process-start")
BASH = shutil.which("bash") or "/bin/bash"
TORCH = ("import torch\nx = torch.randn(8, 64, 56, 56, device='cuda')\n"
         "torch.nn.functional.conv2d(x, torch.randn(128, 64, 3, 3, device='cuda'), padding=1)\n"
         "lstm = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True).cuda()\n"
         "lstm(torch.randn(4, 20, 64, device='cuda'))\ntorch.cuda.synchronize()\nprint('torch ok', torch.__file__)\n")
JAX = ("import jax, jax.numpy as jnp\ngpus = [d for d in jax.devices() if d.platform == 'gpu']\n"
       "assert gpus, 'JAX has no GPU: %s' % jax.devices()\n"
       "x = jax.device_put(jnp.ones((8, 56, 56, 64)), gpus[0]); w = jax.device_put(jnp.ones((3, 3, 64, 128)), gpus[0])\n"
       "jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))"
       ".block_until_ready()\nprint('jax ok', jax.__file__)\n")
DEEP = True  # check --deep too (main's --no-deep)
RAISES = "raise ImportError('a module of the working folder, not the installed one')\n"


def cases(python_version: tuple[int, int]) -> list[dict[str, object]]:
    """Each: name, shell (a bash line run first), env (set), unset, files (relative to the case's folder: text),
    expect ("fails", "works", "?": what the sources say, to be measured)."""
    return [
        {"name": "baseline", "expect": "works"},
        {"name": "sigchld-ignored", "shell": "trap '' CHLD", "expect": "?"},  # XLA's ptxas child: waitpid ECHILD
        {"name": "sigchld-ignored-xla-nvptxcompiler", "shell": "trap '' CHLD", "expect": "?",
         "env": {"XLA_FLAGS": "--xla_gpu_enable_libnvptxcompiler=true"}},  # JAX compiling in-process: no child
        {"name": "sigpipe-ignored", "shell": "trap '' PIPE", "expect": "works"},
        {"name": "sigint-term-ignored", "shell": "trap '' INT TERM HUP", "expect": "works"},
        {"name": "umask-0777", "shell": "umask 0777", "expect": "?"},
        {"name": "umask-0277", "shell": "umask 0277", "expect": "?"},
        {"name": "ulimit-s-unlimited", "shell": "ulimit -s unlimited", "expect": "?"},
        {"name": "path-without-system", "env": {"PATH": os.path.dirname(sys.executable)}, "expect": "?"},
        {"name": "lc-ctype-utf8", "env": {"LC_CTYPE": "UTF-8"}, "expect": "works"},
        {"name": "lc-all-bogus", "env": {"LC_ALL": "xx_YY.NOPE"}, "expect": "works"},
        {"name": "lang-c", "env": {"LANG": "C", "LC_ALL": "C"}, "expect": "works"},
        {"name": "tmpdir-missing", "env": {"TMPDIR": "/nonexistent/tmp"}, "expect": "?"},
        {"name": "tmpdir-a-file", "env": {"TMPDIR": "/etc/hostname"}, "expect": "?"},
        {"name": "home-missing", "env": {"HOME": "/nonexistent/home"}, "expect": "?"},
        {"name": "glibc-static-tls-0", "env": {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=0"}, "expect": "?"},
        {"name": "glibc-tunable-typo", "env": {"GLIBC_TUNABLES": "glibc.malloc.arena_maxx=1"}, "expect": "works"},
        {"name": "malloc-perturb", "env": {"MALLOC_PERTURB_": "165", "MALLOC_CHECK_": "3"}, "expect": "?"},
        {"name": "cwd-torch-package", "files": {"torch/__init__.py": RAISES}, "expect": "fails"},
        {"name": "cwd-numpy-module", "files": {"numpy.py": RAISES}, "expect": "fails"},
        {"name": "cwd-typing-module", "files": {"typing.py": RAISES}, "expect": "fails"},
        {"name": "cwd-empty-torch-folder", "files": {"torch/.keep": ""}, "expect": "works"},  # a namespace portion
        {"name": "cwd-torch-package-safepath", "files": {"torch/__init__.py": RAISES},
         "env": {"PYTHONSAFEPATH": "1"}, "expect": "works" if python_version >= (3, 11) else "fails"},
        {"name": "cwd-sitecustomize", "files": {"sitecustomize.py": "raise SystemExit(3)\n"}, "expect": "works"},
        {"name": "pythonstartup-raising", "files": {"startup.py": "raise SystemExit(3)\n"},
         "env": {"PYTHONSTARTUP": "startup.py"}, "expect": "works"},  # read by the interactive interpreter only
        {"name": "bash-env-hides-gpus", "files": {"bash_env.sh": "export CUDA_VISIBLE_DEVICES=-1\n"},
         "env": {"BASH_ENV": "bash_env.sh"}, "expect": "fails"},
        # Python's and the loader's start-up, the user's home (round eleven's second wave): Python itself judges,
        # per release (PYTHON_GIL, PYTHON_CPU_COUNT, PYTHON_FROZEN_MODULES are read from 3.13 on)
        {"name": "pythonexecutable-system", "env": {"PYTHONEXECUTABLE": "/usr/bin/python3"}, "expect": "?"},
        {"name": "pythonexecutable-nowhere", "env": {"PYTHONEXECUTABLE": "/nonexistent/bin/python3"}, "expect": "?"},
        {"name": "python-gil-1", "env": {"PYTHON_GIL": "1"}, "expect": "works"},
        {"name": "python-gil-0", "env": {"PYTHON_GIL": "0"}, "expect": "fails" if python_version >= (3, 13) else "works"},
        {"name": "python-cpu-count-bogus", "env": {"PYTHON_CPU_COUNT": "many"},
         "expect": "fails" if python_version >= (3, 13) else "works"},
        {"name": "python-frozen-modules-bogus", "env": {"PYTHON_FROZEN_MODULES": "maybe"},
         "expect": "fails" if python_version >= (3, 13) else "works"},
        {"name": "ld-assume-kernel-2.4.1", "env": {"LD_ASSUME_KERNEL": "2.4.1"}, "expect": "?"},
        {"name": "ld-dynamic-weak", "env": {"LD_DYNAMIC_WEAK": "1"}, "expect": "works"},
        {"name": "ld-hwcap-mask-0", "env": {"LD_HWCAP_MASK": "0"}, "expect": "?"},
        {"name": "pythonuserbase-usercustomize-system-cudnn",
         "files": {f"userbase/lib/python{python_version[0]}.{python_version[1]}/site-packages/usercustomize.py":
                   "import ctypes, glob\nfor f in sorted(glob.glob('/usr/lib/x86_64-linux-gnu/libcudnn.so.9*'))[:1]:\n"
                   "    ctypes.CDLL(f, mode=ctypes.RTLD_GLOBAL)\n"},
         "env": {"PYTHONUSERBASE": str(SCRATCH / "pythonuserbase-usercustomize-system-cudnn" / "userbase")},
         "expect": "?"},  # not read where the frameworks' Python is a venv's without system site-packages
        {"name": "pythonuserbase-usercustomize-nousersite",
         "files": {f"userbase/lib/python{python_version[0]}.{python_version[1]}/site-packages/usercustomize.py":
                   "raise SystemExit(3)\n"},
         "env": {"PYTHONUSERBASE": str(SCRATCH / "pythonuserbase-usercustomize-nousersite" / "userbase"),
                 "PYTHONNOUSERSITE": "1"}, "expect": "works"},
        {"name": "pythonpath-system-cudnn-folder", "env": {"PYTHONPATH": "/usr/lib/x86_64-linux-gnu"}, "expect": "works"},
        {"name": "home-user-xdg-unset", "unset": ["HOME", "USER", "LOGNAME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                                                  "XDG_DATA_HOME", "XDG_RUNTIME_DIR"], "expect": "?"},
        {"name": "math-stubs-under-sonames", "expect": "?",  # the toolkit's link stubs first on the path by soname
         "shell": "mkdir -p stubs13 && for l in cublas cublasLt cufft curand cusolver cusparse nvJitLink nvrtc; do "
                  "[ -e /usr/local/cuda/lib64/stubs/lib$l.so ] && ln -sf /usr/local/cuda/lib64/stubs/lib$l.so "
                  "stubs13/lib$l.so.13; done; export LD_LIBRARY_PATH=$PWD/stubs13${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"},
    ]


def run_bash(line: str, env: dict[str, str], cwd: Path, timeout: float = 240, user: bool = False) -> tuple[int, str]:
    """LINE in a new bash at CWD; USER: as the unprivileged uid 65534 (nobody), through setpriv."""
    argv = [BASH, "-c", line]  # found on the doctor's PATH: a case's own PATH may not hold bash
    if user:
        argv = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, errors="replace", start_new_session=True)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    return done.returncode, (done.stdout + done.stderr).strip()


def judge(case: dict[str, object], env: dict[str, str], cwd: Path, extra: list[str],
          user: bool = False) -> dict[str, str]:
    parts = [str(case["shell"])] if case.get("shell") else []
    out = {}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = {name: pool.submit(run_bash, "; ".join([*parts, *extra, "exec " + shlex.join(
            [sys.executable, "-c", code])]), env, cwd, user=user) for name, code in (("torch", TORCH), ("jax", JAX))}
        for name, job in jobs.items():
            code, said = job.result()
            lines = [line for line in said.splitlines() if line.strip()]
            ok = code == 0 and any(line.startswith(f"{name} ok") for line in lines)
            out[name] = ("ok: " if ok else f"FAIL (exit {code}): ") + " | ".join(lines[-3:])[-500:]
    return out


def doctor(case: dict[str, object], env: dict[str, str], cwd: Path, *args: str) -> tuple[dict[str, object], float]:
    start = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv[0] = 'cudnn-doctor'; "
             "from cudnn_doctor.entry import main; main()")
    parts = [str(case["shell"])] if case.get("shell") else []
    began = time.perf_counter()
    code, said = run_bash("; ".join([*parts, "exec " + shlex.join([sys.executable, "-c", start, *args])]), env, cwd)
    seconds = round(time.perf_counter() - began, 2)
    text = said[said.find("{"):] if "{" in said else ""
    try:
        return json.loads(text[:text.rfind("}") + 1]), seconds
    except ValueError:
        return {"error": f"no JSON (exit {code}): {said[-400:]}"}, seconds


def codes(report: dict[str, object], severity: str) -> list[str]:
    found = report.get("findings")
    return [f"{f.get('code')}:{f.get('subject')}" for f in found if isinstance(f, dict)
            and f.get("severity") == severity] if isinstance(found, list) else []


def one(case: dict[str, object], base: dict[str, str], with_doctor: bool, user: bool) -> dict[str, object]:
    folder = SCRATCH / str(case["name"])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for relative, text in dict(case.get("files") or {}).items():  # type: ignore[call-overload]
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    env = dict(base)
    for name in case.get("unset") or ():  # type: ignore[attr-defined]
        env.pop(name, None)
    env.update({k: (str(folder / v) if k in ("BASH_ENV", "PYTHONSTARTUP") else v)
                for k, v in dict(case.get("env") or {}).items()})  # type: ignore[call-overload]
    if user:
        os.chmod(folder, 0o777)
    result: dict[str, object] = {"name": case["name"], "expect": case["expect"], "as": "nobody" if user else "this user"}
    began = time.perf_counter()
    result["judges"] = judged = judge(case, env, folder, [], user)
    fails = any(not v.startswith("ok") for v in judged.values())
    result["fails"] = fails
    if with_doctor:
        plain, seconds = doctor(case, env, folder, "check", "--json")
        deep, deep_seconds = doctor(case, env, folder, "check", "--deep", "--json") if DEEP else ({}, 0.0)
        result.update(check_errors=codes(plain, "error"), check_warnings=codes(plain, "warning"), check_s=seconds,
                      deep_errors=codes(deep, "error"), deep_warnings=codes(deep, "warning"), deep_s=deep_seconds,
                      check_said=plain.get("error"), deep_said=deep.get("error"))
        result["false_error"] = not fails and bool(result["check_errors"] or result["deep_errors"])
        result["missed"] = fails and not (result["check_errors"] or result["check_warnings"])
        if fails:
            plan, _ = doctor(case, env, folder, "fix", "--json")
            lines = [line for action in plan.get("actions") or [] if isinstance(action, dict)  # type: ignore[union-attr]
                     and action.get("kind") == "env" for line in action.get("env", {}).get("bash", [])]
            result["fix_lines"] = lines
            result["fix_verified"] = [str(a.get("verified"))[:200] for a in plan.get("actions") or []  # type: ignore[union-attr]
                                      if isinstance(a, dict) and a.get("kind") == "env"]
            if lines:
                after = judge(case, env, folder, lines)
                result["after_fix"] = after
                result["fixed"] = all(v.startswith("ok") for v in after.values())
    result["seconds"] = round(time.perf_counter() - began, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-doctor", action="store_true")
    parser.add_argument("--as-nobody", action="store_true", help="the umask and SIGCHLD cases as `nobody` too")
    parser.add_argument("--no-deep", action="store_true", help="plain check and fix only (no check --deep)")
    parser.add_argument("--parallel", type=int, default=3, help="cases at once (JAX does not preallocate here)")
    parser.add_argument("--budget-s", type=float, default=540.0, help="no case starts after this many seconds")
    options = parser.parse_args()
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BASH_ENV", "ENV")}
    base.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the cases run one after another on one GPU
    only = {name for name in options.only.split(",") if name}
    chosen = [c for c in cases(sys.version_info[:2]) if not only or c["name"] in only]
    runs: list[tuple[dict[str, object], dict[str, str], bool]] = []
    for case in chosen:
        runs.append((case, base, False))
        if options.as_nobody and str(case["name"]).startswith(("umask", "sigchld", "baseline")) and \
                shutil.which("setpriv"):
            runs.append((dict(case, name=f"{case['name']}-as-nobody"), dict(base, HOME="/tmp"), True))
    global DEEP
    DEEP = not options.no_deep
    ends = time.monotonic() + options.budget_s
    results: list[dict[str, object]] = []

    def run(item: tuple[dict[str, object], dict[str, str], bool]) -> dict[str, object]:
        case, env, as_nobody = item
        if time.monotonic() > ends:
            return {"name": case["name"], "expect": case["expect"], "not_run": "the budget was spent", "fails": False,
                    "judges": {"torch": "not run", "jax": "not run"}}
        return one(case, env, not options.no_doctor and not as_nobody, as_nobody)

    with concurrent.futures.ThreadPoolExecutor(max(1, options.parallel)) as pool:
        for row in pool.map(run, runs):
            results.append(row)
            (out / "process_start_facts.json").write_text(json.dumps(results, indent=1))
            print(f"{row['name']:38} torch {str(row['judges']['torch'])[:4]:4}  "  # type: ignore[index]
                  f"jax {str(row['judges']['jax'])[:4]:4}  errors {row.get('check_errors')} "  # type: ignore[index]
                  f"warnings {row.get('check_warnings')} deep {row.get('deep_errors')} fixed {row.get('fixed')}",
                  flush=True)
    summary = {"cases": len(results), "fail": sum(bool(r["fails"]) for r in results),
               "missed": [r["name"] for r in results if r.get("missed")],
               "false_error": [r["name"] for r in results if r.get("false_error")],
               "expectation_wrong": [r["name"] for r in results if r["expect"] in ("works", "fails")
                                     and bool(r["fails"]) != (r["expect"] == "fails")]}
    (out / "process_start_facts.json").write_text(json.dumps({"summary": summary, "cases": results}, indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
