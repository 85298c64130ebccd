"""CPU kernels in C with OpenMP (csrc/), compiled for the running machine at first use (build.py)."""
