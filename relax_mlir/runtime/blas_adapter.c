/* relax_blas, the CBLAS adapter: MLIR memref descriptors -> the provider's gemm / gemv /
 * strided-batch gemm, and the matmul and conv entry points (see blas_shim.h).
 *
 * Run-time policy (sizes are symbolic at compile time, so this is where they are known):
 * M <= 3 over row-major f32 operands: quant_kernels.c's f32 GEMV (relax_quant_f32_gemv, AVX-512);
 * M == 1 (or N == 1) calls gemv; M*N*K below the small threshold runs a plain loop here
 * (no BLAS call overhead); otherwise gemm. A batch whose A and C rows collapse (the common
 * (b,M,K)x(K,N) case) becomes ONE gemm of b*M rows.
 * The thresholds are blas_policy.c's; a product over a bound weight goes to the packed GEMM
 * (blas_gemm_avx512.c) first.
 */
#define _GNU_SOURCE /* dladdr */
#include "blas_shim.h"

/* Decode-sized f32 products (M <= 3, A and B row-major) over a weight streamed from memory:
 * quant_kernels.c's prefetching f32 GEMV (1: C written), ahead of the provider's sgemv. */
__attribute__((visibility("hidden"))) int relax_shim_quant_f32_gemv(int64_t M, int64_t N, int64_t K, const float *A,
                                                                    int64_t lda, const float *B, int64_t ldb, float *C,
                                                                    int64_t ldc, int accumulate);
static inline int f32_small_m(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, int accumulate) {
  return relax_shim_quant_f32_gemv(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
static inline int f64_small_m(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, const double *B,
                              int64_t ldb, double *C, int64_t ldc, int accumulate) {
  (void)M; (void)N; (void)K; (void)A; (void)lda; (void)B; (void)ldb; (void)C; (void)ldc; (void)accumulate;
  return 0;
}

#define DEFINE_GEMM(T, S, GEMM, GEMV, GEMM_BATCH)                                              \
  /* C(M,N) = bias (broadcast over rows) or 0: unit-stride rows are a memcpy/memset each     \
   * (a strided scalar loop took ~3% of a BERT forward). */                                  \
  void S##_fill(int64_t M, int64_t N, const T *bias, int64_t sbias, T *C, int64_t sc0,  \
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
  void S##_gemm(int64_t M, int64_t N, int64_t K, const T *A, int64_t sa0, int64_t sa1, \
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
    } else if (M <= 3 && ta == CblasNoTrans && tb == CblasNoTrans &&                          \
               S##_small_m(M, N, K, A, lda, B, ldb, Cw, ldc, beta != (T)0)) {                 \
      /* decode-sized: quant_kernels.c's f32 GEMV */                                          \
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


DEFINE_GEMM(float, f32, BLAS_FN(sgemm), BLAS_FN(sgemv), BLAS_FN(sgemm_batch_strided))
DEFINE_GEMM(double, f64, BLAS_FN(dgemm), BLAS_FN(dgemv), BLAS_FN(dgemm_batch_strided))

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
