"""`cudnn-doctor bench`: cuDNN convolution and LSTM through the C API, checked against NumPy.

Modules:
  workloads  shapes, dtypes, FLOP counts and tolerances (plain data)
  reference  the CPU reference and baseline in NumPy
  cudart     ctypes bindings to libcudart (memory, events, device attributes)
  cudnn      ctypes bindings to libcudnn (legacy convolution API, v8 RNN API)
  device     the child's GPU session: context, cuDNN handle, device memory, device description
  dtypes     how a --dtype maps onto cuDNN's types and host arrays
  timing     CUDA events around stream loops and CUDA graphs
  convolution  convolutions through the graph (backend) API or the legacy API (runs in the child)
  backend    the backend (graph) API's descriptors, heuristics and plans
  lstm       the LSTM through the v8 RNN API (runs in the child)
  child      `python -m cudnn_doctor.bench.child`: one device, answers JSON
  libraries  which libcudnn and libcudart the child loads
  peaks      the GPUs' peak TFLOP/s per dtype (peaks.toml, cited)
  healthy    how fast a healthy GPU of the same model runs a workload (compat/gpu_reference.toml)
  model      the typed records of the results and the report, and their JSON
  run        start the child for one GPU and read its answer

The command itself is commands/bench.py, its judgements rules/bench.py, its text render/bench_text.py.
"""
