/* relax_blas: the BLAS entry points behind relax-dispatch-library.
 *
 * One source, built once per BLAS provider (relax_mlir/runtime/libraries.py picks it):
 *   -DRELAX_BLAS_MKL       Intel oneMKL (PyPI `mkl`, libmkl_rt, GNU OpenMP threading layer)
 *   (default)              OpenBLAS (PyPI `scipy-openblas32`, scipy_-prefixed symbols)
 * The few CBLAS prototypes used are declared here (both providers: LP64, 32-bit ints), so
 * no BLAS header package is needed.
 *
 * Each entry point takes MLIR memref descriptors (C interface, `_mlir_ciface_<symbol>`),
 * inputs first, then the output (destination-passing style), and respects each
 * descriptor's offset and strides (a non-BLAS layout is packed into a temporary):
 *
 *   relax_blas_matmul_<ra><rb>_<t>(A, B, C)             C = A @ B
 *   relax_blas_matmul_bias_<ra><rb>_<t>(A, B, bias, C)  C = A @ B + bias   (bias: [N])
 *   relax_blas_matmul[_bias]_tb_<ra><rb>_<t>(A, Bt, [bias,] C)  the same with B given as its
 *       transpose Bt (last two axes swapped: (N,K) or (b,N,K)), read in place
 *
 * <ra><rb> are the operand ranks: 22 (M,K)x(K,N); 33 (b,M,K)x(b,N,K), either batch 1
 * broadcasting; 32 (b,M,K)x(K,N); 23 (M,K)x(b,K,N). <t> is f32 or f64.
 *
 * Run-time policy (sizes are symbolic at compile time, so this is where they are known):
 * M == 1 (or N == 1) calls gemv; M*N*K below the small threshold runs a plain loop here
 * (no BLAS call overhead); otherwise gemm. A batch whose A and C rows collapse (the common
 * (b,M,K)x(K,N) case) becomes ONE gemm of b*M rows.
 *
 * Bound weights (MKL builds on AVX-512 CPUs): a caller that holds an array constant -- the
 * trailing parameters bound by `bind_params` (relax_mlir/runtime/executable.py) --
 * registers its bytes with relax_blas_pack_register(ptr, nbytes). An f32 product whose B
 * operand (shared by the batch) lies inside a registered region and whose M lies in
 * [pack_min_m, pack_max_m] packs B ONCE, on its first use, into column panels of 32 (K x 32
 * floats each, zero-padded, 64-byte aligned; about the size of B) and from then on runs the
 * register-blocked AVX-512 kernel below over the packed copy, its panels split over the
 * BLAS threads (GNU OpenMP, MKL's own pool). Why not MKL's cblas_sgemm_pack/compute: on
 * this project's AMD Zen 4 machine MKL runs its generic code path, whose sgemm_compute
 * still re-copies the packed panels (perf: 54% of its cycles in sgemm_scopy_down16, no
 * gain) and whose packed buffers take 1.5x B + ~5.6 MB each; sgemm spends the same half
 * of its time copying B on every call at small M. The packed copies belong to their region and are freed when its last
 * holder calls relax_blas_pack_release; a region's bytes must not change while registered
 * (relax_blas_pack_invalidate drops its copies, rebuilt on next use). On Intel CPUs an M above
 * that range takes B in MKL's own packed format instead (cblas_sgemm_pack once, then
 * cblas_sgemm_compute: no per-call copy of B; RELAX_BLAS_PACK_MKL=0 turns it off). Anything else (f64,
 * M == 1 gemv, OpenBLAS, no AVX-512, an unregistered B) takes the path below unchanged.
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
 *
 * fork(): GNU OpenMP does not survive fork (a child that uses the parent's thread pool hangs
 * in its first parallel region), so a pthread_atfork child handler marks the child and its
 * next BLAS call sets MKL to 1 thread first (RELAX_BLAS_NUM_THREADS does not apply there);
 * kept on libiomp5 too.
 * OpenBLAS re-initialises its own threads in the child.
 *
 * Linked two ways: as its own shared library for the JIT (cached per provider), and as an
 * object into every exported model (relax_mlir/runtime/aot.py), where only the model's
 * entry points are exported; the BLAS itself is then a dependency by soname.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

#ifdef RELAX_BLAS_MKL
#define BLAS_FN(name) cblas_##name
#define RELAX_BLAS_PROVIDER "mkl"
void MKL_Set_Num_Threads(int n);
int MKL_Get_Max_Threads(void);
int MKL_Set_Threading_Layer(int layer);
#define MKL_THREADING_INTEL 0
#define MKL_THREADING_SEQUENTIAL 1
#define MKL_THREADING_GNU 3
static void set_threads(int n) { MKL_Set_Num_Threads(n); }
#define PROVIDER_THREADS_ENV "MKL_NUM_THREADS"
#define RESET_THREADS_AFTER_FORK 1
#else
#define BLAS_FN(name) scipy_cblas_##name
#define RELAX_BLAS_PROVIDER "openblas"
void scipy_openblas_set_num_threads(int n);
static void set_threads(int n) { scipy_openblas_set_num_threads(n); }
#define PROVIDER_THREADS_ENV "OPENBLAS_NUM_THREADS"
#endif

#define DECLARE_BLAS(T, P)                                                                    \
  void BLAS_FN(P##gemm)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, \
                        int, T, const T *, int, const T *, int, T, T *, int);                 \
  void BLAS_FN(P##gemm_batch_strided)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE,                 \
                                      enum CBLAS_TRANSPOSE, int, int, int, T, const T *, int, \
                                      int, const T *, int, int, T, T *, int, int, int);       \
  void BLAS_FN(P##gemv)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, int, int, T, const T *, int,  \
                        const T *, int, T, T *, int);
DECLARE_BLAS(float, s)
DECLARE_BLAS(double, d)

typedef struct {
  char *data;             /* aligned + offset * elem size */
  int rank;
  int64_t sizes[3], strides[3];
} view;

/* A ranked memref descriptor: {allocated, aligned, offset, sizes[rank], strides[rank]}. */
static view read_desc(void *d, int rank, size_t esize) {
  struct hdr { void *allocated; char *aligned; int64_t offset; int64_t rest[]; } *h = d;
  view v;
  v.rank = rank;
  v.data = h->aligned + h->offset * (int64_t)esize;
  for (int i = 0; i < rank; ++i) {
    v.sizes[i] = h->rest[i];
    v.strides[i] = h->rest[rank + i];
  }
  return v;
}

static double small_flops = 4096.0;

/* -- packed bound weights (see the header) -------------------------------------------- */

/* Columns per packed panel: 32 (two 16-float AVX-512 vectors; rows in blocks of 12) or 64
 * (four vectors; rows in blocks of 6), fixed when the library loads: 64 on Intel CPUs,
 * where the 6 x 64 block measured 5-15 % faster than 12 x 32 (one thread, Xeon Cascade
 * Lake, M = 120-504 over Llama and BERT shapes: 105-121 against 88-110 GFLOP/s; fewer
 * broadcasts of A per FMA), 32 elsewhere (tuned on AMD Zen 4, where AVX-512 is two
 * 256-bit halves). RELAX_BLAS_PACK_PANEL=32|64 overrides it. */
static int64_t panel = 32;

typedef struct packed {          /* B (K x N, strides s0, s1, at src) packed into panels */
  const float *src;
  int64_t K, N, s0, s1;
  int kind;                      /* PACK_PANELS (ours) or PACK_MKL (cblas_sgemm_pack's format) */
  float *data;
  size_t bytes;
  struct packed *next;
} packed;

typedef struct {                 /* a registered constant region [lo, hi) and its copies */
  const char *lo, *hi;
  int64_t refs;
  packed *copies;
} region;

static pthread_mutex_t pack_lock = PTHREAD_MUTEX_INITIALIZER;
static region *regions = NULL;
static int64_t nregions = 0, cap_regions = 0;
static int pack_supported = 0;   /* an MKL build on an AVX-512 CPU */
static int pack_on = 0;          /* pack_supported and not RELAX_BLAS_PACK=0 */
static int64_t pack_min_m = 1, pack_max_m = 1024;   /* measured: see the header (Intel: 256, see init) */
static int mkl_pack_above = 0;   /* Intel + MKL: B in MKL's packed format for M > pack_max_m */
enum { PACK_PANELS = 0, PACK_MKL = 1 };
static double pack_fork_flops = 262144.0;            /* M*N*K below this: one thread */

static void free_copies(region *r) {
  for (packed *p = r->copies, *n; p; p = n) {
    n = p->next;
    free(p->data);
    free(p);
  }
  r->copies = NULL;
}

static region *find_region(const void *p, int64_t nbytes) {
  for (int64_t i = 0; i < nregions; ++i)
    if (regions[i].lo == (const char *)p && regions[i].hi == (const char *)p + nbytes) return &regions[i];
  return NULL;
}

/* Register [p, p + nbytes) as constant: returns 1 when products over it may be packed (0:
 * this build or CPU never packs; nothing is recorded). Registering a region again counts
 * one more holder (two bound calls over the same weights share the packed copies). */
int relax_blas_pack_register(const void *p, int64_t nbytes) {
  if (!pack_supported || !p || nbytes <= 0) return 0;
  pthread_mutex_lock(&pack_lock);
  region *r = find_region(p, nbytes);
  int ok = 1;
  if (r) {
    r->refs++;
  } else if (nregions == cap_regions &&
             !(regions = realloc(regions, sizeof(region) * (size_t)(cap_regions = cap_regions ? 2 * cap_regions : 64)))) {
    nregions = cap_regions = 0;   /* out of memory: nothing is packed (regions were lost) */
    ok = 0;
  } else {
    regions[nregions++] = (region){(const char *)p, (const char *)p + nbytes, 1, NULL};
  }
  pthread_mutex_unlock(&pack_lock);
  return ok;
}

/* One holder of [p, p + nbytes) lets go; the last one frees the region's packed copies. */
void relax_blas_pack_release(const void *p, int64_t nbytes) {
  pthread_mutex_lock(&pack_lock);
  region *r = find_region(p, nbytes);
  if (r && --r->refs == 0) {
    free_copies(r);
    *r = regions[--nregions];
  }
  pthread_mutex_unlock(&pack_lock);
}

/* The bytes of [p, p + nbytes) changed: drop its packed copies (repacked on next use). */
void relax_blas_pack_invalidate(const void *p, int64_t nbytes) {
  pthread_mutex_lock(&pack_lock);
  region *r = find_region(p, nbytes);
  if (r) free_copies(r);
  pthread_mutex_unlock(&pack_lock);
}

/* For tests and benchmarks: packed copies alive (their bytes in *bytes), registered regions. */
int64_t relax_blas_pack_stats(int64_t *bytes, int64_t *nreg) {
  int64_t n = 0, b = 0;
  pthread_mutex_lock(&pack_lock);
  for (int64_t i = 0; i < nregions; ++i)
    for (packed *p = regions[i].copies; p; p = p->next) { n++; b += (int64_t)p->bytes; }
  if (nreg) *nreg = nregions;
  pthread_mutex_unlock(&pack_lock);
  if (bytes) *bytes = b;
  return n;
}

/* Packing on (1) / off (0) at run time (benchmarks compare both in one process); returns
 * whether it is on (never where unsupported). */
int relax_blas_set_pack(int on) { pack_on = on && pack_supported; return pack_on; }
void relax_blas_set_pack_m(int64_t lo, int64_t hi) { pack_min_m = lo; pack_max_m = hi; }
/* The M above which bound weights take MKL's packed format (pack_mkl), or -1 (never). */
int64_t relax_blas_pack_mkl_above(void) { return pack_on && mkl_pack_above ? pack_max_m : -1; }
/* Columns per packed panel (32 or 64; see `panel`). */
int64_t relax_blas_pack_panel(void) { return panel; }

/* B (K x N, strides s0, s1) into np panels of K x panel at d: 16 panels at a time, so a
 * row-major B is read in 2 KB runs and written in 16 streams (GNU OpenMP over the groups). */
static void pack_group(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, int64_t np,
                       float *d, int64_t g) {
  for (int64_t k = 0; k < K; ++k)
    for (int64_t q = g * 16; q < np && q < g * 16 + 16; ++q) {
      float *row = d + (q * K + k) * panel;
      int64_t n0 = q * panel, cols = N - n0 < panel ? N - n0 : panel;
      if (s1 == 1 && cols == panel) {
        memcpy(row, B + k * s0 + n0, sizeof(float) * panel);
      } else {
        for (int64_t j = 0; j < panel; ++j) row[j] = j < cols ? B[k * s0 + (n0 + j) * s1] : 0.0f;
      }
    }
}

static void pack_panels(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, int64_t np,
                        float *d) {
  int64_t groups = (np + 15) / 16;
#if defined(_OPENMP) && defined(RELAX_BLAS_MKL)
  int nt = MKL_Get_Max_Threads();
  if (nt > 1 && groups > 1) {   /* never an OpenMP region on one thread (a forked child) */
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t g = 0; g < groups; ++g) pack_group(B, K, N, s0, s1, np, d, g);
    return;
  }
#endif
  for (int64_t g = 0; g < groups; ++g) pack_group(B, K, N, s0, s1, np, d, g);
}

/* The packed copy of B (K x N, strides s0, s1) when B lies in a registered region: made
 * on first use (under the lock: once per weight), NULL otherwise or when out of memory. */
static float *pack_mkl(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, size_t *bytes);
static const float *packed_b(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, int kind) {
  if (s0 < 0 || s1 < 0) return NULL;
  const char *lo = (const char *)B, *hi = (const char *)(B + (K - 1) * s0 + (N - 1) * s1 + 1);
  const float *out = NULL;
  pthread_mutex_lock(&pack_lock);
  for (int64_t i = 0; i < nregions; ++i) {
    region *r = &regions[i];
    if (lo < r->lo || hi > r->hi) continue;
    for (packed *p = r->copies; p; p = p->next)
      if (p->src == B && p->K == K && p->N == N && p->s0 == s0 && p->s1 == s1 && p->kind == kind) {
        out = p->data;
        break;
      }
    if (!out) {
      int64_t np = (N + panel - 1) / panel;
      size_t bytes = sizeof(float) * (size_t)(np * K * panel);
      packed *p = malloc(sizeof(packed));
      float *d = NULL;
      if (kind == PACK_MKL) {
        d = pack_mkl(B, K, N, s0, s1, &bytes);
      } else if ((d = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
        pack_panels(B, K, N, s0, s1, np, d);
      }
      if (!p || !d) { free(p); free(d); break; }
      *p = (packed){B, K, N, s0, s1, kind, d, bytes, r->copies};
      r->copies = p;
      out = d;
    }
    break;
  }
  pthread_mutex_unlock(&pack_lock);
  return out;
}

#if defined(RELAX_BLAS_MKL) && defined(__x86_64__)
#include <immintrin.h>
#define PACKED_KERNELS 1
/* C[0:R, 0:cols] (= or +=) A[0:R, :] @ panel, R rows in registers: 2R accumulators of 16. */
#define MICRO(R)                                                                              \
  __attribute__((target("avx512f"))) static void micro_##R(                                  \
      int64_t K, const float *A, int64_t a0, int64_t a1, const float *P, float *C,           \
      int64_t ldc, int64_t cols, int accumulate) {                                            \
    __m512 c0[R], c1[R];                                                                      \
    for (int r = 0; r < R; ++r) { c0[r] = _mm512_setzero_ps(); c1[r] = _mm512_setzero_ps(); } \
    for (int64_t k = 0; k < K; ++k) {                                                         \
      __m512 b0 = _mm512_load_ps(P + k * 32), b1 = _mm512_load_ps(P + k * 32 + 16);           \
      for (int r = 0; r < R; ++r) {                                                           \
        __m512 a = _mm512_set1_ps(A[r * a0 + k * a1]);                                        \
        c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);                                                \
        c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);                                                \
      }                                                                                       \
    }                                                                                         \
    __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);                      \
    __mmask16 m1 = cols >= 32 ? 0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0; \
    for (int r = 0; r < R; ++r) {                                                             \
      float *c = C + r * ldc;                                                                 \
      if (accumulate) {                                                                       \
        c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, c));                           \
        c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, c + 16));                      \
      }                                                                                       \
      _mm512_mask_storeu_ps(c, m0, c0[r]);                                                    \
      _mm512_mask_storeu_ps(c + 16, m1, c1[r]);                                               \
    }                                                                                         \
  }
MICRO(12) MICRO(8) MICRO(4) MICRO(2) MICRO(1)

/* The same over a 64-column panel: R rows, 4R accumulators of 16. */
#define MICRO64(R)                                                                            \
  __attribute__((target("avx512f"))) static void micro64_##R(                                \
      int64_t K, const float *A, int64_t a0, int64_t a1, const float *P, float *C,           \
      int64_t ldc, int64_t cols, int accumulate) {                                            \
    __m512 c[R][4];                                                                           \
    for (int r = 0; r < R; ++r)                                                               \
      for (int j = 0; j < 4; ++j) c[r][j] = _mm512_setzero_ps();                              \
    for (int64_t k = 0; k < K; ++k) {                                                         \
      const float *p = P + k * 64;                                                            \
      /* the panel row 16 steps ahead (+1-5 % in the standalone check: B streams from L2) */  \
      _mm_prefetch((const char *)(p + 1024), _MM_HINT_T0);                                    \
      _mm_prefetch((const char *)(p + 1040), _MM_HINT_T0);                                    \
      _mm_prefetch((const char *)(p + 1056), _MM_HINT_T0);                                    \
      _mm_prefetch((const char *)(p + 1072), _MM_HINT_T0);                                    \
      __m512 b0 = _mm512_load_ps(p), b1 = _mm512_load_ps(p + 16), b2 = _mm512_load_ps(p + 32), \
             b3 = _mm512_load_ps(p + 48);                                                     \
      for (int r = 0; r < R; ++r) {                                                           \
        __m512 a = _mm512_set1_ps(A[r * a0 + k * a1]);                                        \
        c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);                                            \
        c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);                                            \
        c[r][2] = _mm512_fmadd_ps(a, b2, c[r][2]);                                            \
        c[r][3] = _mm512_fmadd_ps(a, b3, c[r][3]);                                            \
      }                                                                                       \
    }                                                                                         \
    __mmask16 m[4];                                                                           \
    for (int j = 0; j < 4; ++j) {                                                             \
      int64_t left = cols - 16 * j;                                                           \
      m[j] = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;             \
    }                                                                                         \
    for (int r = 0; r < R; ++r)                                                               \
      for (int j = 0; j < 4; ++j) {                                                           \
        float *cj = C + r * ldc + 16 * j;                                                     \
        if (accumulate) c[r][j] = _mm512_add_ps(c[r][j], _mm512_maskz_loadu_ps(m[j], cj));    \
        _mm512_mask_storeu_ps(cj, m[j], c[r][j]);                                             \
      }                                                                                       \
  }
MICRO64(6) MICRO64(4) MICRO64(2) MICRO64(1)

/* C(M,N) (= or +=) A(M,K) @ B, B given by its packed panels; A element (i,k) at A[i*a0 + k*a1],
 * C row-major with leading dimension ldc. Panels are split over the BLAS threads. */
static void packed_panel(int64_t M, int64_t K, const float *A, int64_t a0, int64_t a1, const float *P,
                         float *C, int64_t ldc, int64_t N, int accumulate, int64_t q) {
  const float *Pq = P + q * K * panel;
  int64_t cols = N - q * panel < panel ? N - q * panel : panel;
  float *Cq = C + q * panel;
  int64_t i = 0;
  if (panel == 64) {
    for (; i + 6 <= M; i += 6) micro64_6(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
    for (; i + 4 <= M; i += 4) micro64_4(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
    for (; i + 2 <= M; i += 2) micro64_2(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
    for (; i < M; ++i) micro64_1(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
    return;
  }
  for (; i + 12 <= M; i += 12) micro_12(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
  for (; i + 8 <= M; i += 8) micro_8(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
  for (; i + 4 <= M; i += 4) micro_4(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
  for (; i + 2 <= M; i += 2) micro_2(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
  for (; i < M; ++i) micro_1(K, A + i * a0, a0, a1, Pq, Cq + i * ldc, ldc, cols, accumulate);
}

static void packed_gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1,
                        const float *P, float *C, int64_t ldc, int accumulate) {
  int64_t np = (N + panel - 1) / panel;
  int nt = MKL_Get_Max_Threads();
  if (nt > np) nt = (int)np;
  if ((double)M * (double)N * (double)K < pack_fork_flops) nt = 1;
  if (nt > 1) {   /* never an OpenMP region on one thread (a forked child: see after_fork) */
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < np; ++q) packed_panel(M, K, A, a0, a1, P, C, ldc, N, accumulate, q);
  } else {
    for (int64_t q = 0; q < np; ++q) packed_panel(M, K, A, a0, a1, P, C, ldc, N, accumulate, q);
  }
}

/* MKL's own packed format (cblas_sgemm_pack, B identified): on Intel CPUs its
 * cblas_sgemm_compute skips the per-call copy of B that sgemm makes (measured, one thread,
 * Xeon Cascade Lake: compute / sgemm 0.85-0.94 at M = 300-2048 over MiniLM's (384, 1536),
 * (1536, 384), (384, 384); one pack serves every M). NULL when B has no BLAS layout. */
enum { MKL_PACKED = 151, MKL_B_MATRIX = 162 };
size_t cblas_sgemm_pack_get_size(int identifier, int m, int n, int k);
void cblas_sgemm_pack(int layout, int identifier, int trans, int m, int n, int k, float alpha, const float *src,
                      int ld, float *dest);
void cblas_sgemm_compute(int layout, int transa, int transb, int m, int n, int k, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
static float *pack_mkl(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, size_t *bytes) {
  int trans;
  int64_t ld;
  if (s1 == 1 && s0 >= N) { trans = CblasNoTrans; ld = s0; }
  else if (s0 == 1 && s1 >= K) { trans = CblasTrans; ld = s1; }
  else return NULL;
  if (K > INT_MAX || N > INT_MAX || ld > INT_MAX) return NULL;
  *bytes = cblas_sgemm_pack_get_size(MKL_B_MATRIX, (int)(pack_max_m + 1), (int)N, (int)K);
  float *d = aligned_alloc(64, (*bytes + 63) / 64 * 64);
  if (d) cblas_sgemm_pack(CblasRowMajor, MKL_B_MATRIX, trans, (int)(pack_max_m + 1), (int)N, (int)K, 1.0f, B,
                          (int)ld, d);
  return d;
}

/* The packed product when it applies (see the header): returns 1 when C was written. */
static int f32_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1,
                      const float *B, int64_t sb0, int64_t sb1, float *C, int64_t ldc, int accumulate) {
  if (!pack_on || M < pack_min_m || N < 2) return 0;
  if (M > pack_max_m) {
    if (!mkl_pack_above || M > INT_MAX || ldc > INT_MAX) return 0;
    int ta;
    int64_t lda;
    if (a1 == 1 && a0 >= K) { ta = CblasNoTrans; lda = a0; }
    else if (a0 == 1 && a1 >= M) { ta = CblasTrans; lda = a1; }
    else return 0;
    if (lda > INT_MAX) return 0;
    const float *P = packed_b(B, K, N, sb0, sb1, PACK_MKL);
    if (!P) return 0;
    cblas_sgemm_compute(CblasRowMajor, ta, MKL_PACKED, (int)M, (int)N, (int)K, A, (int)lda, P, (int)N,
                        accumulate ? 1.0f : 0.0f, C, (int)ldc);
    return 1;
  }
  const float *P = packed_b(B, K, N, sb0, sb1, PACK_PANELS);
  if (!P) return 0;
  packed_gemm(M, N, K, A, a0, a1, P, C, ldc, accumulate);
  return 1;
}
#else
static float *pack_mkl(const float *B, int64_t K, int64_t N, int64_t s0, int64_t s1, size_t *bytes) {
  (void)B; (void)K; (void)N; (void)s0; (void)s1; (void)bytes;
  return NULL;
}
static int f32_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1,
                      const float *B, int64_t sb0, int64_t sb1, float *C, int64_t ldc, int accumulate) {
  (void)M; (void)N; (void)K; (void)A; (void)a0; (void)a1; (void)B; (void)sb0; (void)sb1;
  (void)C; (void)ldc; (void)accumulate; (void)packed_b;
  return 0;
}
#endif
/* f64 products are never packed. */
static int f64_packed(int64_t M, int64_t N, int64_t K, const double *A, int64_t a0, int64_t a1,
                      const double *B, int64_t sb0, int64_t sb1, double *C, int64_t ldc, int accumulate) {
  (void)M; (void)N; (void)K; (void)A; (void)a0; (void)a1; (void)B; (void)sb0; (void)sb1;
  (void)C; (void)ldc; (void)accumulate;
  return 0;
}

/* Set in a forked child; read (and cleared) by the child's next BLAS call. */
static volatile int forked_child = 0;
static void mark_forked_child(void) { forked_child = 1; }

static void after_fork(void) {
#ifdef RESET_THREADS_AFTER_FORK
  if (forked_child) {
    forked_child = 0;
    set_threads(1);
  }
#endif
}

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
  pthread_atfork(NULL, NULL, mark_forked_child);
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

#define DEFINE_GEMM(T, S, GEMM, GEMV, GEMM_BATCH)                                              \
  /* C(M,N) = bias (broadcast over rows) or 0: unit-stride rows are a memcpy/memset each     \
   * (a strided scalar loop took ~3% of a BERT forward). */                                  \
  static void S##_fill(int64_t M, int64_t N, const T *bias, int64_t sbias, T *C, int64_t sc0,  \
                       int64_t sc1) {                                                         \
    if (sc1 == 1 && (!bias || sbias == 1)) {                                                  \
      for (int64_t i = 0; i < M; ++i) {                                                       \
        if (bias) memcpy(C + i * sc0, bias, sizeof(T) * (size_t)N);                           \
        else memset(C + i * sc0, 0, sizeof(T) * (size_t)N);                                  \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t i = 0; i < M; ++i)                                                           \
      for (int64_t j = 0; j < N; ++j) C[i * sc0 + j * sc1] = bias ? bias[j * sbias] : (T)0;   \
  }                                                                                           \
  /* A BLAS operand from strides: sets *trans and *ld, or returns 0 (needs packing). */       \
  static int S##_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1,                   \
                        enum CBLAS_TRANSPOSE *trans, int64_t *ld) {                           \
    int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;                               \
    int64_t n0 = rows == 1 ? c1 : s0, n1 = cols == 1 ? 1 : s1;   /* row-major view */          \
    if (n1 == 1 && n0 >= c1) { *trans = CblasNoTrans; *ld = n0; return 1; }                   \
    int64_t t0 = rows == 1 ? 1 : s0, t1 = cols == 1 ? r1 : s1;   /* transposed view */         \
    if (t0 == 1 && t1 >= r1) { *trans = CblasTrans; *ld = t1; return 1; }                     \
    return 0;                                                                                 \
  }                                                                                           \
  static T *S##_pack(const T *p, int64_t rows, int64_t cols, int64_t s0, int64_t s1) {         \
    T *q = malloc(sizeof(T) * (size_t)(rows * cols > 0 ? rows * cols : 1));                   \
    for (int64_t i = 0; i < rows; ++i)                                                        \
      for (int64_t j = 0; j < cols; ++j) q[i * cols + j] = p[i * s0 + j * s1];                \
    return q;                                                                                 \
  }                                                                                           \
  /* C(M,N) = A(M,K) B(K,N) [+ bias(N)], every operand with its own strides. */              \
  static void S##_gemm(int64_t M, int64_t N, int64_t K, const T *A, int64_t sa0, int64_t sa1, \
                       const T *B, int64_t sb0, int64_t sb1, const T *bias, int64_t sbias,    \
                       T *C, int64_t sc0, int64_t sc1) {                                      \
    if (M <= 0 || N <= 0) return;                                                             \
    int small = K <= 0 || (double)M * (double)N * (double)K < small_flops;                    \
    /* Without a bias, BLAS writes C with beta = 0 (it never reads C): no fill pass. */      \
    T beta = (bias || small) ? (T)1 : (T)0;                                                   \
    if (bias || small) S##_fill(M, N, bias, sbias, C, sc0, sc1);                              \
    if (K <= 0) return;                                                                       \
    if (small) {                                                                              \
      for (int64_t i = 0; i < M; ++i)                                                         \
        for (int64_t k = 0; k < K; ++k) {                                                     \
          T a = A[i * sa0 + k * sa1];                                                         \
          for (int64_t j = 0; j < N; ++j) C[i * sc0 + j * sc1] += a * B[k * sb0 + j * sb1];   \
        }                                                                                     \
      return;                                                                                 \
    }                                                                                         \
    after_fork();                                                                             \
    enum CBLAS_TRANSPOSE ta, tb, tc;                                                          \
    int64_t lda, ldb, ldc;                                                                    \
    const T *B0 = B; /* B as given (its registered address), before any temporary */          \
    int64_t sb00 = sb0, sb10 = sb1;                                                           \
    T *pa = NULL, *pb = NULL, *pc = NULL;                                                     \
    if (!S##_layout(M, K, sa0, sa1, &ta, &lda)) {                                             \
      A = pa = S##_pack(A, M, K, sa0, sa1); sa0 = K; sa1 = 1; ta = CblasNoTrans; lda = K;     \
    }                                                                                         \
    if (!S##_layout(K, N, sb0, sb1, &tb, &ldb)) {                                             \
      B = pb = S##_pack(B, K, N, sb0, sb1); sb0 = N; sb1 = 1; tb = CblasNoTrans; ldb = N;     \
    }                                                                                         \
    T *Cw = C;                                                                                \
    if (!S##_layout(M, N, sc0, sc1, &tc, &ldc) || tc != CblasNoTrans) {                       \
      Cw = pc = S##_pack(C, M, N, sc0, sc1); ldc = N;                                         \
    }                                                                                         \
    if (S##_packed(M, N, K, A, ta == CblasNoTrans ? lda : 1, ta == CblasNoTrans ? 1 : lda,    \
                   B0, sb00, sb10, Cw, ldc, beta != (T)0)) {                                  \
      /* a bound weight: its packed copy (see the header) */                                  \
    } else if (M == 1) {                                                                      \
      /* c(N) = op(B)^T a: B as (K,N) NoTrans is a row-major KxN matrix, transposed. */      \
      if (tb == CblasNoTrans)                                                                 \
        GEMV(CblasRowMajor, CblasTrans, K, N, 1, B, ldb, A, ta == CblasNoTrans ? 1 : lda,     \
             beta, Cw, 1);                                                                    \
      else                                                                                    \
        GEMV(CblasRowMajor, CblasNoTrans, N, K, 1, B, ldb, A, ta == CblasNoTrans ? 1 : lda,   \
             beta, Cw, 1);                                                                    \
    } else if (N == 1) {                                                                      \
      /* c(M) = op(A) b, written with stride ldc. */                                          \
      GEMV(CblasRowMajor, ta == CblasNoTrans ? CblasNoTrans : CblasTrans,                     \
           ta == CblasNoTrans ? M : K, ta == CblasNoTrans ? K : M, 1, A, lda, B,              \
           tb == CblasNoTrans ? ldb : 1, beta, Cw, ldc);                                      \
    } else {                                                                                  \
      GEMM(CblasRowMajor, ta, tb, M, N, K, 1, A, lda, B, ldb, beta, Cw, ldc);                 \
    }                                                                                         \
    if (pc) {                                                                                 \
      for (int64_t i = 0; i < M; ++i)                                                         \
        for (int64_t j = 0; j < N; ++j) C[i * sc0 + j * sc1] = pc[i * N + j];                 \
    }                                                                                         \
    free(pa); free(pb); free(pc);                                                             \
  }                                                                                           \
  /* A batch of equal products with BLAS layouts and a batch stride each: ONE strided-batch \
   * call (the provider splits the batch over its threads; a loop of small gemms would wake \
   * the threads per item: 3x slower on attention's 384 x 128x32x128). Returns 0 when it   \
   * does not apply (broadcast batch, gemv, small or non-BLAS layouts: the loop below). */   \
  static int S##_gemm_batch(int64_t batch, int64_t M, int64_t N, int64_t K, const T *A,       \
                            int64_t sa0, int64_t sa1, int64_t abs_, const T *B, int64_t sb0,   \
                            int64_t sb1, int64_t bbs, const T *bias, int64_t sbias, T *C,     \
                            int64_t sc0, int64_t sc1, int64_t cbs) {                          \
    enum CBLAS_TRANSPOSE ta, tb, tc;                                                          \
    int64_t lda, ldb, ldc;                                                                    \
    if (batch < 2 || abs_ <= 0 || bbs <= 0 || cbs <= 0 || M < 2 || N < 2 || K < 1)            \
      return 0;                                                                               \
    if ((double)M * (double)N * (double)K < small_flops) return 0;                            \
    if (!S##_layout(M, K, sa0, sa1, &ta, &lda) || !S##_layout(K, N, sb0, sb1, &tb, &ldb) ||   \
        !S##_layout(M, N, sc0, sc1, &tc, &ldc) || tc != CblasNoTrans)                         \
      return 0;                                                                               \
    int64_t lim[] = {batch, M, N, K, lda, ldb, ldc, abs_, bbs, cbs};                          \
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; ++i)                                   \
      if (lim[i] > INT_MAX) return 0;                                                         \
    after_fork();                                                                             \
    if (bias)                                                                                 \
      for (int64_t b = 0; b < batch; ++b) S##_fill(M, N, bias, sbias, C + b * cbs, sc0, sc1);    \
    GEMM_BATCH(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1, A, (int)lda, (int)abs_, B,   \
               (int)ldb, (int)bbs, bias ? (T)1 : (T)0, C, (int)ldc, (int)cbs, (int)batch);    \
    return 1;                                                                                 \
  }                                                                                           \
  /* Batched: a rank-2 view is a batch of one broadcast over the other operand's batch. */   \
  static void S##_matmul(view a, view b, const view *bias, view c) {                          \
    int64_t ab = a.rank == 3 ? a.sizes[0] : 1, bb = b.rank == 3 ? b.sizes[0] : 1;             \
    int64_t abs_ = (a.rank == 3 && ab > 1) ? a.strides[0] : 0;                                \
    int64_t bbs = (b.rank == 3 && bb > 1) ? b.strides[0] : 0;                                 \
    int ia = a.rank - 2, ib = b.rank - 2, ic = c.rank - 2;                                    \
    int64_t M = a.sizes[ia], K = a.sizes[ia + 1], N = b.sizes[ib + 1];                        \
    int64_t sa0 = a.strides[ia], sa1 = a.strides[ia + 1];                                     \
    int64_t sb0 = b.strides[ib], sb1 = b.strides[ib + 1];                                     \
    int64_t sc0 = c.strides[ic], sc1 = c.strides[ic + 1];                                     \
    int64_t batch = c.rank == 3 ? c.sizes[0] : 1, cbs = c.rank == 3 ? c.strides[0] : 0;       \
    const T *bp = bias ? (const T *)bias->data : NULL;                                        \
    int64_t sbias = bias ? bias->strides[0] : 0;                                              \
    const T *A = (const T *)a.data, *B = (const T *)b.data;                                   \
    T *C = (T *)c.data;                                                                       \
    /* Shared B and rows of A and C that collapse: one gemm of batch*M rows. */              \
    if (batch > 1 && bbs == 0 && abs_ == M * sa0 && cbs == M * sc0 && M > 0) {                \
      S##_gemm(batch * M, N, K, A, sa0, sa1, B, sb0, sb1, bp, sbias, C, sc0, sc1);            \
      return;                                                                                 \
    }                                                                                         \
    if (S##_gemm_batch(batch, M, N, K, A, sa0, sa1, abs_, B, sb0, sb1, bbs, bp, sbias, C, sc0,  \
                       sc1, cbs))                                                             \
      return;                                                                                 \
    for (int64_t i = 0; i < batch; ++i)                                                       \
      S##_gemm(M, N, K, A + i * abs_, sa0, sa1, B + i * bbs, sb0, sb1, bp, sbias,             \
               C + i * cbs, sc0, sc1);                                                        \
  }                                                                                           \
  /* C (nb, M, N) = A @ B over a batch with two strides (head views, see mview). */          \
  static void S##_matmul_heads(mview a, mview b, mview c, int64_t nouter, int64_t H) {        \
    int64_t M = a.rows, K = a.cols, N = b.cols;                                               \
    for (int64_t o = 0; o < nouter; ++o) {                                                    \
      const T *A = (const T *)a.data + o * a.outer, *B = (const T *)b.data + o * b.outer;     \
      T *C = (T *)c.data + o * c.outer;                                                       \
      if (S##_gemm_batch(H, M, N, K, A, a.s0, a.s1, a.inner, B, b.s0, b.s1, b.inner, NULL, 0,   \
                         C, c.s0, c.s1, c.inner))                                             \
        continue;                                                                             \
      for (int64_t h = 0; h < H; ++h)                                                         \
        S##_gemm(M, N, K, A + h * a.inner, a.s0, a.s1, B + h * b.inner, b.s0, b.s1, NULL, 0,  \
                 C + h * c.inner, c.s0, c.s1);                                                \
    }                                                                                         \
  }

/* Attention's head views (relax-dispatch-library's `_h<a><b>` symbols): an operand flagged
 * as a head view arrives as the UNSPLIT projection X (B, S, H*D) -- the graph's
 * reshape (B,S,H,D) / permute (B,H,S,D) / reshape (B*H,S,D) copy is gone -- and product
 * i = b*H + h of the batch (nb = B*H, C's batch) reads the (S, D) matrix of head h of
 * batch row b in place: rows S apart by X's row stride, columns of one head contiguous.
 * H = nb / B. The batch then has two strides (over b and over h): one strided-batch call
 * per b, over its H heads. */
typedef struct {
  char *data;
  int64_t rows, cols, s0, s1;
  int64_t outer, inner;   /* element strides between batch rows b and between heads h */
} mview;

/* A rank-3 view (nb or 1, rows, cols), or with `head` the unsplit (B, S, H*D) X, as the
 * matrices of a batch of nb = B*H products. */
static mview head_or_plain(view v, int head, int64_t H) {
  mview m;
  m.data = v.data;
  m.rows = v.sizes[1];
  m.s0 = v.strides[1];
  m.s1 = v.strides[2];
  if (head) {
    m.cols = v.sizes[2] / H;
    m.inner = m.cols * v.strides[2];
    m.outer = v.strides[0];
  } else {
    m.cols = v.sizes[2];
    m.inner = v.sizes[0] > 1 ? v.strides[0] : 0;   /* a batch of 1 broadcasts */
    m.outer = m.inner * H;
  }
  return m;
}

static mview mview_t(mview m) {   /* the transposed matrices (no copy) */
  int64_t t = m.rows;
  m.rows = m.cols;
  m.cols = t;
  t = m.s0;
  m.s0 = m.s1;
  m.s1 = t;
  return m;
}

DEFINE_GEMM(float, f32, BLAS_FN(sgemm), BLAS_FN(sgemv), BLAS_FN(sgemm_batch_strided))
DEFINE_GEMM(double, f64, BLAS_FN(dgemm), BLAS_FN(dgemv), BLAS_FN(dgemm_batch_strided))

/* -- fused attention (relax-dispatch-library's `relax_blas_attention_h<q><k><v><o>[_safe][_tiled]_<t>`)
 *
 *   out = softmax(max(q @ k^T * scale[h] + bias, lo)) @ v * live
 *
 * over nb = B*H products (batch row b, head h): the imported scaled_dot_product_attention
 * with its masks as the importer writes them (relax_mlir/frontend/torch/aten.py `_sdpa`).
 * q (nb, L, E), k (nb, S, E), v (nb, S, Ev) and out (nb, L, Ev) each arrive plain or, when
 * its flag is 1, as a head view (see mview: the unsplit (B, ., H*D) projection; for out,
 * the (B, L, H*Ev) tensor the graph's head merge would have copied into). scale (H,) is the
 * per-head scale (its length gives H); lo (0-d) the clamp (-inf: none); bias
 * (nb | B | 1, L | 1, S | 1) and live (nb | B | 1, L | 1, 1) broadcast, a first dim of B
 * indexing batch rows only (a per-sequence mask is not copied per head). The `_safe` entries
 * give 0 for a row whose every score is -inf (torch's safe softmax, for float masks). k and v
 * may hold Hk heads per batch row for Hk dividing H (grouped-query attention): plain, B*Hk
 * products; as head views, (B, S, Hk*D) with D the head size of q (for k) or of out (for v).
 * Query head h then reads k / v head h / (H/Hk) (repeat_interleave: transformers' repeat_kv,
 * sdpa's enable_gqa), or h % Hk in the `_tiled` entries (the k / v heads tiled H/Hk times:
 * as relax_mlir/llm's group-major query heads need).
 * The (L, S) scores are never written to memory: a task takes ATT_ROWS query rows of one
 * head, forms their scores in a per-thread buffer (one gemm), runs the masked softmax over
 * each row in place (vectorized exp) and multiplies by v into out (a second gemm). Tasks
 * are split over the BLAS threads (MKL: its OpenMP pool; its gemm then runs sequentially).
 * Key columns that the bias masks in every row of a task (a causal mask's upper triangle,
 * a sliding window's past, padding) are skipped by both gemms and the softmax (att_live). */
#define ATT_ROWS 64
#ifdef _OPENMP   /* MKL builds */
#define ATT_OMP_PARALLEL _Pragma("omp parallel num_threads(nt)")
#define ATT_OMP_FOR _Pragma("omp for schedule(static)")
#else
#define ATT_OMP_PARALLEL
#define ATT_OMP_FOR
#endif

typedef struct {          /* a broadcasting 3-D operand: stride 0 along each size-1 axis */
  const char *data;
  int64_t n0, s0, s1, s2;
} bview;

static bview bview_of(view v) {
  bview b;
  b.data = v.data;
  b.n0 = v.sizes[0];
  b.s0 = v.sizes[0] == 1 ? 0 : v.strides[0];
  b.s1 = v.sizes[1] == 1 ? 0 : v.strides[1];
  b.s2 = v.sizes[2] == 1 ? 0 : v.strides[2];
  return b;
}

/* The element offset of product (b, h): dim 0 is nb = B*H, B (batch rows) or 1. */
static int64_t bview_at(bview v, int64_t b, int64_t h, int64_t B, int64_t H) {
  return v.n0 == B * H ? (b * H + h) * v.s0 : b * v.s0;   /* size 1: s0 == 0 */
}

/* k or v with Hk heads per batch row for H query heads (Hk dividing H: grouped-query
 * attention), *group = H/Hk (else 1): plain, B*Hk products; a head view, (B, S, Hk*d) with d the
 * head size of q (for k) or of the output (for v). */
static mview kv_heads(view v, int head, int64_t d, int64_t B, int64_t H, int64_t *group) {
  mview m = head_or_plain(v, head, H);
  *group = 1;
  if (head) {
    if (d > 0 && v.sizes[2] != d * H && v.sizes[2] % d == 0 && H % (v.sizes[2] / d) == 0) {
      *group = H / (v.sizes[2] / d);
      m.cols = d;
      m.inner = d * v.strides[2];
    }
  } else if (B > 0 && v.sizes[0] != B * H && v.sizes[0] > 1 && v.sizes[0] % B == 0) {
    int64_t hk = v.sizes[0] / B;
    if (H % hk == 0) {
      *group = H / hk;
      m.outer = m.inner * hk;
    }
  }
  return m;
}

/* The k / v head of query head h: h / group (repeat_interleave), or h % (H/group) (tiled). */
static inline int64_t kv_head(int64_t h, int64_t group, int64_t H, int tiled) {
  return tiled ? h % (H / group) : h / group;
}

static int blas_max_threads(void) {
#ifdef RELAX_BLAS_MKL
  return MKL_Get_Max_Threads();
#else
  return 1;   /* OpenBLAS builds: no OpenMP here; its gemm threads itself */
#endif
}

/* exp(x) for x <= 0 in the scheme of relax-expand-math (Cephes expf, 0 below -86.5): plain
 * arithmetic, so that the row loops vectorize. */
static inline float att_expf(float x) {
  float c = x < -86.5f ? -86.5f : x;
  float t = c * 1.44269504088896341f + 0.5f;
  int32_t n = (int32_t)(t + 256.0f) - 256;            /* floor(t), t > -256 */
  float fn = (float)n;
  float r = c - fn * 0.693359375f - fn * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  union { int32_t i; float f; } p2;
  p2.i = (n + 127) << 23;
  float e = y * p2.f;
  return x < -86.5f ? 0.0f : e;
}
static inline double att_exp(double x) { return exp(x); }

/* One row of scores in place: x = max(x * scale + bias, lo); x = softmax(x). The
 * reductions are `omp simd` loops (built with -fopenmp-simd or -fopenmp): their partial
 * sums and maxima run in vector lanes. */
#define ATT_ROW(T, S, EXP, ATTR, SUFFIX)                                                      \
  ATTR static void S##_att_row##SUFFIX(int64_t n, T *x, T scale, const T *bias, int64_t sb,   \
                                       T lo, int safe) {                                      \
    T m = lo;                                                                                 \
    if (sb == 1) {                                                                            \
      _Pragma("omp simd reduction(max:m)")                                                    \
      for (int64_t j = 0; j < n; ++j) {                                                       \
        T v = x[j] * scale + bias[j];                                                         \
        v = v < lo ? lo : v;                                                                  \
        x[j] = v;                                                                             \
        m = v > m ? v : m;                                                                    \
      }                                                                                       \
    } else {                                                                                  \
      T c = bias[0];  /* sb == 0: one bias for the row */                                     \
      _Pragma("omp simd reduction(max:m)")                                                    \
      for (int64_t j = 0; j < n; ++j) {                                                       \
        T v = x[j] * scale + c;                                                               \
        v = v < lo ? lo : v;                                                                  \
        x[j] = v;                                                                             \
        m = v > m ? v : m;                                                                    \
      }                                                                                       \
    }                                                                                         \
    if (safe && m == -(T)INFINITY) {   /* every score -inf: torch's safe softmax gives 0 */    \
      for (int64_t j = 0; j < n; ++j) x[j] = 0;                                               \
      return;                                                                                 \
    }                                                                                         \
    T sum = 0;                                                                                \
    _Pragma("omp simd reduction(+:sum)")                                                      \
    for (int64_t j = 0; j < n; ++j) {                                                         \
      T e = EXP(x[j] - m);                                                                    \
      x[j] = e;                                                                               \
      sum += e;                                                                               \
    }                                                                                         \
    T inv = (T)1 / sum;                                                                       \
    _Pragma("omp simd")                                                                       \
    for (int64_t j = 0; j < n; ++j) x[j] = x[j] * inv;                                        \
  }
ATT_ROW(float, f32, att_expf, , _generic)
ATT_ROW(double, f64, att_exp, , _generic)
#if defined(__x86_64__)
#include <immintrin.h>
/* The same row with AVX-512 intrinsics (GCC does not vectorize att_expf's loop). */
__attribute__((target("avx512f"))) static __m512 att_exp512(__m512 x) {
  __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-86.5f), _CMP_LT_OQ);
  __m512 c = _mm512_mask_blend_ps(under, x, _mm512_set1_ps(-86.5f));   /* NaN stays NaN */
  __m512 t = _mm512_fmadd_ps(c, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f));
  __m512 fn = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), c);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i n = _mm512_cvttps_epi32(fn);
  __m512 p2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
  return _mm512_mask_blend_ps(under, _mm512_mul_ps(y, p2), _mm512_setzero_ps());
}

__attribute__((target("avx512f"))) static void f32_att_row_avx512(int64_t n, float *x, float scale,
                                                                   const float *bias, int64_t sb, float lo,
                                                                   int safe) {
  __m512 vs = _mm512_set1_ps(scale), vlo = _mm512_set1_ps(lo), vm = vlo;
  __m512 vc = _mm512_set1_ps(sb == 1 ? 0.0f : bias[0]);
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
    __m512 b = sb == 1 ? _mm512_maskz_loadu_ps(k, bias + j) : vc;
    __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + j), vs), b);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, vlo, _CMP_LT_OQ), v, vlo);
    _mm512_mask_storeu_ps(x + j, k, v);
    vm = _mm512_mask_max_ps(vm, k, vm, v);
  }
  float m = _mm512_reduce_max_ps(vm);
  if (safe && m == -INFINITY) {   /* every score -inf: torch's safe softmax gives 0 */
    memset(x, 0, sizeof(float) * (size_t)n);
    return;
  }
  __m512 vmax = _mm512_set1_ps(m), vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
    __m512 e = att_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vmax));
    _mm512_mask_storeu_ps(x + j, k, e);
    vsum = _mm512_mask_add_ps(vsum, k, vsum, e);
  }
  __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(x + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + j), inv));
  }
}
#endif

/* The key columns [*j0, *j1) that the bias (rows x n, row stride s1, contiguous) leaves live
 * in some row: outside them every row's bias is DEAD, at most -FLT_MAX (-inf, or the f32
 * minimum masks write). With the clamp lo at most -FLT_MAX too, a dead score x*scale + bias
 * rounds to at most -FLT_MAX, more than 1e22 below the row's live maximum (the next float,
 * or double, above -FLT_MAX is that far), so its exp is exactly 0 (for finite scores below
 * 1e21): the skipped columns change no result. A row without a live column keeps the whole range (its
 * softmax decides: uniform, or 0 in the _safe entries). */
#define ATT_LIVE(T, S)                                                                        \
  /* The first live column of b in [from, to), else to: 16 columns per vector test. */       \
  static int64_t S##_first_live(const T *b, int64_t from, int64_t to) {                       \
    int64_t j = from;                                                                         \
    for (; j + 16 <= to; j += 16) {                                                           \
      int any = 0;                                                                            \
      _Pragma("omp simd reduction(|:any)")                                                    \
      for (int k = 0; k < 16; ++k) any |= b[j + k] > -(T)FLT_MAX;                             \
      if (any) break;                                                                         \
    }                                                                                         \
    for (; j < to; ++j)                                                                       \
      if (b[j] > -(T)FLT_MAX) return j;                                                       \
    return to;                                                                                \
  }                                                                                           \
  /* One past the last live column of b in [from, to), else from. */                          \
  static int64_t S##_last_live(const T *b, int64_t from, int64_t to) {                        \
    int64_t j = to;                                                                           \
    for (; j - 16 >= from; j -= 16) {                                                         \
      int any = 0;                                                                            \
      _Pragma("omp simd reduction(|:any)")                                                    \
      for (int k = 0; k < 16; ++k) any |= b[j - 16 + k] > -(T)FLT_MAX;                        \
      if (any) break;                                                                         \
    }                                                                                         \
    for (; j > from; --j)                                                                     \
      if (b[j - 1] > -(T)FLT_MAX) return j;                                                   \
    return from;                                                                              \
  }                                                                                           \
  /* The rows from the last (a causal mask's widest): a row's end is searched only beyond  \
   * the range so far. */                                                                     \
  static void S##_att_live(const T *bias, int64_t s1, int64_t rows, int64_t n, int64_t *j0,   \
                           int64_t *j1) {                                                     \
    int64_t lo = n, hi = 0;                                                                   \
    for (int64_t i = s1 ? rows - 1 : 0; i >= 0; --i) {                                        \
      const T *b = bias + i * s1;                                                             \
      int64_t f = S##_first_live(b, 0, n);                                                    \
      if (f == n) return;                                                                     \
      int64_t from = hi > f + 1 ? hi : f + 1;                                                 \
      int64_t l = S##_last_live(b, from, n);                                                  \
      lo = f < lo ? f : lo;                                                                   \
      hi = l > hi ? l : hi;                                                                   \
    }                                                                                         \
    *j0 = lo;                                                                                 \
    *j1 = hi;                                                                                 \
  }
ATT_LIVE(float, f32)
ATT_LIVE(double, f64)

typedef void (*f32_row_fn)(int64_t, float *, float, const float *, int64_t, float, int);
static f32_row_fn f32_att_row_impl(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return f32_att_row_avx512;
#endif
  return f32_att_row_generic;
}
static void f64_att_row(int64_t n, double *x, double scale, const double *bias, int64_t sb, double lo, int safe) {
  f64_att_row_generic(n, x, scale, bias, sb, lo, safe);
}

typedef struct {
  mview q, k, v, o;
  bview bias, live;
  const char *scale;
  double lo;
  int safe;   /* rows whose every score is -inf give 0 (the `_safe` entries) */
  int tiled;  /* query head h reads k / v head h % Hk, not h / (H/Hk) (the `_tiled` entries) */
  int64_t kgroup, vgroup;   /* query heads per k / v head (grouped-query attention) */
  int64_t B, H, L, Skv;
} att_args;

#define DEFINE_ATTENTION(T, S)                                                                \
  /* Tasks [t0, t1) of (b, h, block of ATT_ROWS query rows), buf: ATT_ROWS x S scores. */    \
  static void S##_att_tasks(const att_args *a, int64_t t0, int64_t t1, T *buf) {             \
    int64_t nblk = (a->L + ATT_ROWS - 1) / ATT_ROWS, Sn = a->Skv;                               \
    int64_t E = a->q.cols, Ev = a->v.cols;                                                    \
    for (int64_t t = t0; t < t1; ++t) {                                                       \
      int64_t b = t / (a->H * nblk), h = (t / nblk) % a->H, i0 = (t % nblk) * ATT_ROWS;      \
      int64_t rows = a->L - i0 < ATT_ROWS ? a->L - i0 : ATT_ROWS;                             \
      const T *Q = (const T *)a->q.data + b * a->q.outer + h * a->q.inner + i0 * a->q.s0;     \
      const T *K = (const T *)a->k.data + b * a->k.outer                                      \
                   + kv_head(h, a->kgroup, a->H, a->tiled) * a->k.inner;                      \
      const T *V = (const T *)a->v.data + b * a->v.outer                                      \
                   + kv_head(h, a->vgroup, a->H, a->tiled) * a->v.inner;                      \
      T *O = (T *)a->o.data + b * a->o.outer + h * a->o.inner + i0 * a->o.s0;                 \
      T scale = ((const T *)a->scale)[h];                                                     \
      const T *bias = (const T *)a->bias.data + bview_at(a->bias, b, h, a->B, a->H)           \
                      + i0 * a->bias.s1;                                                      \
      int64_t j0 = 0, j1 = Sn;   /* the live key columns of these rows (att_live) */          \
      if (a->bias.s2 == 1 && a->lo <= -(double)FLT_MAX)                                       \
        S##_att_live(bias, a->bias.s1, rows, Sn, &j0, &j1);                                   \
      int64_t n = j1 - j0;                                                                    \
      /* scores (rows, n) = Q K^T: K's (S, E) matrix read transposed, from key j0 */          \
      S##_gemm(rows, n, E, Q, a->q.s0, a->q.s1, K + j0 * a->k.s0, a->k.s1, a->k.s0, NULL, 0,  \
               buf, n, 1);                                                                    \
      for (int64_t i = 0; i < rows; ++i)                                                      \
        S##_att_row(n, buf + i * n, scale, bias + i * a->bias.s1 + j0 * a->bias.s2,           \
                    a->bias.s2, (T)a->lo, a->safe);                                           \
      S##_gemm(rows, Ev, n, buf, n, 1, V + j0 * a->v.s0, a->v.s0, a->v.s1, NULL, 0, O,        \
               a->o.s0, a->o.s1);                                                             \
      const T *live = (const T *)a->live.data + bview_at(a->live, b, h, a->B, a->H);          \
      for (int64_t i = 0; i < rows; ++i) {                                                    \
        T f = live[(i0 + i) * a->live.s1];                                                    \
        if (f != (T)1)                                                                        \
          for (int64_t j = 0; j < Ev; ++j) O[i * a->o.s0 + j * a->o.s1] *= f;                 \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static void S##_attention(const att_args *a) {                                              \
    int64_t nblk = (a->L + ATT_ROWS - 1) / ATT_ROWS, ntask = a->B * a->H * nblk;              \
    if (ntask <= 0) return;                                                                   \
    if (a->Skv <= 0) {   /* no keys: every output row is 0 (an empty sum) */                    \
      for (int64_t b = 0; b < a->B; ++b)                                                      \
        for (int64_t h = 0; h < a->H; ++h)                                                    \
          S##_fill(a->L, a->v.cols, NULL, 0, (T *)a->o.data + b * a->o.outer + h * a->o.inner,  \
                   a->o.s0, a->o.s1);                                                         \
      return;                                                                                 \
    }                                                                                         \
    after_fork();                                                                             \
    size_t bytes = sizeof(T) * (size_t)ATT_ROWS * (size_t)a->Skv;                               \
    double work = (double)a->B * a->H * a->L * a->Skv * (a->q.cols + a->v.cols);              \
    int nt = blas_max_threads();                                                              \
    if (nt > ntask) nt = (int)ntask;                                                          \
    if (work < pack_fork_flops) nt = 1;                                                       \
    if (nt <= 1) {   /* never an OpenMP region on one thread (a forked child: see after_fork) */ \
      T *buf = malloc(bytes);                                                                 \
      if (!buf) abort();                                                                      \
      S##_att_tasks(a, 0, ntask, buf);                                                  \
      free(buf);                                                                              \
      return;                                                                                 \
    }                                                                                         \
    ATT_OMP_PARALLEL                                                                          \
    {                                                                                         \
      T *buf = malloc(bytes);                                                                 \
      if (!buf) abort();                                                                      \
      ATT_OMP_FOR                                                                             \
      for (int64_t t = 0; t < ntask; ++t) S##_att_tasks(a, t, t + 1, buf);              \
      free(buf);                                                                              \
    }                                                                                         \
  }                                                                                           \
  static void S##_attention_entry(void *q, int hq, void *k, int hk, void *v, int hv, void *scale, \
                                  void *bias, void *lo, void *live, void *out, int ho, int safe,   \
                                  int tiled) {                                                \
    view vq = read_desc(q, 3, sizeof(T)), vk = read_desc(k, 3, sizeof(T));                    \
    view vv = read_desc(v, 3, sizeof(T)), vo = read_desc(out, 3, sizeof(T));                  \
    view vs = read_desc(scale, 1, sizeof(T)), vl = read_desc(lo, 0, sizeof(T));               \
    att_args a;                                                                               \
    a.H = vs.sizes[0];                                                                        \
    if (a.H <= 0) return;                                                                     \
    a.B = ho ? vo.sizes[0] : vo.sizes[0] / a.H;                                               \
    a.L = vo.sizes[1];                                                                        \
    a.Skv = vk.sizes[1];                                                                      \
    a.q = head_or_plain(vq, hq, a.H);                                                         \
    a.o = head_or_plain(vo, ho, a.H);                                                         \
    a.k = kv_heads(vk, hk, a.q.cols, a.B, a.H, &a.kgroup);                                    \
    a.v = kv_heads(vv, hv, a.o.cols, a.B, a.H, &a.vgroup);                                    \
    a.bias = bview_of(read_desc(bias, 3, sizeof(T)));                                         \
    a.live = bview_of(read_desc(live, 3, sizeof(T)));                                         \
    a.scale = vs.data;   /* contiguous (H,): relax-dispatch-library makes it */               \
    a.lo = (double)*(const T *)vl.data;                                                       \
    a.safe = safe;                                                                            \
    a.tiled = tiled;                                                                          \
    S##_attention(&a);                                                                        \
  }

/* B given as its transpose: the same view with its last two axes swapped (no copy). */
static view swap_last(view v) {
  int r = v.rank;
  int64_t t = v.sizes[r - 1];
  v.sizes[r - 1] = v.sizes[r - 2];
  v.sizes[r - 2] = t;
  t = v.strides[r - 1];
  v.strides[r - 1] = v.strides[r - 2];
  v.strides[r - 2] = t;
  return v;
}

/* C = A @ op(B) [+ bias] from descriptors; tb: B arrives as its transpose (swap_last). */
#define ENTRY_HELPER(T, S)                                                                    \
  static void S##_entry(void *a, int ra, void *b, int rb, int tb, void *bias, void *c, int rc) { \
    view vb = read_desc(b, rb, sizeof(T)), vbias;                                             \
    if (bias) vbias = read_desc(bias, 1, sizeof(T));                                          \
    S##_matmul(read_desc(a, ra, sizeof(T)), tb ? swap_last(vb) : vb, bias ? &vbias : NULL,    \
               read_desc(c, rc, sizeof(T)));                                                  \
  }
ENTRY_HELPER(float, f32)
ENTRY_HELPER(double, f64)

/* C (nb, M, N) = A @ op(B), ha / hb: that operand is a head view (see mview). */
#define HEADS_HELPER(T, S)                                                                    \
  static void S##_heads_entry(void *a, int ha, void *b, int hb, int tb, void *c) {            \
    view va = read_desc(a, 3, sizeof(T)), vb = read_desc(b, 3, sizeof(T));                    \
    view vc = read_desc(c, 3, sizeof(T));                                                     \
    int64_t nb = vc.sizes[0], nouter = ha ? va.sizes[0] : vb.sizes[0];                        \
    if (nb <= 0 || nouter <= 0 || vc.sizes[1] <= 0 || vc.sizes[2] <= 0) return;                \
    int64_t H = nb / nouter;                                                                  \
    mview mb = head_or_plain(vb, hb, H);                                                      \
    S##_matmul_heads(head_or_plain(va, ha, H), tb ? mview_t(mb) : mb,                         \
                     head_or_plain(vc, 0, H), nouter, H);                                     \
  }
HEADS_HELPER(float, f32)
HEADS_HELPER(double, f64)

#define HEADS_ENTRY(HA, HB, S)                                                                \
  void _mlir_ciface_relax_blas_matmul_33_h##HA##HB##_##S(void *a, void *b, void *c) {         \
    S##_heads_entry(a, HA, b, HB, 0, c);                                                      \
  }                                                                                           \
  void _mlir_ciface_relax_blas_matmul_tb_33_h##HA##HB##_##S(void *a, void *bt, void *c) {     \
    S##_heads_entry(a, HA, bt, HB, 1, c);                                                     \
  }
#define HEADS_ENTRIES(S) HEADS_ENTRY(1, 0, S) HEADS_ENTRY(0, 1, S) HEADS_ENTRY(1, 1, S)
HEADS_ENTRIES(f32)
HEADS_ENTRIES(f64)

#define ENTRY(RA, RB, RC, T, S)                                                               \
  void _mlir_ciface_relax_blas_matmul_##RA##RB##_##S(void *a, void *b, void *c) {             \
    S##_entry(a, RA, b, RB, 0, NULL, c, RC);                                                  \
  }                                                                                           \
  void _mlir_ciface_relax_blas_matmul_bias_##RA##RB##_##S(void *a, void *b, void *bias,       \
                                                          void *c) {                          \
    S##_entry(a, RA, b, RB, 0, bias, c, RC);                                                  \
  }                                                                                           \
  void _mlir_ciface_relax_blas_matmul_tb_##RA##RB##_##S(void *a, void *bt, void *c) {         \
    S##_entry(a, RA, bt, RB, 1, NULL, c, RC);                                                 \
  }                                                                                           \
  void _mlir_ciface_relax_blas_matmul_bias_tb_##RA##RB##_##S(void *a, void *bt, void *bias,   \
                                                             void *c) {                       \
    S##_entry(a, RA, bt, RB, 1, bias, c, RC);                                                 \
  }

#define ENTRIES(T, S) ENTRY(2, 2, 2, T, S) ENTRY(3, 3, 3, T, S) ENTRY(3, 2, 3, T, S) ENTRY(2, 3, 3, T, S)

ENTRIES(float, f32)
ENTRIES(double, f64)

static f32_row_fn f32_att_row_fn = NULL;
static void f32_att_row(int64_t n, float *x, float scale, const float *bias, int64_t sb, float lo, int safe) {
  if (!f32_att_row_fn) f32_att_row_fn = f32_att_row_impl();   /* the same value in every thread */
  f32_att_row_fn(n, x, scale, bias, sb, lo, safe);
}
DEFINE_ATTENTION(float, f32)
DEFINE_ATTENTION(double, f64)

#define ATTENTION_ENTRY_2(HQ, HK, HV, HO, SAFE, TILED, SUFFIX, S)                             \
  void _mlir_ciface_relax_blas_attention_h##HQ##HK##HV##HO##SUFFIX##_##S(                     \
      void *q, void *k, void *v, void *scale, void *bias, void *lo, void *live, void *out) {  \
    S##_attention_entry(q, HQ, k, HK, v, HV, scale, bias, lo, live, out, HO, SAFE, TILED);    \
  }
#define ATTENTION_ENTRY(HQ, HK, HV, HO, S)                                                    \
  ATTENTION_ENTRY_2(HQ, HK, HV, HO, 0, 0, , S)                                                \
  ATTENTION_ENTRY_2(HQ, HK, HV, HO, 1, 0, _safe, S)                                           \
  ATTENTION_ENTRY_2(HQ, HK, HV, HO, 0, 1, _tiled, S)                                          \
  ATTENTION_ENTRY_2(HQ, HK, HV, HO, 1, 1, _safe_tiled, S)
#define ATTENTION_ENTRIES_O(HQ, HK, HV, S) ATTENTION_ENTRY(HQ, HK, HV, 0, S) ATTENTION_ENTRY(HQ, HK, HV, 1, S)
#define ATTENTION_ENTRIES_V(HQ, HK, S) ATTENTION_ENTRIES_O(HQ, HK, 0, S) ATTENTION_ENTRIES_O(HQ, HK, 1, S)
#define ATTENTION_ENTRIES_K(HQ, S) ATTENTION_ENTRIES_V(HQ, 0, S) ATTENTION_ENTRIES_V(HQ, 1, S)
#define ATTENTION_ENTRIES(S) ATTENTION_ENTRIES_K(0, S) ATTENTION_ENTRIES_K(1, S)
ATTENTION_ENTRIES(f32)
ATTENTION_ENTRIES(f64)

/* -- convolution as GEMM (relax-conv-gemm{gemm=blas}'s `relax_blas_conv_gemm[_bias]_f32`) ----
 *
 *   relax_blas_conv_gemm_f32(W, col, Y)             Y[b] = W @ col[b]
 *   relax_blas_conv_gemm_bias_f32(W, col, bias, Y)  Y[b] = W @ col[b] + bias (per row)
 *
 * W (O, C, KH, KW) is read as the (O, C*KH*KW) matrix it is in memory; col is the generated
 * im2col kernel's (N, C*KH*KW, OH, OW) or, for a 1x1 convolution with stride 1 and no
 * padding, the input itself (N, C, H, W): either way per image a (K, P) matrix whose columns
 * are the output pixels (its last two dims contiguous); Y is the NCHW output (N, O, OH, OW),
 * per image the (O, P) product. bias is (O, 1, 1) (the importer's reshape of a conv bias),
 * broadcast along each output row. One gemm per image, the provider's threads inside it;
 * layouts BLAS cannot take (a non-unit inner stride) run a plain loop here. */
static char *conv_desc(void *d, int rank, int64_t *sizes, int64_t *strides) {
  struct hdr { void *allocated; char *aligned; int64_t offset; int64_t rest[]; } *h = d;
  for (int i = 0; i < rank; ++i) {
    sizes[i] = h->rest[i];
    strides[i] = h->rest[rank + i];
  }
  return h->aligned + h->offset * (int64_t)sizeof(float);
}

static void f32_conv_gemm(void *w, void *col, void *bias, void *y) {
  int64_t ws[4], wst[4], cs[4], cst[4], ys[4], yst[4], bs[3] = {0}, bst[3] = {0};
  const float *W = (const float *)conv_desc(w, 4, ws, wst);
  const float *X = (const float *)conv_desc(col, 4, cs, cst);
  float *Y = (float *)conv_desc(y, 4, ys, yst);
  const float *B = bias ? (const float *)conv_desc(bias, 3, bs, bst) : NULL;
  int64_t N = ys[0], O = ys[1], P = ys[2] * ys[3], K = ws[1] * ws[2] * ws[3];
  if (N <= 0 || O <= 0 || P <= 0) return;
  /* row strides (elements) of the three matrices, 0: not a BLAS layout */
  int64_t lda = (wst[3] == 1 || ws[3] == 1) && (wst[2] == ws[3] || ws[2] == 1) &&
                (wst[1] == ws[2] * ws[3] || ws[1] == 1) ? wst[0] : 0;
  int64_t ldb = (cst[3] == 1 || cs[3] == 1) && (cst[2] == cs[3] || cs[2] == 1) ? cst[1] : 0;
  int64_t ldc = (yst[3] == 1 || ys[3] == 1) && (yst[2] == ys[3] || ys[2] == 1) ? yst[1] : 0;
  int blas = lda >= K && ldb >= P && ldc >= P && K > 0 && O <= INT_MAX && P <= INT_MAX && K <= INT_MAX &&
             lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX &&
             (double)O * (double)P * (double)K >= small_flops;
  for (int64_t b = 0; b < N; ++b) {
    const float *Xb = X + b * cst[0];
    float *Yb = Y + b * yst[0];
    if (blas) {
      if (B)
        for (int64_t o = 0; o < O; ++o) {
          float v = B[o * bst[0]];
          float *row = Yb + o * ldc;
          for (int64_t p = 0; p < P; ++p) row[p] = v;
        }
      after_fork();
      BLAS_FN(sgemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)O, (int)P, (int)K, 1.0f, W, (int)lda, Xb,
                     (int)ldb, B ? 1.0f : 0.0f, Yb, (int)ldc);
      continue;
    }
    /* any strides: element (k, p) of col, (o, k) of W, (o, p) of Y */
    for (int64_t o = 0; o < O; ++o)
      for (int64_t p = 0; p < P; ++p) {
        int64_t ph = p / ys[3], pw = p % ys[3];
        float acc = B ? B[o * bst[0]] : 0.0f;
        for (int64_t k = 0; k < K; ++k) {
          int64_t kc = k / (ws[2] * ws[3]), kr = k % (ws[2] * ws[3]);
          float a = W[o * wst[0] + kc * wst[1] + (kr / ws[3]) * wst[2] + (kr % ws[3]) * wst[3]];
          float x = Xb[k * cst[1] + (p / cs[3]) * cst[2] + (p % cs[3]) * cst[3]];
          acc += a * x;
        }
        Yb[o * yst[1] + ph * yst[2] + pw * yst[3]] = acc;
      }
  }
}

void _mlir_ciface_relax_blas_conv_gemm_f32(void *w, void *col, void *y) { f32_conv_gemm(w, col, NULL, y); }
void _mlir_ciface_relax_blas_conv_gemm_bias_f32(void *w, void *col, void *bias, void *y) {
  f32_conv_gemm(w, col, bias, y);
}
