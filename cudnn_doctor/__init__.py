"""cudnn-doctor: find, check, install and benchmark CUDA and cuDNN."""

__version__ = "0.1.0"
