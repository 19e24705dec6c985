"""`cudnn-doctor bench`: cuDNN convolution and LSTM through the C API, checked against NumPy.

Modules:
  workloads  shapes, dtypes, FLOP counts and tolerances (plain data)
  reference  the CPU reference and baseline in NumPy
  cudart     ctypes bindings to libcudart (memory, events, device attributes)
  cudnn      ctypes bindings to libcudnn (legacy convolution API, v8 RNN API)
  gpu        the workloads on the GPU (runs in the child)
  child      `python -m cudnn_doctor.bench.child`: one device, answers JSON
  libraries  which libcudnn and libcudart the child loads
  peaks      the GPUs' peak TFLOP/s per dtype (peaks.toml, cited)
  run        the parent side: start children, turn answers into results and findings
  render     the text table
"""
