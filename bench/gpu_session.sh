#!/usr/bin/env bash
# The device check of a session with a lent NVIDIA GPU, designed to finish in < 8 minutes:
#   1. the MLIR wheels for the machine's python3 (3.12) from .gpu/mlir-cp312.tar.xz
#      (bench/gpu_bundle.sh builds it here; pass it with run(carry=[".gpu"]));
#   2. the device (nvidia-smi) -> $OUT/device.txt;
#   3. pytest test/test_cuda.py test/test_gpu_rules.py test/test_gpu_mma_tiles.py test/test_gpu_quant.py
#      test/test_gpu_launches.py test/test_cuda_library.py, take's index check and bf16 matmul routes (real-GPU numerics; the fused decode
#      attention's and the quantized GEMM's (M = 64) included; with
#      RELAX_MLIR_TEST_TENSOR_CORES=1 the tensor-core GEMM's f16 / bf16 numerics) -> $OUT/tests.txt;
#   4. bench/bench_gpu.py --targets cuda --quant --quick: decode GEMVs on Q8_0/Q4_0/Q4_1/f16/bf16 weights
#      (the quantized-GEMV rule against the generic kernel and PyTorch on f32; the f32 GEMV of each
#      shape for the half formats) -> $OUT/bench_quant.md;
#   5. the llm CLI, issue 27's config (--size 134m, 128-token prompt, 32 new tokens, --stats):
#      launches per decode step and tokens/s -> $OUT/llm_stats.txt;
#   5b. bench/bench_gpu.py --targets cuda --attention --quick --attention-splits 1,8
#      --attention-chunks 4096: the fused decode attention (4 warps per row, the KV length split
#      across workgroups by 256 keys by default; 1 and 8 warps; 4096: no split) against its
#      three kernels and PyTorch, with f32 and f16 K/V (--attention-kv f32,f16) and with the
#      chunks fixed at 256 keys (--configs attention_split=1) against the default split sized
#      from the multiprocessors, and the split's combining launch (attention_launches=2) against
#      the default combination in the last workgroup of each row (one launch)
#      -> $OUT/bench_attention.md;
#   5c. the llm CLI as in 5 with an f16 KV cache (--kv-dtype f16) -> $OUT/llm_f16kv.txt;
#   5d. the llm CLI as in 5 with f16 projections and lm head (--random-format f16: the half-format
#      GEMV) -> $OUT/llm_f16w.txt (issue 27's target: decode >= 1.5x the f32 weights' of step 5);
#   6. bench/bench_gpu.py --targets cuda --decode --quick: the f32/f16 decode GEMVs (default knobs and
#      4x4, 8x8) against the same target without subgroup ops and PyTorch -> $OUT/bench_decode.md;
#   6b. bench/bench_gpu.py --targets cuda --cublas --quick --configs f16_gemm=2,...: prefill matmuls (f32, f16,
#      bf16; quantized Q8_0 / f16 rows at M = 32-512) without cuBLAS (SIMT tiles; the f16 / bf16 ones also on
#      the tensor-core GEMM: "cuda f16_gemm=2", 64 x 64 blocks, and 128 x 128 blocks of 64 x 64 warp tiles),
#      with it always and by the provisional rules, against PyTorch (the measurement the rule waits for)
#      -> $OUT/bench_cublas.md;
#   6c. bench/bench_gpu.py --targets cuda --prefill-attention: the fused prefill attention against the
#      q.k / softmax / p.v kernels, whole prefill and attention alone -> $OUT/bench_prefill_attention.md;
#   6d. (not in the rehearsal) bench/tune_gpu_llm.py --target cuda --size 134m --decode --budget 60: the GPU
#      tuner on the 134m model's kernels at the decode step's shapes (one new token) (each kernel alone, the rules' knobs; a record where a config beats the
#      default by 3 %) -> $OUT/gpu_tuning.db (compile(..., tuning_db=) applies it), $OUT/gpu_tuning.md;
#   7. if time is left, bench/bench_gpu.py --targets cuda --quick --no-naive --without-contract (each case
#      also without fastmath<contract>: what the FMAs gain) -> $OUT/bench_gpu.md.
# Each step has its own timeout; a failed step does not stop the next; on exit the outputs are
# bundled into $OUT/results.tar.gz beside $OUT/session.log. Usage:
#   device:  bash bench/gpu_session.sh                (OUT is set by the device tool)
#   here:    bash bench/gpu_session.sh --fake          (rehearsal: steps 3-6 with the fake CUDA
#            driver test/Inputs/fake_libcuda.c as libcuda.so.1 for the benchmarks' processes: the whole
#            host path, PTX loaded, launches checked; kernels do not run, so no numerics)
set -u
cd "$(dirname "$0")/.."
FAKE=0
[ "${1:-}" = "--fake" ] && FAKE=1
OUT=${OUT:-$PWD/gpu-session-out}
mkdir -p "$OUT"
START=$(date +%s)
# the device tool returns at most 8 files from $OUT: on exit every output but session.log goes
# into one results.tar.gz (tar -xzf it here)
bundle() {
    (cd "$OUT" && files=$(ls -A | grep -v -x -e session.log -e results.tar.gz) &&
        [ -n "$files" ] && tar -czf results.tar.gz $files && rm -rf $files)
}
trap bundle EXIT
log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$OUT/session.log"; }
left() { echo $(( 450 - ($(date +%s) - START) )); }    # seconds left of a 7.5-minute budget

if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=${PYTHON:-python3}; fi
if ! "$PY" -c "import mlir.ir" 2>/dev/null; then
    SITE=/tmp/relax-mlir-site
    if [ ! -d "$SITE/mlir" ]; then
        [ -f .gpu/mlir-cp312.tar.xz ] || { log "no MLIR bindings and no .gpu/mlir-cp312.tar.xz (bench/gpu_bundle.sh)"; exit 2; }
        mkdir -p "$SITE" && tar -xJf .gpu/mlir-cp312.tar.xz -C "$SITE"
    fi
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import mlir.ir, relax_mlir, sys; print(sys.version.split()[0], relax_mlir.__file__)" 2>&1 | tee -a "$OUT/session.log"
log "python: $PY"

if [ $FAKE = 1 ]; then
    FAKEDIR=$(mktemp -d)
    cc -shared -fPIC -O1 -o "$FAKEDIR/libcuda.so.1" -Wl,-soname,libcuda.so.1 test/Inputs/fake_libcuda.c \
        || { log "no C compiler"; exit 2; }
    cc -shared -fPIC -O1 -o "$FAKEDIR/libcublas.so.12" test/Inputs/fake_libcublas.c -L"$FAKEDIR" -l:libcuda.so.1 \
        -Wl,-rpath,"$FAKEDIR"
    echo "fake driver $FAKEDIR/libcuda.so.1, fake cuBLAS $FAKEDIR/libcublas.so.12" > "$OUT/device.txt"
    BENCH_ENV="LD_LIBRARY_PATH=$FAKEDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} RELAX_MLIR_CUBLAS_LIBRARY=$FAKEDIR/libcublas.so.12 FAKE_CUBLAS_SKIP=1"
    BENCH_FLAGS="--host-path-only"
    XDIST=""
else
    (nvidia-smi; nvidia-smi -q | head -40) > "$OUT/device.txt" 2>&1
    BENCH_ENV=""
    BENCH_FLAGS=""
    "$PY" -c "import xdist" 2>/dev/null && XDIST="-n 8" || XDIST=""
fi
head -20 "$OUT/device.txt" | tee -a "$OUT/session.log"

log "tests (timeout 200 s)"
RELAX_MLIR_TEST_TENSOR_CORES=$([ $FAKE = 1 ] && echo 0 || echo 1) timeout 200 "$PY" -m pytest -q $XDIST \
    -p no:cacheprovider test/test_cuda.py test/test_gpu_rules.py test/test_gpu_mma_tiles.py test/test_gpu_quant.py test/test_gpu_launches.py \
    test/test_cuda_library.py test/test_ops_numerics.py::test_take_out_of_range_on_gpu_targets \
    test/test_bf16.py::test_cuda_bf16_numerics > "$OUT/tests.txt" 2>&1
log "tests rc=$? $(tail -1 "$OUT/tests.txt")"

T=$(( $(left) < 90 ? $(left) : 90 ))
log "quantized GEMV bench (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --quant --quick $BENCH_FLAGS \
    > "$OUT/bench_quant.md" 2> "$OUT/bench_quant.err"
log "quant bench rc=$?"
env $BENCH_ENV timeout 60 "$PY" bench/bench_gpu.py --targets cuda --prefill --quick --quant-formats q4_0,f16 $BENCH_FLAGS >> "$OUT/bench_quant.md" 2>> "$OUT/bench_quant.err"; log "prefill (quantized GEMM vs GEMV per row) rc=$?"
cat "$OUT/bench_quant.md" | tee -a "$OUT/session.log"

T=$(( $(left) < 60 ? $(left) : 60 ))
log "llm --stats, issue 27's config (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" -m relax_mlir.tools.relax_mlir_cli llm --target cuda --size 134m -n 32 \
    --prompt-len 128 --stats > "$OUT/llm_stats.txt" 2>&1
log "llm rc=$? $(tail -3 "$OUT/llm_stats.txt" | tr '\n' ' ')"

T=$(( $(left) < 50 ? $(left) : 50 ))
log "decode attention bench (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --attention --quick $BENCH_FLAGS \
    --attention-splits 1,8 --attention-chunks 4096 --attention-kv f32,f16 --configs attention_split=1,attention_launches=2 \
    > "$OUT/bench_attention.md" 2> "$OUT/bench_attention.err"
log "attention bench rc=$?"
cat "$OUT/bench_attention.md" | tee -a "$OUT/session.log"

T=$(( $(left) < 45 ? $(left) : 45 ))
log "llm --stats --kv-dtype f16 (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" -m relax_mlir.tools.relax_mlir_cli llm --target cuda --size 134m -n 32 \
    --prompt-len 128 --stats --kv-dtype f16 > "$OUT/llm_f16kv.txt" 2>&1
log "llm f16 KV rc=$? $(tail -3 "$OUT/llm_f16kv.txt" | tr '\n' ' ')"

T=$(( $(left) < 45 ? $(left) : 45 ))
log "llm --stats --random-format f16 (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" -m relax_mlir.tools.relax_mlir_cli llm --target cuda --size 134m -n 32 \
    --prompt-len 128 --stats --random-format f16 > "$OUT/llm_f16w.txt" 2>&1
log "llm f16 weights rc=$? $(tail -3 "$OUT/llm_f16w.txt" | tr '\n' ' ')"

T=$(( $(left) < 100 ? $(left) : 100 ))
log "decode GEMV bench (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --decode --quick $BENCH_FLAGS \
    --gemv-configs 4x4,8x8 \
    > "$OUT/bench_decode.md" 2> "$OUT/bench_decode.err"
log "decode bench rc=$?"
cat "$OUT/bench_decode.md" | tee -a "$OUT/session.log"

T=$(( $(left) < 90 ? $(left) : 90 ))
log "cuBLAS bench (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --cublas --quick --configs f16_gemm=2,f16_gemm=2:tc_warp_m=64:tc_warp_n=64 $BENCH_FLAGS \
    > "$OUT/bench_cublas.md" 2> "$OUT/bench_cublas.err"
log "cublas bench rc=$?"
cat "$OUT/bench_cublas.md" | tee -a "$OUT/session.log"

T=$(( $(left) < 60 ? $(left) : 60 ))
log "prefill attention bench (timeout $T s)"
env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --prefill-attention $BENCH_FLAGS \
    > "$OUT/bench_prefill_attention.md" 2> "$OUT/bench_prefill_attention.err"
log "prefill attention bench rc=$?"
cat "$OUT/bench_prefill_attention.md" | tee -a "$OUT/session.log"

if [ $FAKE = 0 ]; then   # the fake driver computes nothing: no times to tune by
    T=$(( $(left) < 150 ? $(left) : 150 ))
    log "GPU tuning of the 134m model's kernels, 60 s search (timeout $T s)"
    timeout "$T" "$PY" bench/tune_gpu_llm.py --target cuda --size 134m --decode --budget 60 --trials 16 \
        --db "$OUT/gpu_tuning.db" --summary "$OUT/gpu_tuning.md" > "$OUT/gpu_tuning.log" 2>&1
    log "gpu tuning rc=$? $(tail -1 "$OUT/gpu_tuning.log")"
    cat "$OUT/gpu_tuning.md" 2>/dev/null | tee -a "$OUT/session.log"
fi

T=$(left)
if [ "$T" -gt 60 ]; then
    log "bench_gpu (timeout $T s)"
    env $BENCH_ENV timeout "$T" "$PY" bench/bench_gpu.py --targets cuda --quick --no-naive --without-contract \
        $BENCH_FLAGS --skip "2048x2048x2048" > "$OUT/bench_gpu.md" 2> "$OUT/bench_gpu.err"
    log "bench_gpu rc=$?"
fi
log "done"
