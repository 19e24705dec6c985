"""A real Slurm cluster on 127.0.0.1, from Debian's slurm-wlm and munge, in a test's folder.

munged, slurmctld and one slurmd per node run in the foreground as children of the test, with every file
(key, sockets, state, logs, pid files, slurm.conf) under the folder given, on free ports of the
loopback address, and are stopped when the context ends. Nothing outside the folder is written.
Several nodes on one machine are Slurm's own way to emulate a larger system: each slurmd is started
with `-N NAME` and listens on its node's own `Port=` (Debian's slurm-wlm is built with multiple-slurmd
support); a TaskProlog may give each node's tasks their own environment, as a node's own setup would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
BIN_FOLDERS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def _which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in BIN_FOLDERS if os.access(f"{d}/{name}", os.X_OK)), None)


def missing_tools() -> list[str]:
    return [name for name in DAEMONS if _which(name) is None]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(check, seconds: float, what: str, logs: list[Path]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tails = "\n".join(f"--- {log}\n{log.read_text(errors='replace')[-1500:]}" for log in logs if log.exists())
    raise RuntimeError(f"{what} did not come up within {seconds:.0f} s\n{tails}")


@contextlib.contextmanager
def slurm_cluster(folder: Path, nodes: list[str] | None = None,
                  task_prolog: str | None = None) -> Iterator[dict[str, str]]:
    """Start the cluster (by default one node named as this host; else NODES, one slurmd each) and yield the
    environment (SLURM_CONF, PATH) that srun needs to reach it. TASK_PROLOG, a shell script, runs before
    each task on its node; `export NAME=VALUE` lines it prints set the task's environment."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    munge = folder / "munge"
    munge.mkdir(mode=0o700)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket_path = munge / "munge.socket"
    hostname = socket.gethostname().split(".")[0]
    ctld_port, slurmd_port = _free_port(), _free_port()
    names = nodes or [hostname]
    if nodes:
        node_lines = "\n".join(f"NodeName={name} NodeHostname={hostname} NodeAddr=127.0.0.1 Port={_free_port()} "
                               "CPUs=1 State=UNKNOWN" for name in names)
    else:
        node_lines = f"NodeName={hostname} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN"
    prolog = ""
    if task_prolog is not None:
        script = folder / "task_prolog.sh"
        script.write_text("#!/bin/sh\n" + task_prolog)
        script.chmod(0o755)
        prolog = f"TaskProlog={script}\n"
    for name in ("state", "spool", "log"):
        (folder / name).mkdir()
    conf = folder / "slurm.conf"
    conf.write_text(
        f"""ClusterName=doctortest
SlurmctldHost={hostname}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path}
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool/slurmd-%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
LaunchParameters=use_interactive_step
MailProg=/bin/true
{prolog}{node_lines}
PartitionName=debug Nodes={",".join(names)} Default=YES MaxTime=INFINITE State=UP
"""
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    logs = [folder / "log" / "munged.log", folder / "log" / "slurmctld.log",
            *(folder / "log" / f"slurmd-{name}.log" for name in names)]
    processes: list[subprocess.Popen[bytes]] = []

    def start(argv: list[str], log: Path) -> None:
        handle = open(log.with_suffix(".out"), "wb")  # noqa: SIM115 - closed with the process
        processes.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=handle,
                                          stderr=subprocess.STDOUT, start_new_session=True))
        handle.close()

    try:
        start([_which("munged") or "munged", "--foreground", "--force", f"--socket={socket_path}",
               f"--key-file={key}", f"--log-file={logs[0]}", f"--pid-file={munge}/munged.pid",
               f"--seed-file={munge}/munged.seed", "--num-threads=2"], logs[0])
        _wait_for(socket_path.exists, 15, "munged", logs)
        start([_which("slurmctld") or "slurmctld", "-D", "-i", "-f", str(conf)], logs[1])
        for name, log in zip(names, logs[2:], strict=True):
            start([_which("slurmd") or "slurmd", "-D", "-f", str(conf), "-N", name], log)
        sinfo = _which("sinfo") or "sinfo"

        def nodes_idle() -> bool:
            answer = subprocess.run([sinfo, "-h", "-N", "-o", "%N %T"], env=env, capture_output=True, text=True,
                                    timeout=10)
            states = dict(line.split() for line in answer.stdout.splitlines() if len(line.split()) == 2)
            return answer.returncode == 0 and sorted(states) == sorted(names) and \
                all(state.rstrip("*") == "idle" for state in states.values())

        _wait_for(nodes_idle, 60, "the Slurm nodes", logs + [log.with_suffix(".out") for log in logs])
        yield {"SLURM_CONF": str(conf), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    finally:
        for process in reversed(processes):
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
