#!/usr/bin/env bash
# Where plain `check --json` spends its wall time on the GPU machine, against the floor of what it must do:
# the interpreter's own start (with and without site), loading libcuda and cuInit, loading NVML and nvmlInit,
# nvidia-smi -q, then the real command's timeline and the doctor's own profile.   bash benchmarks/critical_path.sh
set -u
cd "$(dirname "$0")/.."
py=python3
ms() { "$py" -I -S -c 'import sys,subprocess,time,statistics
argv=sys.argv[1:]; t=[]
for i in range(11):
    s=time.perf_counter(); subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); t.append(time.perf_counter()-s)
print(f"{statistics.median(t[1:])*1000:7.1f} ms  " + " ".join(argv)[:100])' "$@"; }
echo "== floors (median of 10)"
ms "$py" -c pass
ms "$py" -I -S -c pass
ms "$py" -I -S -c 'import ctypes; ctypes.CDLL("libcuda.so.1")'
ms "$py" -I -S -c 'import ctypes; ctypes.CDLL("libcuda.so.1").cuInit(0)'
ms "$py" -I -S -c 'import ctypes; ctypes.CDLL("libnvidia-ml.so.1").nvmlInit_v2()'
ms nvidia-smi -q
ms nvidia-smi
"$py" -I -S -c 'import ctypes,time
t=time.perf_counter(); l=ctypes.CDLL("libcuda.so.1"); t1=time.perf_counter(); r=l.cuInit(0); t2=time.perf_counter()
n=ctypes.CDLL("libnvidia-ml.so.1"); t3=time.perf_counter(); q=n.nvmlInit_v2(); t4=time.perf_counter()
print(f"in one process: dlopen libcuda {1000*(t1-t):.1f} ms, cuInit {1000*(t2-t1):.1f} ms (rc {r}), dlopen nvml {1000*(t3-t2):.1f}, nvmlInit {1000*(t4-t3):.1f} ms")'
echo "== cli_timeline"; timeout 100 "$py" benchmarks/cli_timeline.py --runs 9
echo "== check_timeline"; timeout 100 "$py" benchmarks/check_timeline.py --runs 5 --children 2>&1 | head -60
echo "== profile"; timeout 100 "$py" benchmarks/check_timeline.py --runs 3 --profile --sort cumulative --only-doctor --lines 45 2>&1 | tail -60
echo "== importtime (top 25 cumulative)"
PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} "$py" -X importtime -m cudnn_doctor check --json 2>&1 >/dev/null | sort -t'|' -k2 -n -r | head -25
