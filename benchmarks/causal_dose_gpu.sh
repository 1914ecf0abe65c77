#!/bin/bash
# The GPU run of the dose-response bench (benchmarks/causal_dose_gpu.py; docs/validation.md), on the GPU machine:
#     bash benchmarks/causal_dose_gpu.sh PREPARED OUT [device options]
# PREPARED: the folder `python benchmarks/causal_dose_gpu.py prepare` wrote here (it travels with the working tree);
# OUT: where the results go. The machine's python3 has torch, transformers, pandas, scipy and matplotlib but not two
# packages the product imports: they come as wheels in PREPARED/wheels. The working tree is the package (PYTHONPATH).
set -euo pipefail
PREPARED=$1
OUT=$2
shift 2
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/causal-dose-site \
    --find-links "$PREPARED/wheels" pyahocorasick zstandard
export PYTHONPATH="/tmp/causal-dose-site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv 2>/dev/null || true
python3 benchmarks/causal_dose_gpu.py device -i "$PREPARED" -o "$OUT" "$@" 2>&1 | tee "$OUT/log.txt"
