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
 *
 * <ra><rb> are the operand ranks: 22 (M,K)x(K,N); 33 (b,M,K)x(b,N,K), either batch 1
 * broadcasting; 32 (b,M,K)x(K,N); 23 (M,K)x(b,K,N). <t> is f32 or f64.
 *
 * Run-time policy (sizes are symbolic at compile time, so this is where they are known):
 * M == 1 (or N == 1) calls gemv; M*N*K below the small threshold runs a plain loop here
 * (no BLAS call overhead); otherwise gemm. A batch whose A and C rows collapse (the common
 * (b,M,K)x(K,N) case) becomes ONE gemm of b*M rows.
 *
 * Environment: RELAX_BLAS_NUM_THREADS (else the provider's own OPENBLAS_NUM_THREADS /
 * MKL_NUM_THREADS is left to it; else 2 threads), RELAX_BLAS_SMALL_FLOPS (the small
 * threshold, default 4096). MKL: MKL_THREADING_LAYER is honoured; unset, the GNU OpenMP
 * layer (libgomp, as PyTorch uses) is selected where libgomp can be loaded -- measured
 * fastest here with 2 threads -- else the sequential layer (MKL aborts the process when the
 * runtime of its layer is missing, so the layer is never chosen blind).
 *
 * fork(): GNU OpenMP does not survive fork (a child that uses the parent's thread pool hangs
 * in its first parallel region), so a pthread_atfork child handler marks the child and its
 * next BLAS call sets MKL to 1 thread first (RELAX_BLAS_NUM_THREADS does not apply there).
 * OpenBLAS re-initialises its own threads in the child.
 *
 * Linked two ways: as its own shared library for the JIT (cached per provider), and as an
 * object into every exported model (relax_mlir/runtime/aot.py), where only the model's
 * entry points are exported; the BLAS itself is then a dependency by soname.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };

#ifdef RELAX_BLAS_MKL
#define BLAS_FN(name) cblas_##name
#define RELAX_BLAS_PROVIDER "mkl"
void MKL_Set_Num_Threads(int n);
int MKL_Set_Threading_Layer(int layer);
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

__attribute__((constructor)) static void relax_blas_init(void) {
#ifdef RELAX_BLAS_MKL
  if (!getenv("MKL_THREADING_LAYER"))
    MKL_Set_Threading_Layer(dlopen("libgomp.so.1", RTLD_LAZY | RTLD_GLOBAL) ? MKL_THREADING_GNU
                                                                           : MKL_THREADING_SEQUENTIAL);
#endif
  pthread_atfork(NULL, NULL, mark_forked_child);
  const char *t = getenv("RELAX_BLAS_NUM_THREADS");
  if (t && atoi(t) > 0)
    set_threads(atoi(t));
  else if (!getenv(PROVIDER_THREADS_ENV))
    set_threads(2);
  const char *s = getenv("RELAX_BLAS_SMALL_FLOPS");
  if (s) small_flops = atof(s);
}

/* For benchmarks and tests (ctypes). */
void relax_blas_set_num_threads(int n) { set_threads(n); }
const char *relax_blas_provider(void) { return RELAX_BLAS_PROVIDER; }
void relax_blas_set_small_flops(double f) { small_flops = f; }
double relax_blas_get_small_flops(void) { return small_flops; }

#define DEFINE_GEMM(T, S, GEMM, GEMV)                                                          \
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
    if (bias || small)                                                                        \
      for (int64_t i = 0; i < M; ++i)                                                         \
        for (int64_t j = 0; j < N; ++j) C[i * sc0 + j * sc1] = bias ? bias[j * sbias] : (T)0; \
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
    if (M == 1) {                                                                             \
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
    for (int64_t i = 0; i < batch; ++i)                                                       \
      S##_gemm(M, N, K, A + i * abs_, sa0, sa1, B + i * bbs, sb0, sb1, bp, sbias,             \
               C + i * cbs, sc0, sc1);                                                        \
  }

DEFINE_GEMM(float, f32, BLAS_FN(sgemm), BLAS_FN(sgemv))
DEFINE_GEMM(double, f64, BLAS_FN(dgemm), BLAS_FN(dgemv))

#define ENTRY(RA, RB, RC, T, S)                                                               \
  void _mlir_ciface_relax_blas_matmul_##RA##RB##_##S(void *a, void *b, void *c) {             \
    S##_matmul(read_desc(a, RA, sizeof(T)), read_desc(b, RB, sizeof(T)), NULL,                \
               read_desc(c, RC, sizeof(T)));                                                  \
  }                                                                                           \
  void _mlir_ciface_relax_blas_matmul_bias_##RA##RB##_##S(void *a, void *b, void *bias,       \
                                                          void *c) {                          \
    view vb = read_desc(bias, 1, sizeof(T));                                                  \
    S##_matmul(read_desc(a, RA, sizeof(T)), read_desc(b, RB, sizeof(T)), &vb,                 \
               read_desc(c, RC, sizeof(T)));                                                  \
  }

#define ENTRIES(T, S) ENTRY(2, 2, 2, T, S) ENTRY(3, 3, 3, T, S) ENTRY(3, 2, 3, T, S) ENTRY(2, 3, 3, T, S)

ENTRIES(float, f32)
ENTRIES(double, f64)
