/* relax_blas, fused attention: the `relax_blas_attention_*` entry points (see below); its two
 * products per task run through the CBLAS adapter's gemm (blas_adapter.c).
 */
#define _GNU_SOURCE /* dladdr */
#include "blas_shim.h"

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
