"""Triton kernels for CUDA, one module per op, each with the signature of its torch reference.

Imported only where a tensor is on a CUDA device (compute_kernels/dispatch.py) and by the tests, which
run them through Triton's interpreter (TRITON_INTERPRET=1, CPU tensors) where no GPU is found.
"""
