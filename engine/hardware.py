"""What the machine offers and the defaults chosen from it: dtype, threads, resident memory.

Read at run time (never assumed): the CPU's flags from /proc/cpuinfo, torch's own view of
its CPU capability, the number of usable cores. The engine core reports the choices at
startup (`describe`), beside the flags that decided them.
"""

from __future__ import annotations

import os

import torch

from compute_kernels.cpu.build import cpu_flags

# Flags that change what is fastest, in the order the startup line prints them.
REPORTED_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile", "avx_vnni")


def reported_flags() -> list[str]:
    flags = cpu_flags()
    return [f for f in REPORTED_FLAGS if f in flags]


def has_bf16_units() -> bool:
    """AVX512-BF16 or AMX: bfloat16 arithmetic in hardware, not emulated through float32."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())


def default_dtype(device: torch.device) -> str:
    """bfloat16 on CUDA and on CPUs with BF16 units; float32 elsewhere (bf16 emulated is slower)."""
    if device.type == "cuda" or (device.type == "cpu" and has_bf16_units()):
        return "bfloat16"
    return "float32"


def default_kv_dtype(dtype: str, cpu_kernels: bool) -> str:
    """float16 for a float32 model on the CPU kernels (half the bytes every decode step reads,
    converted in registers; llama.cpp's default too), else the model's dtype."""
    return "float16" if cpu_kernels and dtype == "float32" else dtype


def default_prefill_cap(device: torch.device) -> int:
    """Prompt tokens a step takes while others decode: 128 on a CPU, no cap (0) on CUDA, where a
    chunk costs little. Measured on two AVX-512 cores (benchmarks/serve.py, 200-token prompts, closed
    loop, 2026-12-05): 128 against a cap that grew to 512 while 4 or fewer streams decode gave TTFT
    p50 1,133 vs 4,037 ms at 64 streams (1,606 vs 1,596 at 16) at the same tok/s, and agents'
    1,500-token prompts (benchmarks/agent_workload.py) 1,277 vs 1,685 ms; 512 throughout held
    TTFT p50 at 3.7-7.2 s at 64 streams on 2026-12-04."""
    return 128 if device.type == "cpu" else 0


def default_prefill_stall_ratio(device: torch.device) -> float:
    """How much a step's prompt tokens may cost against its decode rows while streams decode: 2.5
    on a CPU, off (0) on CUDA. Chosen with benchmarks/schedule_sim.py on the BF16 machine's step
    costs against the fixed 128-token cap: ITL p99 155 -> 33 ms at 4 streams and 176 -> 99 ms at
    16, TTFT p50 equal or lower at 4 and 16 and under vLLM's at 64, tok/s within 4 %; measured with
    benchmarks/serve.py on an AVX2 machine (stalls halved at 4 and 16 streams, same tok/s) in
    docs/kernels-and-cpu-speed.md; the BF16 machine's serve.py run is still to come."""
    return 2.5 if device.type == "cpu" else 0.0


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resident_mib() -> float:
    """This process's resident set size in MiB (from /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def describe(device: torch.device) -> str:
    """One line: the device, torch's CPU capability and the CPU flags that matter."""
    if device.type != "cpu":
        return f"device {device}"
    capability = torch.backends.cpu.get_cpu_capability()
    flags = " ".join(reported_flags()) or "none of " + " ".join(REPORTED_FLAGS)
    return f"cpu ({usable_cores()} cores, torch capability {capability}, flags: {flags})"
