"""The bounds of `cudnn-doctor image` on hostile images (issue 43, class 6), measured as a user runs it: wall time
and peak memory (the child's max RSS) of the command on images built here, CPU only, no network.

    python benchmarks/image_bounds.py [--checkout DIR] [--out DIR] [--timeout 300]

Cases: a pax header and a GNU long name claiming 400 MB (gzip'd to 2 MB); a layer of 600,000 empty members;
30,000 whiteouts over 10,000 paths; a sparse 100 GiB blob declared as 10 KiB; a registry on 127.0.0.1 that drips
its manifest at a byte a second (under the documented 30 s deadline). --checkout runs another checkout's code
(the one before a fix) on the same images. Results: a JSON file and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.images import LAYER_TAR, config_of, digest, gzip_stream, layer, manifest_of, tar_header  # noqa: E402


def layout(folder: Path, blobs: list[tuple[bytes, str]]) -> Path:
    config = config_of({})
    manifest = manifest_of(config, blobs)
    store = folder / "blobs" / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    for blob in (config, manifest, *(b for b, _ in blobs)):
        (store / digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(manifest), "size": len(manifest)}]}))
    return folder


def run(checkout: Path, args: list[str], timeout: float, env: dict[str, str]) -> dict:
    program = ("import resource, subprocess, sys, time\nstart = time.monotonic()\n"
               "try:\n    done = subprocess.run([sys.executable, '-m', 'cudnn_doctor', *sys.argv[2:]], capture_output=True,"
               " text=True, timeout=float(sys.argv[1]))\n    code, out = done.returncode, done.stdout\n"
               "except subprocess.TimeoutExpired:\n    code, out = None, ''\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, time.monotonic() - start, code)\n"
               "print(out)\n")
    answer = subprocess.run([sys.executable, "-c", program, str(timeout), *args], capture_output=True, text=True,
                            env={**env, "PYTHONPATH": str(checkout)}, cwd=checkout)
    first, _, out = answer.stdout.partition("\n")
    peak, seconds, code = first.split()
    try:
        error = json.loads(out).get("error", {}).get("message")
    except ValueError:
        error = None
    return {"peak_mib": int(peak), "seconds": round(float(seconds), 2), "exit_code": None if code == "None" else int(code),
            "error": (error or "")[:160]}


def dripping_registry() -> tuple[str, threading.Event]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n"
                             b"Content-Length: 100000\r\n\r\n")
                while not stop.is_set():
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        break
                    time.sleep(1)

    threading.Thread(target=serve, daemon=True).start()
    return f"127.0.0.1:{listener.getsockname()[1]}", stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=300)
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDNN_DOCTOR_")}
    work = Path(tempfile.mkdtemp(prefix="image-bounds-"))
    results = {}
    size = 400 << 20
    for kind, name in ((b"x", "pax header of 400 MB"), (b"L", "GNU long name of 400 MB")):
        blob = gzip_stream(iter([tar_header(b"big", size, kind), *(bytes(1 << 20) for _ in range(size >> 20)),
                                 bytes(1024)]))
        results[name] = run(options.checkout, ["image", str(layout(work / kind.decode(), [(blob, "application/vnd.oci.image.layer.v1.tar+gzip")])), "--json"],
                            options.timeout, env)
    many = gzip_stream(iter([*(tar_header(b"e/%d" % i, 0) for i in range(600_000)), bytes(1024)]))
    results["600,000 empty members"] = run(options.checkout, ["image", str(layout(work / "many", [(many, "application/vnd.oci.image.layer.v1.tar+gzip")])), "--json"],
                                           options.timeout, env)
    lower = b"".join(tar_header(b"usr/lib/d%d/libcudnn.so.9" % i, 0) for i in range(10_000)) + bytes(1024)
    upper = b"".join(tar_header(b"opt/x%d/.wh.gone" % i, 0) for i in range(30_000)) + bytes(1024)
    results["30,000 whiteouts over 10,000 paths"] = run(
        options.checkout, ["image", str(layout(work / "wh", [(lower, LAYER_TAR), (upper, LAYER_TAR)])), "--json"],
        options.timeout, env)
    small = layer({"etc/hostname": "box\n"}, compress=False)[0]
    sparse = layout(work / "sparse", [(small, LAYER_TAR)])
    os.truncate(sparse / "blobs" / "sha256" / digest(small).split(":")[1], 100 << 30)
    results["sparse 100 GiB blob declared as 10 KiB"] = run(options.checkout, ["image", str(sparse), "--json"],
                                                            options.timeout, env)
    host, stop = dripping_registry()
    results["manifest dripped at 1 byte/s (deadline 30 s)"] = run(options.checkout, ["image", f"{host}/team/app:1", "--json"],
                                                                 options.timeout, env)
    stop.set()
    print(f"{'case':48} {'seconds':>8} {'peak MiB':>9} {'exit':>5}  error")
    for name, row in results.items():
        print(f"{name:48} {row['seconds']:>8} {row['peak_mib']:>9} {str(row['exit_code']):>5}  {row['error'][:70]}")
    if options.out:
        options.out.mkdir(parents=True, exist_ok=True)
        (options.out / "image_bounds.json").write_text(json.dumps({"checkout": str(options.checkout), "results": results},
                                                                  indent=2))
    resource.getrusage(resource.RUSAGE_SELF)


if __name__ == "__main__":
    main()
