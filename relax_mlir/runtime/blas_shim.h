/* relax_blas: the BLAS entry points behind relax-dispatch-library -- the shared header.
 *
 * The library is built from several C files, one job each, compiled together into one
 * shared library per BLAS provider (relax_mlir/runtime/libraries.py, shim_sources(); the
 * build cache key hashes every source and this header):
 *   blas_adapter.c       the CBLAS adapter: descriptors -> gemm / gemv / strided-batch calls,
 *                        the matmul and conv entry points (`_mlir_ciface_relax_blas_*`)
 *   blas_policy.c        the dispatch policy: the provider's threading layer and thread count,
 *                        the thresholds and packing ranges (environment, CPU), their setters
 *   blas_gemm_avx512.c   bound weights packed once and the AVX-512 GEMM over them
 *   blas_attention.c     fused attention (`relax_blas_attention_*`)
 *   blas_fork.c          fork handling (a forked child's first BLAS call)
 *   quant_kernels.c      the GGUF quantized-weight kernels (no BLAS)
 *
 * The same sources, built once per BLAS provider (relax_mlir/runtime/libraries.py picks it):
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
 * Linked two ways: as its own shared library for the JIT (cached per provider), and as an
 * object into every exported model (relax_mlir/runtime/aot.py), where only the model's
 * entry points are exported; the BLAS itself is then a dependency by soname.
 *
 * Symbols shared between the files are hidden (never exported) and carry the prefix
 * relax_shim_ (the renaming table below), so that they cannot meet a name of the model they
 * are linked into.
 */
#ifndef RELAX_BLAS_SHIM_H
#define RELAX_BLAS_SHIM_H

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
static inline void set_threads(int n) { MKL_Set_Num_Threads(n); }
#define PROVIDER_THREADS_ENV "MKL_NUM_THREADS"
#define RESET_THREADS_AFTER_FORK 1
#else
#define BLAS_FN(name) scipy_cblas_##name
#define RELAX_BLAS_PROVIDER "openblas"
void scipy_openblas_set_num_threads(int n);
static inline void set_threads(int n) { scipy_openblas_set_num_threads(n); }
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

#if defined(RELAX_BLAS_MKL) && defined(__x86_64__)
#define PACKED_KERNELS 1   /* the packed AVX-512 GEMM over bound weights (blas_gemm_avx512.c) */
#endif


typedef struct {
  char *data;             /* aligned + offset * elem size */
  int rank;
  int64_t sizes[3], strides[3];
} view;

/* A ranked memref descriptor: {allocated, aligned, offset, sizes[rank], strides[rank]}. */
static inline view read_desc(void *d, int rank, size_t esize) {
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
static inline mview head_or_plain(view v, int head, int64_t H) {
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

static inline mview mview_t(mview m) {   /* the transposed matrices (no copy) */
  int64_t t = m.rows;
  m.rows = m.cols;
  m.cols = t;
  t = m.s0;
  m.s0 = m.s1;
  m.s1 = t;
  return m;
}


/* -- symbols shared between the shim's files: hidden, prefixed (the code uses the short names) */
#define small_flops relax_shim_small_flops
#define pack_fork_flops relax_shim_pack_fork_flops
#define panel relax_shim_panel
#define pack_supported relax_shim_pack_supported
#define pack_on relax_shim_pack_on
#define pack_min_m relax_shim_pack_min_m
#define pack_max_m relax_shim_pack_max_m
#define mkl_pack_above relax_shim_mkl_pack_above
#define after_fork relax_shim_after_fork
#define f32_packed relax_shim_f32_packed
#define f64_packed relax_shim_f64_packed
#define f32_fill relax_shim_f32_fill
#define f64_fill relax_shim_f64_fill
#define f32_gemm relax_shim_f32_gemm
#define f64_gemm relax_shim_f64_gemm

#pragma GCC visibility push(hidden)
/* blas_policy.c: the run-time policy (see there) */
extern double small_flops;       /* M*N*K below this: a plain loop, no BLAS call */
extern double pack_fork_flops;   /* work below this: one thread (packed products, attention) */
extern int64_t panel;            /* columns per packed panel: 32 or 64 */
extern int pack_supported;       /* an MKL build on an AVX-512 CPU */
extern int pack_on;              /* pack_supported and not RELAX_BLAS_PACK=0 */
extern int64_t pack_min_m, pack_max_m;   /* the M range of packed products */
extern int mkl_pack_above;       /* Intel + MKL: B in MKL's packed format for M > pack_max_m */

/* blas_fork.c: call before any BLAS call or OpenMP region (a forked child's first one). */
void after_fork(void);

/* blas_gemm_avx512.c: the packed product of a bound weight when it applies (1: C written). */
int f32_packed(int64_t M, int64_t N, int64_t K, const float *A, int64_t a0, int64_t a1, const float *B,
               int64_t sb0, int64_t sb1, float *C, int64_t ldc, int accumulate);
int f64_packed(int64_t M, int64_t N, int64_t K, const double *A, int64_t a0, int64_t a1, const double *B,
               int64_t sb0, int64_t sb1, double *C, int64_t ldc, int accumulate);

/* blas_adapter.c: C(M,N) = bias (broadcast over rows) or 0; C(M,N) = A(M,K) B(K,N) [+ bias(N)],
 * every operand with its own element strides. */
#define DECLARE_GEMM(T, S)                                                                    \
  void S##_fill(int64_t M, int64_t N, const T *bias, int64_t sbias, T *C, int64_t sc0, int64_t sc1); \
  void S##_gemm(int64_t M, int64_t N, int64_t K, const T *A, int64_t sa0, int64_t sa1, const T *B, \
                int64_t sb0, int64_t sb1, const T *bias, int64_t sbias, T *C, int64_t sc0, int64_t sc1);
DECLARE_GEMM(float, f32)
DECLARE_GEMM(double, f64)
#pragma GCC visibility pop

#endif /* RELAX_BLAS_SHIM_H */
