/* relax_blas, bound weights packed once and the AVX-512 GEMM over them.
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
 * The ranges and the panel width are blas_policy.c's (see there for the measurements).
 */
#define _GNU_SOURCE /* dladdr */
#include "blas_shim.h"

/* -- packed bound weights (see the header) -------------------------------------------- */


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
enum { PACK_PANELS = 0, PACK_MKL = 1 };

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
int f32_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1,
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
int f32_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1,
                      const float *B, int64_t sb0, int64_t sb1, float *C, int64_t ldc, int accumulate) {
  (void)M; (void)N; (void)K; (void)A; (void)a0; (void)a1; (void)B; (void)sb0; (void)sb1;
  (void)C; (void)ldc; (void)accumulate; (void)packed_b;
  return 0;
}
#endif
/* f64 products are never packed. */
int f64_packed(int64_t M, int64_t N, int64_t K, const double *A, int64_t a0, int64_t a1,
                      const double *B, int64_t sb0, int64_t sb1, double *C, int64_t ldc, int accumulate) {
  (void)M; (void)N; (void)K; (void)A; (void)a0; (void)a1; (void)B; (void)sb0; (void)sb1;
  (void)C; (void)ldc; (void)accumulate;
  return 0;
}
