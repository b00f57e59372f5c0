/* relax_blas, the dispatch policy: the provider's threading layer and thread count, the
 * thresholds and packing ranges the other files read (blas_shim.h), chosen at load from the
 * CPU and the environment, and their setters for tests and benchmarks (ctypes).
 *
 * Environment: RELAX_BLAS_NUM_THREADS (else the provider's own OPENBLAS_NUM_THREADS /
 * MKL_NUM_THREADS is left to it; else 2 threads), RELAX_BLAS_SMALL_FLOPS (the small
 * threshold, default 4096), RELAX_BLAS_PACK=0 (no packed products), RELAX_BLAS_PACK_MIN_M /
 * RELAX_BLAS_PACK_MAX_M (the M range of packed products: [1, 1024], [1, 256] on Intel CPUs where
 * MKL's own AVX-512 path wins above it), RELAX_BLAS_PACK_FORK_FLOPS (M*N*K
 * below which a packed product runs on one thread). MKL: MKL_THREADING_LAYER is honoured; unset,
 * a build with RELAX_BLAS_IOMP (linked to libiomp5, the OpenMP runtime of the generated kernels:
 * relax_mlir/runtime/libraries.py, _mkl_openmp) selects the Intel layer, so MKL, the packed
 * products below and the generated kernels share one team of threads; a build without it the
 * GNU OpenMP layer (libgomp, as PyTorch uses) where libgomp can be loaded, else the sequential
 * layer (MKL aborts the process when the runtime of its layer is missing, so the layer is never
 * chosen blind).
 */
#define _GNU_SOURCE /* dladdr */
#include "blas_shim.h"

/* The knobs (declared in blas_shim.h), set at load by relax_blas_init from the CPU and the
 * environment. small_flops: M*N*K below it a product runs a plain loop (no BLAS call). */
double small_flops = 4096.0;

/* Columns per packed panel: 32 (two 16-float AVX-512 vectors; rows in blocks of 12) or 64
 * (four vectors; rows in blocks of 6), fixed when the library loads: 64 on Intel CPUs,
 * where the 6 x 64 block measured 5-15 % faster than 12 x 32 (one thread, Xeon Cascade
 * Lake, M = 120-504 over Llama and BERT shapes: 105-121 against 88-110 GFLOP/s; fewer
 * broadcasts of A per FMA), 32 elsewhere (tuned on AMD Zen 4, where AVX-512 is two
 * 256-bit halves). RELAX_BLAS_PACK_PANEL=32|64 overrides it. */
int64_t panel = 32;
int pack_supported = 0;   /* an MKL build on an AVX-512 CPU */
int pack_on = 0;          /* pack_supported and not RELAX_BLAS_PACK=0 */
int64_t pack_min_m = 1, pack_max_m = 1024;   /* measured: see blas_gemm_avx512.c (Intel: 256, see init) */
int mkl_pack_above = 0;   /* Intel + MKL: B in MKL's packed format for M > pack_max_m */
double pack_fork_flops = 262144.0;            /* M*N*K below this: one thread */

#ifdef RELAX_BLAS_MKL
/* MKL's threading layer as chosen at load ("intel", "gnu", "sequential"; "env": MKL_THREADING_LAYER). */
static const char *threading_layer = "env";
const char *relax_blas_threading_layer(void) { return threading_layer; }
#endif

#ifdef RELAX_BLAS_IOMP
/* Whether the OpenMP entry points that MKL's Intel layer (libmkl_intel_thread, bound at load)
 * will find first in the process's global scope are libiomp5's. PyTorch loads its libgomp with
 * RTLD_GLOBAL: imported before us, its omp_get_thread_num would answer inside libiomp5's
 * parallel regions ("thread 0 of 1" in every thread: each MKL thread then computes the whole
 * product; wrong results, measured). Then MKL takes the GNU layer on that libgomp instead. */
static int global_openmp_is_iomp(void) {
  void *f = dlsym(RTLD_DEFAULT, "omp_get_thread_num");
  Dl_info info;
  if (!f)
    return 1; /* none global: MKL binds to the libiomp5 it needs */
  return dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "libiomp5") != NULL;
}
#endif

__attribute__((constructor)) static void relax_blas_init(void) {
#ifdef RELAX_BLAS_MKL
  if (!getenv("MKL_THREADING_LAYER")) {
#ifdef RELAX_BLAS_IOMP
    if (global_openmp_is_iomp()) {
      MKL_Set_Threading_Layer(MKL_THREADING_INTEL);
      threading_layer = "intel";
    } else
#endif
    if (dlopen("libgomp.so.1", RTLD_LAZY | RTLD_GLOBAL)) {
      MKL_Set_Threading_Layer(MKL_THREADING_GNU);
      threading_layer = "gnu";
    } else {
      MKL_Set_Threading_Layer(MKL_THREADING_SEQUENTIAL);
      threading_layer = "sequential";
    }
  }
#endif
  const char *t = getenv("RELAX_BLAS_NUM_THREADS");
  if (t && atoi(t) > 0)
    set_threads(atoi(t));
  else if (!getenv(PROVIDER_THREADS_ENV))
    set_threads(2);
  const char *s = getenv("RELAX_BLAS_SMALL_FLOPS");
  if (s) small_flops = atof(s);
#ifdef PACKED_KERNELS
  __builtin_cpu_init();
  pack_supported = __builtin_cpu_supports("avx512f");
  /* On Intel CPUs MKL runs its own AVX-512 path: the packed kernel wins at small M only
   * (one thread, packed / MKL, Xeon Cascade Lake: 0.50-0.86 at M = 16, 0.83-1.07 at 256,
   * 0.98-1.22 at 512 over BERT and Llama shapes; all-MiniLM-L6-v2 at (8, 64), whose
   * products have M = 512, took 193-213 ms packed against 152 ms through MKL). Against
   * MKL's PACKED format (cblas_sgemm_compute) the range is smaller still: standalone, one
   * thread, Llama shapes, GFLOP/s ours (6 x 64) / MKL packed: M = 12: 43 / 40, 30: 75 / 72,
   * 60: 91 / 100, 120-128: 106-114 / 124-128, 252: 113 / 132; in the 134M Llama's prefill
   * (same process, interleaved): 40 tokens 106 / 117 ms, 56 tokens 135 / 113 ms, 128 tokens
   * 255-274 / 245-260 ms. But MKL's packed copy of a weight takes 2.2x its bytes (the 134M
   * Llama: 1.16 GB for 0.54 GB of weights, against ~1x for ours), and both formats live
   * once both ranges are used, so the switch stays at M = 256, where prefills of up to 256
   * tokens keep ONE packed copy; RELAX_BLAS_PACK_MAX_M=48 trades that memory for the
   * 2-8 % (decode, M = 1, is the same either way: 21.5 / 21.8 tokens/s). */
  if (__builtin_cpu_is("intel")) {
    pack_max_m = 256;
    mkl_pack_above = 1;   /* above it: MKL's packed format (pack_mkl) */
    panel = 64;
  }
#endif
  const char *p = getenv("RELAX_BLAS_PACK");
  pack_on = pack_supported && !(p && strcmp(p, "0") == 0);
  if ((p = getenv("RELAX_BLAS_PACK_MIN_M")) && atoll(p) > 0) pack_min_m = atoll(p);
  if ((p = getenv("RELAX_BLAS_PACK_MAX_M")) && atoll(p) > 0) pack_max_m = atoll(p);
  if ((p = getenv("RELAX_BLAS_PACK_MKL"))) mkl_pack_above = mkl_pack_above && strcmp(p, "0") != 0;
  if ((p = getenv("RELAX_BLAS_PACK_FORK_FLOPS"))) pack_fork_flops = atof(p);
  if ((p = getenv("RELAX_BLAS_PACK_PANEL")) && (atoll(p) == 32 || atoll(p) == 64)) panel = atoll(p);
}

/* For benchmarks and tests (ctypes). */
void relax_blas_set_num_threads(int n) { set_threads(n); }
const char *relax_blas_provider(void) { return RELAX_BLAS_PROVIDER; }
void relax_blas_set_small_flops(double f) { small_flops = f; }
double relax_blas_get_small_flops(void) { return small_flops; }

/* Packing on (1) / off (0) at run time (benchmarks compare both in one process); returns
 * whether it is on (never where unsupported). */
int relax_blas_set_pack(int on) { pack_on = on && pack_supported; return pack_on; }
void relax_blas_set_pack_m(int64_t lo, int64_t hi) { pack_min_m = lo; pack_max_m = hi; }
/* The M above which bound weights take MKL's packed format (pack_mkl), or -1 (never). */
int64_t relax_blas_pack_mkl_above(void) { return pack_on && mkl_pack_above ? pack_max_m : -1; }
/* Columns per packed panel (32 or 64; see `panel`). */
int64_t relax_blas_pack_panel(void) { return panel; }
