/* relax_blas: matmul and embedding kernels over weights kept in their GGUF storage formats.
 *
 * Compiled into the same relax_blas library as the shim (blas_adapter.c, blas_policy.c, ...) (relax_mlir/runtime/libraries.py
 * builds both sources into one .so per BLAS provider, and into one object for exported
 * models); this file depends on no BLAS. docs/quantization.md describes the contract.
 *
 * Layout: a quantized weight W of N rows (output features) and K columns (input features) is
 * an i8 tensor (N, RB) holding GGUF's rows as they are in the file (ggml's ne0 = K is the
 * contiguous axis), RB = K / block_size * block_bytes. Formats (block size, bytes):
 *   f16 (1, 2)   bf16 (1, 2)   q8_0 (32, 34)  q4_0 (32, 18)  q4_1 (32, 20)  q5_0 (32, 22)
 *   q5_1 (32, 24)  q4_k (256, 144)  q5_k (256, 176)  q6_k (256, 210)
 *
 * Entry points (MLIR memref descriptors, C interface; inputs first, output last):
 *   _mlir_ciface_relax_qmatmul_<fmt>(x: (M,K) f32, w: (N,RB) i8, out: (M,N) f32, threads: () i32)
 *       out = x @ dequant(w)^T, f32 accumulation of the exactly dequantized weights.
 *       threads: the calling executable's thread count (its relax-omp-threads cell, which
 *       relax-lower-host passes to these calls); NULL or < 1: the BLAS thread count.
 *   _mlir_ciface_relax_qmatmul_<fmt>_q8(x, w, out, threads)
 *       the llama.cpp way: each row of x quantized to int8 per 32 elements (scale amax/127,
 *       kept in f32, round to nearest even), int8 dot products per 32 (16 for q6_k's
 *       scales), scaled in f32. f16 / bf16: the exact kernel (no activation quantization).
 *   _mlir_ciface_relax_qtake_<fmt>(table: (V,RB) i8, ids: (S,) i64, out: (S,K) f32)
 *       out[i] = dequant(table[clamp(ids[i], 0, V-1)]).
 * Every descriptor's offset and strides are honoured (an inner stride other than 1 is copied).
 * Shapes that do not agree (K not a multiple of the block size, RB not K's row bytes, out not
 * (M, N) or (S, K)) write nothing and read nothing.
 *
 * (The AVX-512 exact q5_0 / q5_1 / q5_k GEMVs multiply the integer values v by x split into
 * three int8 digits per element instead, exd_* / q5ke below: exact integer products, x rounded
 * to 24 bits below its 32-chunk's largest element.)
 * Kernels: every quantized format decodes one chunk of 32 weights into 32 int8 values v and
 * f32 scales a0 (elements 0-15), a1 (16-31) and b, the weight being a * v + b (symmetric
 * formats: b = 0, v signed with the offset removed; q4_1, q5_1, q4_k, q5_k: v unsigned, b the
 * block's min term). The exact kernels turn v into f32 (w = fma(v, a, b), the reference's
 * values) and accumulate x * w in f32 vector lanes; the _q8 kernels take |v| as u8 and the
 * sign of v onto x's int8 (llama.cpp's trick, no overflow: |v| <= 128, |qx| <= 127) into
 * AVX-512 VNNI dpbusd (256-bit) or AVX2 maddubs + madd, one f32 FMA per 8 lanes per chunk.
 * Register tiles: up to 4 rows of x by 4 rows of W (AVX-512; AVX2 2 by 2), so each weight
 * chunk is decoded once per tile of x rows and each x load serves 4 weight rows (decode,
 * M = 1, reads every weight byte once). ISA chosen at load with __builtin_cpu_supports:
 * AVX-512 (F, BW, VL, VNNI), else AVX2 + FMA + F16C, else portable scalar C
 * (relax_quant_set_isa lowers it, for tests).
 *
 * Threads: MKL builds (-fopenmp, RELAX_BLAS_MKL) split the rows of W into one contiguous range
 * per thread, over the caller's thread count (the executable's num_threads, the `threads`
 * argument), else MKL_Get_Max_Threads() threads -- the BLAS thread count of blas_policy.c
 * (RELAX_BLAS_NUM_THREADS, relax_blas_set_num_threads) -- when M*N*K reaches the fork
 * threshold (relax_quant_set_fork_work, default 2^18, like the shim's packed products); a
 * forked child runs on one thread (never an OpenMP region there: see blas_fork.c). OpenBLAS
 * builds do the same over scipy_openblas_get_num_threads() threads (the shim's OpenBLAS count,
 * set the same ways) when this file is compiled with -fopenmp -DRELAX_QUANT_OPENMP: on its own,
 * the shim without OpenMP, the library linked to libiomp5 so that gcc's GOMP_* calls run on
 * the team of the generated kernels (relax_mlir/runtime/libraries.py, quant_openmp); without
 * libiomp5 it is compiled without them: one thread.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#define QK_X86 1
#endif

/* -- descriptors, formats ------------------------------------------------------------- */

typedef struct {
  char *data;
  int64_t sizes[2], strides[2];
} qview;

/* A ranked memref descriptor: {allocated, aligned, offset, sizes[rank], strides[rank]}. */
static qview qread(void *d, int rank, size_t esize) {
  struct hdr { void *allocated; char *aligned; int64_t offset; int64_t rest[]; } *h = d;
  qview v;
  v.data = h->aligned + h->offset * (int64_t)esize;
  v.sizes[1] = 1;
  v.strides[1] = 1;
  for (int i = 0; i < rank; ++i) {
    v.sizes[i] = h->rest[i];
    v.strides[i] = h->rest[rank + i];
  }
  return v;
}

enum { F_F16, F_BF16, F_Q8_0, F_Q4_0, F_Q4_1, F_Q5_0, F_Q5_1, F_Q4_K, F_Q5_K, F_Q6_K, F_COUNT };
static const int64_t BLOCK_SIZE[F_COUNT] = {1, 1, 32, 32, 32, 32, 32, 256, 256, 256};
static const int64_t BLOCK_BYTES[F_COUNT] = {2, 2, 34, 18, 20, 22, 24, 144, 176, 210};

static inline float h2f(const uint8_t *p) {   /* IEEE half (little endian) -> float */
  uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
  float f;
  if (e == 0) {
    f = (float)m * (1.0f / 16777216.0f);   /* zero or subnormal: m * 2^-24 */
    memcpy(&u, &f, 4);
    u |= s;
  } else if (e == 31) {
    u = s | 0x7f800000u | (m << 13);
  } else {
    u = s | ((e + 112) << 23) | (m << 13);
  }
  memcpy(&f, &u, 4);
  return f;
}

static inline float bf2f(const uint8_t *p) {
  uint32_t u = (uint32_t)(p[0] | (p[1] << 8)) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The K-quants' 6-bit scale and min of sub-block j (0..7) from their 12 packed bytes. */
static inline void scale_min_k4(int j, const uint8_t *q, int *sc, int *mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* -- chunk decoding: scales (shared), values (scalar and AVX2) ------------------------ */
/* Chunk c of a row: weights 32c .. 32c+31, value a*v + b (a0 for the first 16, a1 after). */

#define QK_INLINE static inline __attribute__((always_inline))

/* scales_<fmt>: the chunk's a0, a1, b; returns where its values start. Two copies: portable
 * (h2f) and, for the vector kernels, with F16C's conversion (scales_v_<fmt>). */
#define SCALES(SFX, H2F, ATTR)  \
ATTR const uint8_t *scales##SFX##_q8_0(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + c * 34;                                                                     \
  *a0 = *a1 = H2F(blk);                                                                                  \
  *b = 0.0f;                                                                                             \
  return blk + 2;                                                                                        \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q4_0(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + c * 18;                                                                     \
  *a0 = *a1 = H2F(blk);                                                                                  \
  *b = 0.0f;                                                                                             \
  return blk + 2;                                                                                        \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q4_1(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + c * 20;                                                                     \
  *a0 = *a1 = H2F(blk);                                                                                  \
  *b = H2F(blk + 2);                                                                                     \
  return blk + 4;                                                                                        \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q5_0(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + c * 22;                                                                     \
  *a0 = *a1 = H2F(blk);                                                                                  \
  *b = 0.0f;                                                                                             \
  return blk + 2;   /* qh (4 bytes), then qs */                                                          \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q5_1(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + c * 24;                                                                     \
  *a0 = *a1 = H2F(blk);                                                                                  \
  *b = H2F(blk + 2);                                                                                     \
  return blk + 4;   /* qh (4 bytes), then qs */                                                          \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q4_k(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + (c >> 3) * 144;                                                             \
  int j = (int)(c & 7), sc, mn;                                                                          \
  scale_min_k4(j, blk + 4, &sc, &mn);                                                                    \
  *a0 = *a1 = H2F(blk) * (float)sc;                                                                      \
  *b = -(H2F(blk + 2) * (float)mn);                                                                      \
  return blk;                                                                                            \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q5_k(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + (c >> 3) * 176;                                                             \
  int j = (int)(c & 7), sc, mn;                                                                          \
  scale_min_k4(j, blk + 4, &sc, &mn);                                                                    \
  *a0 = *a1 = H2F(blk) * (float)sc;                                                                      \
  *b = -(H2F(blk + 2) * (float)mn);                                                                      \
  return blk;                                                                                            \
}                                                                                                        \
ATTR const uint8_t *scales##SFX##_q6_k(const uint8_t *row, int64_t c, float *a0, float *a1, float *b) {  \
  const uint8_t *blk = row + (c >> 3) * 210;                                                             \
  int j = (int)(c & 7), h = j >> 2, k = j & 3;                                                           \
  float d = H2F(blk + 208);                                                                              \
  const int8_t *sc = (const int8_t *)(blk + 192) + 8 * h + 2 * k;                                        \
  *a0 = d * (float)sc[0];                                                                                \
  *a1 = d * (float)sc[1];                                                                                \
  *b = 0.0f;                                                                                             \
  return blk;                                                                                            \
}
SCALES(, h2f, QK_INLINE)

/* Scalar decoding: the 32 values v of chunk c. */
static void values_q8_0(const uint8_t *p, int64_t c, int8_t *v) {
  (void)c;
  memcpy(v, p, 32);
}
static void values_q4_0(const uint8_t *p, int64_t c, int8_t *v) {
  (void)c;
  for (int i = 0; i < 16; ++i) {
    v[i] = (int8_t)((p[i] & 0xF) - 8);
    v[i + 16] = (int8_t)((p[i] >> 4) - 8);
  }
}
static void values_q4_1(const uint8_t *p, int64_t c, int8_t *v) {
  (void)c;
  for (int i = 0; i < 16; ++i) {
    v[i] = (int8_t)(p[i] & 0xF);
    v[i + 16] = (int8_t)(p[i] >> 4);
  }
}
static void values_q5(const uint8_t *p, int8_t *v, int off) {
  uint32_t qh = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
  const uint8_t *qs = p + 4;
  for (int i = 0; i < 16; ++i) {
    v[i] = (int8_t)(((qs[i] & 0xF) | (((qh >> i) & 1) << 4)) - off);
    v[i + 16] = (int8_t)(((qs[i] >> 4) | (((qh >> (i + 16)) & 1) << 4)) - off);
  }
}
static void values_q5_0(const uint8_t *p, int64_t c, int8_t *v) { (void)c; values_q5(p, v, 16); }
static void values_q5_1(const uint8_t *p, int64_t c, int8_t *v) { (void)c; values_q5(p, v, 0); }
static void values_q4_k(const uint8_t *blk, int64_t c, int8_t *v) {
  int j = (int)(c & 7);
  const uint8_t *q = blk + 16 + 32 * (j >> 1);
  for (int i = 0; i < 32; ++i) v[i] = (int8_t)((j & 1) ? q[i] >> 4 : q[i] & 0xF);
}
static void values_q5_k(const uint8_t *blk, int64_t c, int8_t *v) {
  int j = (int)(c & 7);
  const uint8_t *qh = blk + 16, *q = blk + 48 + 32 * (j >> 1);
  for (int i = 0; i < 32; ++i)
    v[i] = (int8_t)(((j & 1) ? q[i] >> 4 : q[i] & 0xF) | (((qh[i] >> j) & 1) << 4));
}
static void values_q6_k(const uint8_t *blk, int64_t c, int8_t *v) {
  int j = (int)(c & 7), h = j >> 2, k = j & 3;
  const uint8_t *ql = blk + 64 * h + 32 * (k & 1), *qh = blk + 128 + 32 * h;
  int s = 4 * (k >> 1);
  for (int i = 0; i < 32; ++i) v[i] = (int8_t)((((ql[i] >> s) & 0xF) | (((qh[i] >> (2 * k)) & 3) << 4)) - 32);
}

#ifdef QK_X86
#define QK_T256 __attribute__((target("avx2,fma,f16c")))
#define QK_T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define QK_V256 static inline __attribute__((always_inline)) QK_T256

QK_V256 float h2f_f16c(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
SCALES(_v, h2f_f16c, QK_V256)

QK_V256 __m256i nibbles16(const uint8_t *p) {   /* 16 bytes -> low nibbles, then high nibbles */
  __m128i x = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(0xF);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(x, 4), m), _mm_and_si128(x, m));
}
QK_V256 __m256i nibbles32(const uint8_t *p, int high) {   /* 32 bytes -> their low or high nibbles */
  __m256i x = _mm256_loadu_si256((const __m256i *)p);
  if (high) x = _mm256_srli_epi16(x, 4);
  return _mm256_and_si256(x, _mm256_set1_epi8(0xF));
}
QK_V256 __m256i bits32(const uint8_t *p) {   /* byte i = 16 where bit i of the u32 at p is set */
  uint32_t u;
  memcpy(&u, p, 4);
  const __m256i which = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
  __m256i x = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)u), which), bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(x, bit), _mm256_set1_epi8(16));
}

QK_V256 __m256i vvalues_q8_0(const uint8_t *p, int64_t c) { (void)c; return _mm256_loadu_si256((const __m256i *)p); }
QK_V256 __m256i vvalues_q4_0(const uint8_t *p, int64_t c) {
  (void)c;
  return _mm256_sub_epi8(nibbles16(p), _mm256_set1_epi8(8));
}
QK_V256 __m256i vvalues_q4_1(const uint8_t *p, int64_t c) { (void)c; return nibbles16(p); }
QK_V256 __m256i vvalues_q5_0(const uint8_t *p, int64_t c) {
  (void)c;
  return _mm256_sub_epi8(_mm256_or_si256(nibbles16(p + 4), bits32(p)), _mm256_set1_epi8(16));
}
QK_V256 __m256i vvalues_q5_1(const uint8_t *p, int64_t c) {
  (void)c;
  return _mm256_or_si256(nibbles16(p + 4), bits32(p));
}
QK_V256 __m256i vvalues_q4_k(const uint8_t *blk, int64_t c) {
  int j = (int)(c & 7);
  return nibbles32(blk + 16 + 32 * (j >> 1), j & 1);
}
QK_V256 __m256i vvalues_q5_k(const uint8_t *blk, int64_t c) {
  int j = (int)(c & 7);
  __m256i bj = _mm256_set1_epi8((char)(1 << j));
  __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 16));
  __m256i hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bj), bj), _mm256_set1_epi8(16));
  return _mm256_or_si256(nibbles32(blk + 48 + 32 * (j >> 1), j & 1), hi);
}
QK_V256 __m256i vvalues_q6_k(const uint8_t *blk, int64_t c) {
  int j = (int)(c & 7), h = j >> 2, k = j & 3;
  __m256i lo = nibbles32(blk + 64 * h + 32 * (k & 1), k >> 1);
  __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));
  qh = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
  return _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(qh, 4)), _mm256_set1_epi8(32));
}
#endif

/* -- the context of one product ------------------------------------------------------- */

typedef struct qctx_s {
  int64_t M, N, K, nc;                 /* nc = K / 32 full chunks */
  const float *x;
  int64_t ldx;
  const uint8_t *w;
  int64_t ldw;
  float *o;
  int64_t ldo;
  const int8_t *qx;                    /* _q8: x quantized, row stride ldq, per chunk dx, dx * sum(qx) */
  int64_t ldq;
  const float *dx, *sx;
  /* AVX-512 group kernels (q4_0, q4_1, q8_0; 4 blocks per 512-bit register): x per row in
   * ng groups of 128; exact: xg (f32, permuted to the decoder's lane order, row stride ldxg),
   * sxe (per group 16 floats: block b's sum of x in lane 4b, 0 elsewhere); _q8: qg (int8,
   * per group the 4 blocks' first halves then their second halves, 128 per group; q8_0:
   * stored + 128 as u8), dxg (block b's dx in lanes 4b..4b+3), sxg (dx sum(qx) in lane 4b). */
  int64_t ng, ngf;                     /* groups per row (the last one zero-padded), full ones */
  const float *xg, *sxe;
  int64_t ldxg;
  const int8_t *qg;
  /* exact q5 GEMVs (exd_*): x as 3 signed base-256 digits per element (xd), their scale per
   * 32-chunk (dxd, a power of two), the chunk sums of x (sxe); layouts at prep_x_digits */
  const int8_t *xd;
  const float *dxd;
  const float *dxg, *sxg;
  int fmt;
  /* panels (exact, M > 1): decode one row of W into f32 (pxk floats, the order of px) */
  void (*pdec)(const struct qctx_s *t, const uint8_t *row, float *dst);
  const float *px;                     /* x in the panel's order, row stride ldpx, pxk columns */
  int64_t ldpx, pxk;
  int panel;
  int threads;                         /* the team size asked for (call_threads) */
} qctx;

/* A tile: rows m .. m+mr-1 of x (mr <= the kernel's MR) against rows n0 .. n1-1 of W. */
typedef void (*tile_fn)(const qctx *, int64_t m, int64_t mr, int64_t n0, int64_t n1);

/* f16 / bf16 columns past the last full chunk (K not a multiple of 32). */
static float tail_dot(int fmt, const uint8_t *row, const float *x, int64_t k0, int64_t K) {
  float s = 0.0f;
  for (int64_t k = k0; k < K; ++k) s += x[k] * (fmt == F_F16 ? h2f(row + 2 * k) : bf2f(row + 2 * k));
  return s;
}

/* -- scalar kernels -------------------------------------------------------------------- */

#define QUANT_FORMATS(X) X(q8_0, F_Q8_0, 0) X(q4_0, F_Q4_0, 0) X(q4_1, F_Q4_1, 1) X(q5_0, F_Q5_0, 0) \
  X(q5_1, F_Q5_1, 1) X(q4_k, F_Q4_K, 1) X(q5_k, F_Q5_K, 1) X(q6_k, F_Q6_K, 0)

/* chunk c as 32 floats */
#define DEQ_SCALAR(F, ID, MIN)                                                                \
  static void deqs_##F(const uint8_t *row, int64_t c, float *w) {                             \
    float a0, a1, b;                                                                          \
    int8_t v[32];                                                                             \
    values_##F(scales_##F(row, c, &a0, &a1, &b), c, v);                                       \
    for (int i = 0; i < 16; ++i) w[i] = (float)v[i] * a0 + b;                                 \
    for (int i = 16; i < 32; ++i) w[i] = (float)v[i] * a1 + b;                                \
  }
QUANT_FORMATS(DEQ_SCALAR)
static void deqs_f16(const uint8_t *row, int64_t c, float *w) {
  for (int i = 0; i < 32; ++i) w[i] = h2f(row + 64 * c + 2 * i);
}
static void deqs_bf16(const uint8_t *row, int64_t c, float *w) {
  for (int i = 0; i < 32; ++i) w[i] = bf2f(row + 64 * c + 2 * i);
}

#define EXACT_SCALAR(F, ID)                                                                   \
  static void exs_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {        \
    float w[32];                                                                              \
    for (int64_t n = n0; n < n1; ++n) {                                                       \
      const uint8_t *row = t->w + n * t->ldw;                                                 \
      float acc[4] = {0, 0, 0, 0};                                                            \
      for (int64_t c = 0; c < t->nc; ++c) {                                                   \
        deqs_##F(row, c, w);                                                                  \
        for (int64_t i = 0; i < mr; ++i) {                                                    \
          const float *x = t->x + (m + i) * t->ldx + 32 * c;                                  \
          float s = 0.0f;                                                                     \
          for (int k = 0; k < 32; ++k) s += x[k] * w[k];                                      \
          acc[i] += s;                                                                        \
        }                                                                                     \
      }                                                                                       \
      for (int64_t i = 0; i < mr; ++i) {                                                      \
        float s = acc[i];                                                                     \
        if (32 * t->nc < t->K) s += tail_dot(ID, row, t->x + (m + i) * t->ldx, 32 * t->nc, t->K); \
        t->o[(m + i) * t->ldo + n] = s;                                                       \
      }                                                                                       \
    }                                                                                         \
  }
#define EXACT_SCALAR_Q(F, ID, MIN) EXACT_SCALAR(F, ID)
QUANT_FORMATS(EXACT_SCALAR_Q)
EXACT_SCALAR(f16, F_F16)
EXACT_SCALAR(bf16, F_BF16)

#define Q8_SCALAR(F, ID, MIN)                                                                 \
  static void q8s_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {        \
    int8_t v[32];                                                                             \
    for (int64_t n = n0; n < n1; ++n) {                                                       \
      const uint8_t *row = t->w + n * t->ldw;                                                 \
      float acc[4] = {0, 0, 0, 0};                                                            \
      for (int64_t c = 0; c < t->nc; ++c) {                                                   \
        float a0, a1, b;                                                                      \
        values_##F(scales_##F(row, c, &a0, &a1, &b), c, v);                                   \
        for (int64_t i = 0; i < mr; ++i) {                                                    \
          const int8_t *q = t->qx + (m + i) * t->ldq + 32 * c;                                \
          int32_t s0 = 0, s1 = 0;                                                             \
          for (int k = 0; k < 16; ++k) s0 += (int32_t)v[k] * q[k];                            \
          for (int k = 16; k < 32; ++k) s1 += (int32_t)v[k] * q[k];                           \
          int64_t at = (m + i) * t->nc + c;                                                   \
          acc[i] += t->dx[at] * (a0 * (float)s0 + a1 * (float)s1) + (MIN ? b * t->sx[at] : 0.0f); \
        }                                                                                     \
      }                                                                                       \
      for (int64_t i = 0; i < mr; ++i) t->o[(m + i) * t->ldo + n] = acc[i];                   \
    }                                                                                         \
  }
QUANT_FORMATS(Q8_SCALAR)

/* x's rows quantized per 32: qx = round(x / dx), dx = amax / 127 (f32); sx = dx * sum(qx). */
static void quantize_rows_scalar(const qctx *t, int8_t *qx, float *dx, float *sx) {
  for (int64_t m = 0; m < t->M; ++m)
    for (int64_t c = 0; c < t->nc; ++c) {
      const float *x = t->x + m * t->ldx + 32 * c;
      float amax = 0.0f;
      for (int k = 0; k < 32; ++k) amax = fmaxf(amax, fabsf(x[k]));
      float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      int32_t s = 0;
      for (int k = 0; k < 32; ++k) {
        int q = (int)nearbyintf(x[k] * id);
        qx[m * t->ldq + 32 * c + k] = (int8_t)q;
        s += q;
      }
      dx[m * t->nc + c] = d;
      sx[m * t->nc + c] = d * (float)s;
    }
}

static int64_t qk_pf_dist = 8192;   /* decode prefetch distance, bytes (below) */
static int f32_gemv_on = 1;          /* the f32 GEMV (below); RELAX_QUANT_F32_GEMV=0: off */
static int exact_int_on = 1;         /* the exact q5 GEMVs on x's integer digits (exd_*, q5ke); RELAX_QUANT_EXACT_INT=0: off */
static volatile int64_t f32_gemv_calls;
#ifdef QK_X86
/* Decode reads every byte of W once, from memory: a tile of NR rows reads one contiguous range
 * of NR * ldw bytes in ni steps (chunks, groups or blocks), and each step prefetches an even
 * share of the range qk_pf_dist bytes ahead (default 8 KB: the lines arrive before the loads
 * that need them, whatever the format's bytes per step), so the misses of several steps are in
 * flight at once. The first qk_pf_dist bytes of a call's rows are prefetched when it starts.
 * A prefetch never faults. Measurements: bench/README.md, "Decode prefetch". */
typedef struct { const char *p; int64_t span; int k; } qk_pf;
QK_INLINE qk_pf pf_tile(const uint8_t *tile, int64_t bytes, int64_t steps) {
  qk_pf f;
  f.span = steps > 0 ? (bytes + steps - 1) / steps : 0;
  f.k = (int)((f.span + 63) / 64);
  f.p = (const char *)((uintptr_t)tile + (uintptr_t)qk_pf_dist);
  return f;
}
QK_INLINE void pf_step(qk_pf *f) {   /* covers [p, p + span): the next step starts at p + span */
  for (int j = 0; j < f->k; ++j) _mm_prefetch(f->p + 64 * j, _MM_HINT_T0);
  f->p += f->span;
}
static void pf_start(const uint8_t *w, int64_t bytes) {
  if (bytes > qk_pf_dist) bytes = qk_pf_dist;
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)w + o, _MM_HINT_T0);
}

/* -- AVX2 kernels (2 rows of x by 2 rows of W) ---------------------------------------- */

#define DEQ256_Q(F, ID, MIN)                                                                  \
  QK_V256 void deq256_##F(const uint8_t *row, int64_t c, __m256 *w) {                        \
    float a0, a1, b;                                                                          \
    __m256i v = vvalues_##F(scales_v_##F(row, c, &a0, &a1, &b), c);                             \
    __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);              \
    __m256 va0 = _mm256_set1_ps(a0), va1 = _mm256_set1_ps(a1), vb = _mm256_set1_ps(b);       \
    w[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), va0, vb);            \
    w[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), va0, vb); \
    w[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), va1, vb);            \
    w[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), va1, vb); \
  }
QUANT_FORMATS(DEQ256_Q)
QK_V256 void deq256_f16(const uint8_t *row, int64_t c, __m256 *w) {
  for (int k = 0; k < 4; ++k) w[k] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 64 * c + 16 * k)));
}
QK_V256 void deq256_bf16(const uint8_t *row, int64_t c, __m256 *w) {
  for (int k = 0; k < 4; ++k)
    w[k] = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + 64 * c + 16 * k))), 16));
}

QK_V256 float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* MR rows of x by NR rows of W */
#define EX256_BODY(F, ID, MR, NR)                                                             \
  QK_V256 void ex256_##F##_##MR##_##NR(const qctx *t, int64_t m, int64_t n) {                \
    const float *x[MR];                                                                       \
    const uint8_t *row[NR];                                                                   \
    __m256 acc[MR][NR];                                                                       \
    for (int i = 0; i < MR; ++i) x[i] = t->x + (m + i) * t->ldx;                              \
    for (int r = 0; r < NR; ++r) row[r] = t->w + (n + r) * t->ldw;                            \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_setzero_ps();                           \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->nc);                                           \
    for (int64_t c = 0; c < t->nc; ++c) {                                                     \
      __m256 w[NR][4];                                                                        \
      pf_step(&pf);                                                                           \
      for (int r = 0; r < NR; ++r) {                                                          \
        deq256_##F(row[r], c, w[r]);                                                          \
      }                                                                                       \
      for (int i = 0; i < MR; ++i)                                                            \
        for (int k = 0; k < 4; ++k) {                                                         \
          __m256 xv = _mm256_loadu_ps(x[i] + 32 * c + 8 * k);                                 \
          for (int r = 0; r < NR; ++r) acc[i][r] = _mm256_fmadd_ps(w[r][k], xv, acc[i][r]);   \
        }                                                                                     \
    }                                                                                         \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) {                                                          \
        float s = hsum256(acc[i][r]);                                                         \
        if (32 * t->nc < t->K) s += tail_dot(ID, row[r], x[i], 32 * t->nc, t->K);             \
        t->o[(m + i) * t->ldo + n + r] = s;                                                   \
      }                                                                                       \
  }
#define EX256(F, ID)                                                                          \
  EX256_BODY(F, ID, 1, 1) EX256_BODY(F, ID, 1, 2) EX256_BODY(F, ID, 2, 1) EX256_BODY(F, ID, 2, 2) \
  QK_T256 static void ex256_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) { \
    int64_t n = n0;                                                                           \
    for (; n + 2 <= n1; n += 2) {                                                             \
      if (mr == 2) ex256_##F##_2_2(t, m, n); else ex256_##F##_1_2(t, m, n);                   \
    }                                                                                         \
    for (; n < n1; ++n) {                                                                     \
      if (mr == 2) ex256_##F##_2_1(t, m, n); else ex256_##F##_1_1(t, m, n);                   \
    }                                                                                         \
  }
#define EX256_Q(F, ID, MIN) EX256(F, ID)
QUANT_FORMATS(EX256_Q)
EX256(f16, F_F16)
EX256(bf16, F_BF16)

/* One _q8 tile kernel for both ISAs: DOT(a, b) = the i32 sums of the 4-byte products of the
 * unsigned a and the signed b (AVX2: maddubs + madd; AVX-512 VNNI: dpbusd). */
#define Q8_BODY(ATTR, NAME, DOT, F, MIN, MR, NR)                                              \
  ATTR void NAME##_##F##_##MR##_##NR(const qctx *t, int64_t m, int64_t n) {                  \
    const uint8_t *row[NR];                                                                   \
    __m256 acc[MR][NR];                                                                       \
    float bacc[MR][NR];                                                                       \
    for (int r = 0; r < NR; ++r) row[r] = t->w + (n + r) * t->ldw;                            \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) { acc[i][r] = _mm256_setzero_ps(); bacc[i][r] = 0.0f; }    \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->nc);                                           \
    for (int64_t c = 0; c < t->nc; ++c) {                                                     \
      __m256i av[NR], sv[NR];                                                                 \
      __m256 sc[NR];                                                                          \
      float bb[NR];                                                                           \
      pf_step(&pf);                                                                           \
      for (int r = 0; r < NR; ++r) {                                                          \
        float a0, a1;                                                                         \
        sv[r] = vvalues_##F(scales_v_##F(row[r], c, &a0, &a1, &bb[r]), c);                      \
        av[r] = _mm256_abs_epi8(sv[r]);                                                       \
        sc[r] = _mm256_set_m128(_mm_set1_ps(a1), _mm_set1_ps(a0));                            \
      }                                                                                       \
      for (int i = 0; i < MR; ++i) {                                                          \
        int64_t at = (m + i) * t->nc + c;                                                     \
        __m256i q = _mm256_loadu_si256((const __m256i *)(t->qx + (m + i) * t->ldq + 32 * c)); \
        __m256 d = _mm256_set1_ps(t->dx[at]);                                                 \
        for (int r = 0; r < NR; ++r) {                                                        \
          __m256i p = DOT(av[r], _mm256_sign_epi8(q, sv[r]));                                           \
          acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(sc[r], d), acc[i][r]); \
          if (MIN) bacc[i][r] += bb[r] * t->sx[at];                                           \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) t->o[(m + i) * t->ldo + n + r] = hsum256(acc[i][r]) + bacc[i][r]; \
  }
#define QK_DOT256(a, b) _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1))
#define Q8_256_BODY(F, MIN, MR, NR) Q8_BODY(QK_V256, q8a, QK_DOT256, F, MIN, MR, NR)
#define Q8_256(F, ID, MIN)                                                                    \
  Q8_256_BODY(F, MIN, 1, 1) Q8_256_BODY(F, MIN, 1, 2) Q8_256_BODY(F, MIN, 2, 1) Q8_256_BODY(F, MIN, 2, 2) \
  QK_T256 static void q8a_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) { \
    int64_t n = n0;                                                                           \
    for (; n + 2 <= n1; n += 2) {                                                             \
      if (mr == 2) q8a_##F##_2_2(t, m, n); else q8a_##F##_1_2(t, m, n);                       \
    }                                                                                         \
    for (; n < n1; ++n) {                                                                     \
      if (mr == 2) q8a_##F##_2_1(t, m, n); else q8a_##F##_1_1(t, m, n);                       \
    }                                                                                         \
  }
QUANT_FORMATS(Q8_256)

/* -- AVX-512 kernels (4 rows of x by 4 rows of W) -------------------------------------- */

#define QK_V512 static inline __attribute__((always_inline)) QK_T512

#define DEQ512_Q(F, ID, MIN)                                                                  \
  QK_V512 void deq512_##F(const uint8_t *row, int64_t c, __m512 *lo, __m512 *hi) {           \
    float a0, a1, b;                                                                          \
    __m256i v = vvalues_##F(scales_v_##F(row, c, &a0, &a1, &b), c);                             \
    __m512 vb = _mm512_set1_ps(b);                                                            \
    *lo = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(v))), \
                          _mm512_set1_ps(a0), vb);                                            \
    *hi = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1))), \
                          _mm512_set1_ps(a1), vb);                                            \
  }
QUANT_FORMATS(DEQ512_Q)
QK_V512 void deq512_f16(const uint8_t *row, int64_t c, __m512 *lo, __m512 *hi) {
  *lo = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 64 * c)));
  *hi = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 64 * c + 32)));
}
QK_V512 void deq512_bf16(const uint8_t *row, int64_t c, __m512 *lo, __m512 *hi) {
  *lo = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(row + 64 * c))), 16));
  *hi = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(row + 64 * c + 32))), 16));
}

#define EX512_BODY(F, ID, MR, NR)                                                             \
  QK_V512 void ex512_##F##_##MR##_##NR(const qctx *t, int64_t m, int64_t n) {                \
    const float *x[MR];                                                                       \
    const uint8_t *row[NR];                                                                   \
    __m512 acc[MR][NR];                                                                       \
    for (int i = 0; i < MR; ++i) x[i] = t->x + (m + i) * t->ldx;                              \
    for (int r = 0; r < NR; ++r) row[r] = t->w + (n + r) * t->ldw;                            \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();                           \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->nc);                                           \
    for (int64_t c = 0; c < t->nc; ++c) {                                                     \
      __m512 wl[NR], wh[NR];                                                                  \
      pf_step(&pf);                                                                           \
      for (int r = 0; r < NR; ++r) {                                                          \
        deq512_##F(row[r], c, &wl[r], &wh[r]);                                                \
      }                                                                                       \
      for (int i = 0; i < MR; ++i) {                                                          \
        __m512 xl = _mm512_loadu_ps(x[i] + 32 * c), xh = _mm512_loadu_ps(x[i] + 32 * c + 16); \
        for (int r = 0; r < NR; ++r)                                                          \
          acc[i][r] = _mm512_fmadd_ps(wh[r], xh, _mm512_fmadd_ps(wl[r], xl, acc[i][r]));      \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) {                                                          \
        float s = _mm512_reduce_add_ps(acc[i][r]);                                            \
        if (32 * t->nc < t->K) s += tail_dot(ID, row[r], x[i], 32 * t->nc, t->K);             \
        t->o[(m + i) * t->ldo + n + r] = s;                                                   \
      }                                                                                       \
  }
#define EX512(F, ID)                                                                          \
  EX512_BODY(F, ID, 1, 1) EX512_BODY(F, ID, 1, 4) EX512_BODY(F, ID, 2, 1) EX512_BODY(F, ID, 2, 4) \
  EX512_BODY(F, ID, 3, 1) EX512_BODY(F, ID, 3, 4) EX512_BODY(F, ID, 4, 1) EX512_BODY(F, ID, 4, 4) \
  QK_T512 static void ex512_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) { \
    int64_t n = n0;                                                                           \
    for (; n + 4 <= n1; n += 4) switch (mr) {                                                 \
      case 4: ex512_##F##_4_4(t, m, n); break;                                                \
      case 3: ex512_##F##_3_4(t, m, n); break;                                                \
      case 2: ex512_##F##_2_4(t, m, n); break;                                                \
      default: ex512_##F##_1_4(t, m, n);                                                      \
    }                                                                                         \
    for (; n < n1; ++n) switch (mr) {                                                         \
      case 4: ex512_##F##_4_1(t, m, n); break;                                                \
      case 3: ex512_##F##_3_1(t, m, n); break;                                                \
      case 2: ex512_##F##_2_1(t, m, n); break;                                                \
      default: ex512_##F##_1_1(t, m, n);                                                      \
    }                                                                                         \
  }
#define EX512_Q(F, ID, MIN) EX512(F, ID)
QUANT_FORMATS(EX512_Q)
EX512(f16, F_F16)
EX512(bf16, F_BF16)

#define QK_DOT512(a, b) _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b)
#define Q8_512_BODY(F, MIN, MR, NR) Q8_BODY(QK_V512, q8v, QK_DOT512, F, MIN, MR, NR)
#define Q8_512(F, ID, MIN)                                                                    \
  Q8_512_BODY(F, MIN, 1, 1) Q8_512_BODY(F, MIN, 1, 4) Q8_512_BODY(F, MIN, 2, 1) Q8_512_BODY(F, MIN, 2, 4) \
  Q8_512_BODY(F, MIN, 3, 1) Q8_512_BODY(F, MIN, 3, 4) Q8_512_BODY(F, MIN, 4, 1) Q8_512_BODY(F, MIN, 4, 4) \
  QK_T512 static void q8v_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) { \
    int64_t n = n0;                                                                           \
    for (; n + 4 <= n1; n += 4) switch (mr) {                                                 \
      case 4: q8v_##F##_4_4(t, m, n); break;                                                  \
      case 3: q8v_##F##_3_4(t, m, n); break;                                                  \
      case 2: q8v_##F##_2_4(t, m, n); break;                                                  \
      default: q8v_##F##_1_4(t, m, n);                                                        \
    }                                                                                         \
    for (; n < n1; ++n) switch (mr) {                                                         \
      case 4: q8v_##F##_4_1(t, m, n); break;                                                  \
      case 3: q8v_##F##_3_1(t, m, n); break;                                                  \
      case 2: q8v_##F##_2_1(t, m, n); break;                                                  \
      default: q8v_##F##_1_1(t, m, n);                                                        \
    }                                                                                         \
  }
QUANT_FORMATS(Q8_512)

QK_T512 static void quantize_rows_512(const qctx *t, int8_t *qx, float *dx, float *sx) {
  for (int64_t m = 0; m < t->M; ++m)
    for (int64_t c = 0; c < t->nc; ++c) {
      const float *x = t->x + m * t->ldx + 32 * c;
      __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
      float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
      float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      __m512i ql = _mm512_cvtps_epi32(_mm512_mul_ps(lo, _mm512_set1_ps(id)));   /* nearest even */
      __m512i qh = _mm512_cvtps_epi32(_mm512_mul_ps(hi, _mm512_set1_ps(id)));
      _mm_storeu_si128((__m128i *)(qx + m * t->ldq + 32 * c), _mm512_cvtepi32_epi8(ql));
      _mm_storeu_si128((__m128i *)(qx + m * t->ldq + 32 * c + 16), _mm512_cvtepi32_epi8(qh));
      dx[m * t->nc + c] = d;
      sx[m * t->nc + c] = d * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(ql, qh));
    }
}


/* -- AVX-512 group kernels: q4_0, q4_1, q8_0, four blocks per 512-bit register ---------- */
/* A group is 4 consecutive blocks of a row (128 weights). Two loads (the group's bytes, the
 * second masked so nothing past them is touched) and one vpermt2w gather the 4 blocks' 16
 * nibble bytes into one register (q8_0: eight 16-byte loads, first halves and second halves)
 * and another vpermt2w their f16 scales, d of block b in lanes 4b..4b+3 (and q4_1's m).
 * Exact: dword lane j holds bytes 4(j%4) .. 4(j%4)+3 of block j/4; nibble k (0..7) of every
 * lane -- shift and mask, no shuffle -- is 16 weights, block j/4's in lanes 4b..4b+3, so the
 * 8 products of a group sum (unscaled) into one register, scaled once per group by d (and
 * the b term: b times the block's sum of x). x is permuted once per call to match.
 * _q8: the 4 blocks' first halves and second halves as u8 (nibbles) into two dpbusd against
 * x's int8 in the same order (64 multiply-adds per instruction); q4_0's -8 and q4_1's m are
 * the b term (b dx sum(qx)); q8_0's signed weights take x + 128 as the unsigned operand and
 * 128 sum(w) (a dpbusd against ones) is subtracted. One f32 multiply-add per block's lanes. */
enum { GF_NONE, GF_NIB, GF_BYTE };
/* q5_0 / q5_1 decode into bytes (nibble | 5th bit << 4) in q8_0's layout: the byte family */
static int group_family(int fmt) {
  return fmt == F_Q4_0 || fmt == F_Q4_1 ? GF_NIB
       : fmt == F_Q8_0 || fmt == F_Q5_0 || fmt == F_Q5_1 ? GF_BYTE : GF_NONE;
}
static int is_q5(int fmt) { return fmt == F_Q5_0 || fmt == F_Q5_1; }
/* the nibbles' first 16-bit word in a block; m (q4_1, q5_1) is word 1 */
static int nib_word(int fmt) { return fmt == F_Q4_0 ? 1 : fmt == F_Q4_1 ? 2 : fmt == F_Q5_0 ? 3 : 4; }
static int64_t GROUP_BYTES(int fmt) { return 4 * BLOCK_BYTES[fmt]; }
/* element (0..31) of block j/4 in vector k, lane j of the exact decoder */
static int group_elem(int fam, int k, int j) {
  int l = j & 3;
  if (fam == GF_NIB) return 4 * l + (k >> 1) + 16 * (k & 1);
  return (k < 4 ? 0 : 16) + 4 * l + (k & 3);
}
static uint16_t gidx_qs[F_COUNT][32], gidx_sc[F_COUNT][32], gidx_qh[F_COUNT][32];
static int32_t gperm[3][128];   /* per family: x index within a group for slot 16k + j */
static void group_tables(void) {
  for (int f = 0; f < F_COUNT; ++f) {
    int fam = group_family(f), w = (int)BLOCK_BYTES[f] / 2;
    if (fam == GF_NONE) continue;
    for (int i = 0; i < 32; ++i) {
      int b = i / 8, j = i % 8;   /* word j of block b's nibbles */
      gidx_qs[f][i] = (uint16_t)(w * b + nib_word(f) + j);
      int bb = (i & 15) / 4;
      gidx_sc[f][i] = (uint16_t)(w * bb + (i >= 16 && (f == F_Q4_1 || f == F_Q5_1) ? 1 : 0));
      /* q5: block bb's two qh words in words 8 bb, 8 bb + 1 (lane bb); the rest unused */
      gidx_qh[f][i] = (uint16_t)(w * (i / 8) + (f == F_Q5_1 ? 2 : 1) + (i & 1));
    }
  }
  for (int fam = 1; fam < 3; ++fam)
    for (int k = 0; k < 8; ++k)
      for (int j = 0; j < 16; ++j) gperm[fam][16 * k + j] = 32 * (j / 4) + group_elem(fam, k, j);
}

/* the group's scales: d (lanes 4b..4b+3 block b) and b (q4_1, q5_1: m; q4_0: -8 d; q5_0:
 * -16 d; q8_0: 0) */
QK_V512 void gscales(int fmt, __m512i lo, __m512i hi, __m512 *dv, __m512 *bv) {
  __m512i s = _mm512_permutex2var_epi16(lo, _mm512_loadu_si512(gidx_sc[fmt]), hi);
  *dv = _mm512_cvtph_ps(_mm512_castsi512_si256(s));
  if (fmt == F_Q4_1 || fmt == F_Q5_1) *bv = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(s, 1));
  else if (fmt == F_Q4_0 || fmt == F_Q5_0) *bv = _mm512_mul_ps(*dv, _mm512_set1_ps(fmt == F_Q4_0 ? -8.0f : -16.0f));
  else *bv = _mm512_setzero_ps();
}
/* q4_0 / q4_1 / q5_0 / q5_1: the 4 blocks' nibble bytes (block b in bytes 16b..16b+15); scales */
QK_V512 __m512i gload_nib(int fmt, const uint8_t *p, __m512 *dv, __m512 *bv) {
  __m512i lo = _mm512_loadu_si512(p);
  __m512i hi = _mm512_maskz_loadu_epi8((1ull << (GROUP_BYTES(fmt) - 64)) - 1, p + 64);
  gscales(fmt, lo, hi, dv, bv);
  return _mm512_permutex2var_epi16(lo, _mm512_loadu_si512(gidx_qs[fmt]), hi);
}
/* q5_0 / q5_1: the 4 blocks' weights as bytes nibble + 16 * (5th bit), first halves (*l) and
 * second halves (*h) as q8_0's (block b in bytes 16b..); the 5th bits through a byte mask
 * (bit e of qh: weight e) */
QK_V512 void gload_q5(int fmt, const uint8_t *p, __m512i *l, __m512i *h, __m512 *dv, __m512 *bv) {
  __m512i z = gload_nib(fmt, p, dv, bv);
  const int64_t bb = BLOCK_BYTES[fmt];
  const int off = fmt == F_Q5_0 ? 2 : 4;
  uint64_t ml = 0, mh = 0;
  for (int b = 0; b < 4; ++b) {
    uint32_t qh;
    memcpy(&qh, p + b * bb + off, 4);
    ml |= (uint64_t)(qh & 0xFFFFu) << (16 * b);
    mh |= (uint64_t)(qh >> 16) << (16 * b);
  }
  const __m512i f = _mm512_set1_epi8(0xF), sixteen = _mm512_set1_epi8(16);
  __m512i a = _mm512_and_si512(z, f), c = _mm512_and_si512(_mm512_srli_epi16(z, 4), f);
  *l = _mm512_mask_add_epi8(a, (__mmask64)ml, a, sixteen);
  *h = _mm512_mask_add_epi8(c, (__mmask64)mh, c, sixteen);
}
/* q8_0: the 4 blocks' first halves (*l) and second halves (*h), block b in bytes 16b.. */
QK_V512 void gload_byte(const uint8_t *p, __m512i *l, __m512i *h, __m512 *dv) {
  __m512i lo = _mm512_loadu_si512(p), hi = _mm512_maskz_loadu_epi8(0xFFFFFFFFFFull, p + 64);
  __m512 bv;
  gscales(F_Q8_0, lo, hi, dv, &bv);
  __m512i a = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p + 2)));
  __m512i c = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p + 18)));
  a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + 36)), 1);
  c = _mm512_inserti32x4(c, _mm_loadu_si128((const __m128i *)(p + 52)), 1);
  a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + 70)), 2);
  c = _mm512_inserti32x4(c, _mm_loadu_si128((const __m128i *)(p + 86)), 2);
  a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + 104)), 3);
  c = _mm512_inserti32x4(c, _mm_loadu_si128((const __m128i *)(p + 120)), 3);
  *l = a;
  *h = c;
}
/* exact: vector k (0..7) of the group as f32, the values over GSCALE(k) (a power of two: the
 * nibble or byte masked in place, no shift; x is prepared times its inverse). */
#define GSCALE_NIB(k) ((k) < 7 ? 1.0f / (float)(1u << (4 * (k))) : 1.0f)
#define GSCALE_BYTE(k) (1.0f / 16777216.0f)
QK_V512 __m512 gvec_nib(__m512i z, int k) {
  if (k == 7) return _mm512_cvtepi32_ps(_mm512_srli_epi32(z, 28));
  return _mm512_cvtepi32_ps(_mm512_and_si512(z, _mm512_set1_epi32(0xF << (4 * k))));
}
QK_V512 __m512 gvec_byte(__m512i l, __m512i h, int k) {   /* v * 2^24 (v signed) */
  __m512i z = k < 4 ? l : h;
  int j = k & 3;
  if (j == 0) return _mm512_cvtepi32_ps(_mm512_slli_epi32(z, 24));
  if (j < 3) z = _mm512_slli_epi32(z, 24 - 8 * j);
  return _mm512_cvtepi32_ps(_mm512_and_si512(z, _mm512_set1_epi32((int)0xFF000000u)));
}

/* The group pointers of NR rows: the row's own bytes, or (the last, partial group) a zero-
 * padded copy. */
#define GROUP_PTR(g, r) ((g) < t->ngf ? row[r] + (g) * gb : tail[r])
#define GROUP_SETUP(FMT, NR)                                                                       \
  const int64_t gb = GROUP_BYTES(FMT);                                                        \
  const uint8_t *row[NR];                                                                     \
  uint8_t tail[NR][256] __attribute__((aligned(64)));                                         \
  for (int r = 0; r < NR; ++r) {                                                              \
    row[r] = t->w + (n + r) * t->ldw;                                                         \
    if (t->ngf < t->ng) {                                                                     \
      memset(tail[r], 0, sizeof tail[r]);                                                     \
      memcpy(tail[r], row[r] + t->ngf * gb, (size_t)((t->nc - 4 * t->ngf) * BLOCK_BYTES[FMT])); \
    }                                                                                         \
  }
/* exact, one row of x by NR rows of W */
#define EXG_BODY(F, FMT, NR)                                                                  \
  QK_V512 void exg_##F##_##NR(const qctx *t, int64_t m, int64_t n) {                         \
    GROUP_SETUP(FMT, NR)                                                                        \
    const float *xg = t->xg + m * t->ldxg, *sxe = t->sxe + m * t->ng * 16;                    \
    __m512 acc[NR];                                                                           \
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();                                \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->ng);                                           \
    for (int64_t g = 0; g < t->ng; ++g) {                                                     \
      __m512 dv[NR], bv[NR], s[NR];                                                           \
      __m512i z[NR], z2[NR];                                                                  \
      pf_step(&pf);                                                                           \
      for (int r = 0; r < NR; ++r) {                                                          \
        if (FMT == F_Q8_0) gload_byte(GROUP_PTR(g, r), &z[r], &z2[r], &dv[r]);                \
        else if (is_q5(FMT)) gload_q5(FMT, GROUP_PTR(g, r), &z[r], &z2[r], &dv[r], &bv[r]);   \
        else z[r] = gload_nib(FMT, GROUP_PTR(g, r), &dv[r], &bv[r]);                          \
        s[r] = _mm512_setzero_ps();                                                           \
      }                                                                                       \
      _Pragma("GCC unroll 8")   /* k constant: gvec_*'s shifts and masks are immediates */      \
      for (int k = 0; k < 8; ++k) {                                                           \
        __m512 xv = _mm512_loadu_ps(xg + 128 * g + 16 * k);                                   \
        for (int r = 0; r < NR; ++r)                                                          \
          s[r] = _mm512_fmadd_ps(group_family(FMT) == GF_BYTE ? gvec_byte(z[r], z2[r], k) : gvec_nib(z[r], k), \
                                 xv, s[r]);                                                   \
      }                                                                                       \
      __m512 se = _mm512_loadu_ps(sxe + 16 * g);                                              \
      for (int r = 0; r < NR; ++r) {                                                          \
        acc[r] = _mm512_fmadd_ps(s[r], dv[r], acc[r]);                                        \
        if (FMT != F_Q8_0) acc[r] = _mm512_fmadd_ps(bv[r], se, acc[r]);                       \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]);     \
  }
/* The row driver of a GEMV kernel family: each row of x, its columns 4 at a time, then one. */
#define ROWS_BY_4(NAME)                                                                       \
  QK_T512 static void NAME(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {   \
    for (int64_t i = m; i < m + mr; ++i) {                                                    \
      int64_t n = n0;                                                                         \
      for (; n + 4 <= n1; n += 4) NAME##_4(t, i, n);                                          \
      for (; n < n1; ++n) NAME##_1(t, i, n);                                                  \
    }                                                                                         \
  }
#define EXG(F, FMT)                                                                           \
  EXG_BODY(F, FMT, 1) EXG_BODY(F, FMT, 4)                                                     \
  ROWS_BY_4(exg_##F)
EXG(q4_0, F_Q4_0)
EXG(q4_1, F_Q4_1)
EXG(q8_0, F_Q8_0)
EXG(q5_0, F_Q5_0)
EXG(q5_1, F_Q5_1)

/* _q8, MR rows of x by NR rows of W */
#define Q8G_BODY(F, FMT, MR, NR)                                                              \
  QK_V512 void q8g_##F##_##MR##_##NR(const qctx *t, int64_t m, int64_t n) {                  \
    GROUP_SETUP(FMT, NR)                                                                        \
    __m512 acc[MR][NR];                                                                       \
    const __m512i ones = _mm512_set1_epi8(1);                                                 \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();                           \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->ng);                                           \
    for (int64_t g = 0; g < t->ng; ++g) {                                                     \
      __m512 dv[NR], bv[NR];                                                                  \
      __m512i wl[NR], wh[NR], sw[NR];                                                         \
      pf_step(&pf);                                                                           \
      for (int r = 0; r < NR; ++r) {                                                          \
        if (FMT == F_Q8_0) {                                                                  \
          gload_byte(GROUP_PTR(g, r), &wl[r], &wh[r], &dv[r]);                                \
          sw[r] = _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), \
                                                        ones, wl[r]), ones, wh[r]), 7);       \
        } else if (is_q5(FMT)) {                                                              \
          gload_q5(FMT, GROUP_PTR(g, r), &wl[r], &wh[r], &dv[r], &bv[r]);                     \
        } else {                                                                              \
          __m512i z = gload_nib(FMT, GROUP_PTR(g, r), &dv[r], &bv[r]);                        \
          wl[r] = _mm512_and_si512(z, _mm512_set1_epi8(0xF));                                 \
          wh[r] = _mm512_and_si512(_mm512_srli_epi16(z, 4), _mm512_set1_epi8(0xF));           \
        }                                                                                     \
      }                                                                                       \
      for (int i = 0; i < MR; ++i) {                                                          \
        const int8_t *q = t->qg + (m + i) * t->ng * 128 + 128 * g;                            \
        __m512i xl = _mm512_loadu_si512(q), xh = _mm512_loadu_si512(q + 64);                  \
        __m512 d = _mm512_loadu_ps(t->dxg + ((m + i) * t->ng + g) * 16);                      \
        __m512 sx = _mm512_loadu_ps(t->sxg + ((m + i) * t->ng + g) * 16);                     \
        for (int r = 0; r < NR; ++r) {                                                        \
          __m512i p;                                                                          \
          if (FMT == F_Q8_0)                                                                  \
            p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), xl, wl[r]), \
                                                     xh, wh[r]), sw[r]);                      \
          else                                                                                \
            p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wl[r], xl), wh[r], xh); \
          acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dv[r], d), acc[i][r]); \
          if (FMT != F_Q8_0) acc[i][r] = _mm512_fmadd_ps(bv[r], sx, acc[i][r]);               \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) t->o[(m + i) * t->ldo + n + r] = _mm512_reduce_add_ps(acc[i][r]); \
  }
#define Q8G(F, FMT)                                                                           \
  Q8G_BODY(F, FMT, 1, 1) Q8G_BODY(F, FMT, 1, 4) Q8G_BODY(F, FMT, 2, 1) Q8G_BODY(F, FMT, 2, 2) \
  Q8G_BODY(F, FMT, 3, 1) Q8G_BODY(F, FMT, 3, 2) Q8G_BODY(F, FMT, 4, 1) Q8G_BODY(F, FMT, 4, 2) \
  QK_T512 static void q8g_##F(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) { \
    int64_t n = n0;                                                                           \
    if (mr == 1) {                                                                            \
      for (; n + 4 <= n1; n += 4) q8g_##F##_1_4(t, m, n);                                     \
      for (; n < n1; ++n) q8g_##F##_1_1(t, m, n);                                             \
      return;                                                                                 \
    }                                                                                         \
    for (; n + 2 <= n1; n += 2) switch (mr) {                                                 \
      case 4: q8g_##F##_4_2(t, m, n); break;                                                  \
      case 3: q8g_##F##_3_2(t, m, n); break;                                                  \
      default: q8g_##F##_2_2(t, m, n);                                                        \
    }                                                                                         \
    for (; n < n1; ++n) switch (mr) {                                                         \
      case 4: q8g_##F##_4_1(t, m, n); break;                                                  \
      case 3: q8g_##F##_3_1(t, m, n); break;                                                  \
      default: q8g_##F##_2_1(t, m, n);                                                        \
    }                                                                                         \
  }
Q8G(q4_0, F_Q4_0)
Q8G(q4_1, F_Q4_1)
Q8G(q8_0, F_Q8_0)
Q8G(q5_0, F_Q5_0)
Q8G(q5_1, F_Q5_1)

/* Exact q5_0 / q5_1 GEMV (AVX-512, M = 1): integer products where they are exact. x's 32-chunk
 * c is scaled by a power of two, 2^(16 - e_c) with |x| <= 127 2^e_c, rounded to the integer
 * X (|X| <= 127 2^16) and split into three signed base-256 digits, X = 2^16 x2 + 2^8 x1 + x0
 * (prep_x_digits, once per call, in the group layout of the _q8 kernels). The weights' 5-bit
 * values (gload_q5: u8, 0..31) take three dpbusd each against the digits, chained top digit
 * first with a shift by 8 between them, so each dword lane holds the exact integer
 * sum_i v_i X_i of its 4 weights of one block (|.| <= 8 * 31 * 127 2^16 < 2^31 over both
 * halves), converted once and scaled by d 2^(e_c - 16); b (q5_0: -16 d, q5_1: m) times the
 * block's f32 sum of x as in exg. Error: x's rounding to X, |x - X 2^(e-16)| <= 2^(e-17)
 * <= amax_c 2^-22.9 per element, then the f32 conversion and accumulation (the per-chunk
 * kernels' order of error). 6 dpbusd + 2 shifts + 1 cvt per 128 weights instead of 8 x
 * (mask/shift, cvt, FMA). A row of x with a NaN or an infinity takes exg (NaN, Inf propagate). */
/* gload_q5 without scalar code: the 4 blocks' qh words gathered into lane b (bytes 0-3 of
 * 128-bit lane b = block b's qh) by the group's third vpermt2w, spread by an in-lane byte
 * shuffle (byte i of lane b <- byte i / 8 of qh, resp. 2 + i / 8) and tested against bit i % 8:
 * the masks of the fifth bits of weights 0-15 and 16-31. Same bytes as gload_q5. */
QK_V512 void gload_q5v(int fmt, const uint8_t *p, __mmask64 kl, __mmask64 kh, __m512i *l, __m512i *h,
                       __m512 *dv, __m512 *bv) {
  __m512i lo = _mm512_maskz_loadu_epi8(kl, p);
  __m512i hi = _mm512_maskz_loadu_epi8(kh, p + 64);
  gscales(fmt, lo, hi, dv, bv);
  __m512i z = _mm512_permutex2var_epi16(lo, _mm512_loadu_si512(gidx_qs[fmt]), hi);
  __m512i q = _mm512_permutex2var_epi16(lo, _mm512_loadu_si512(gidx_qh[fmt]), hi);
  const __m512i sl = _mm512_set4_epi32(0x01010101, 0x01010101, 0, 0);
  const __m512i sh = _mm512_set4_epi32(0x03030303, 0x03030303, 0x02020202, 0x02020202);
  const __m512i bit = _mm512_set1_epi64(0x8040201008040201LL);
  __mmask64 ml = _mm512_test_epi8_mask(_mm512_shuffle_epi8(q, sl), bit);
  __mmask64 mh = _mm512_test_epi8_mask(_mm512_shuffle_epi8(q, sh), bit);
  const __m512i f = _mm512_set1_epi8(0xF), sixteen = _mm512_set1_epi8(16);
  __m512i a = _mm512_and_si512(z, f), c = _mm512_and_si512(_mm512_srli_epi16(z, 4), f);
  *l = _mm512_mask_add_epi8(a, ml, a, sixteen);
  *h = _mm512_mask_add_epi8(c, mh, c, sixteen);
}
#define EXD_BODY(F, FMT, NR)                                                                  \
  QK_V512 void exd_##F##_##NR(const qctx *t, int64_t m, int64_t n) {                         \
    const int64_t gb = GROUP_BYTES(FMT);                                                      \
    const uint8_t *row[NR];                                                                   \
    for (int r = 0; r < NR; ++r) row[r] = t->w + (n + r) * t->ldw;                            \
    /* the last group's blocks past the row (K / 32 not a multiple of 4): masked off, read as 0 */ \
    const int64_t tb = (t->nc - 4 * t->ngf) * BLOCK_BYTES[FMT];                               \
    const __mmask64 full_h = (1ull << (gb - 64)) - 1;                                         \
    const __mmask64 tail_l = tb >= 64 ? ~0ull : (1ull << tb) - 1;                             \
    const __mmask64 tail_h = tb > 64 ? (1ull << (tb - 64)) - 1 : 0;                           \
    const int8_t *xd = t->xd + m * t->ng * 384;                                               \
    const float *dd = t->dxd + m * t->ng * 16, *sxe = t->sxe + m * t->ng * 16;                \
    __m512 acc[NR];                                                                           \
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();                                \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->ng);                                           \
    for (int64_t g = 0; g < t->ng; ++g) {                                                     \
      pf_step(&pf);                                                                           \
      const int8_t *q = xd + 384 * g;                                                         \
      __m512i x0l = _mm512_loadu_si512(q), x0h = _mm512_loadu_si512(q + 64);                  \
      __m512i x1l = _mm512_loadu_si512(q + 128), x1h = _mm512_loadu_si512(q + 192);          \
      __m512i x2l = _mm512_loadu_si512(q + 256), x2h = _mm512_loadu_si512(q + 320);          \
      __m512 dx = _mm512_loadu_ps(dd + 16 * g), se = _mm512_loadu_ps(sxe + 16 * g);           \
      for (int r = 0; r < NR; ++r) {                                                          \
        __m512i l, h;                                                                         \
        __m512 dv, bv;                                                                        \
        gload_q5v(FMT, row[r] + g * gb, g < t->ngf ? ~0ull : tail_l, g < t->ngf ? full_h : tail_h, \
                  &l, &h, &dv, &bv);                                                          \
        __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), l, x2l), h, x2h); \
        s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(s, 8), l, x1l), h, x1h); \
        s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_slli_epi32(s, 8), l, x0l), h, x0h); \
        if (FMT == F_Q5_0) {   /* se: -16 times the sums */                                   \
          acc[r] = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dx, se), dv, acc[r]); \
        } else {                                                                              \
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dv, dx), acc[r]);     \
          acc[r] = _mm512_fmadd_ps(bv, se, acc[r]);                                           \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]);     \
  }
#define EXD(F, FMT)                                                                           \
  EXD_BODY(F, FMT, 1) EXD_BODY(F, FMT, 4)                                                     \
  ROWS_BY_4(exd_##F)
EXD(q5_0, F_Q5_0)
EXD(q5_1, F_Q5_1)

/* The digits of 32 elements of x (one chunk, lo = elements 0-15, hi = 16-31): stores digit p
 * of element i at dst[p * pstride + (i < 16 ? i : off + i - 16)], returns the chunk's scale
 * 2^(e - 16) and its f32 sum in *sum (NaN / Inf there: the caller falls back). e: the least
 * with amax <= 127 2^e, at least -100 (a smaller chunk's digits are 0: |x| < 2^-93). */
QK_V512 float x_digits(__m512 lo, __m512 hi, int8_t *dst, int64_t pstride, int64_t off, float *sum) {
  float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
  *sum = _mm512_reduce_add_ps(_mm512_add_ps(lo, hi));
  int ex = 0;
  if (amax > 0.0f && isfinite(amax)) (void)frexpf(amax, &ex);
  int e = amax > 0.0f ? ex - 7 : -100;
  if (amax > ldexpf(127.0f, e)) ++e;
  if (e < -100) e = -100;
  __m512 f = _mm512_set1_ps(ldexpf(1.0f, 16 - e));
  __m512i v[2] = {_mm512_cvtps_epi32(_mm512_mul_ps(lo, f)), _mm512_cvtps_epi32(_mm512_mul_ps(hi, f))};
  for (int s = 0; s < 2; ++s) {
    __m512i X = v[s];
    __m512i d0 = _mm512_srai_epi32(_mm512_slli_epi32(X, 24), 24);
    __m512i X1 = _mm512_srai_epi32(_mm512_sub_epi32(X, d0), 8);
    __m512i d1 = _mm512_srai_epi32(_mm512_slli_epi32(X1, 24), 24);
    __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(X1, d1), 8);
    int8_t *o = dst + (s ? off : 0);
    _mm_storeu_si128((__m128i *)o, _mm512_cvtepi32_epi8(d0));
    _mm_storeu_si128((__m128i *)(o + pstride), _mm512_cvtepi32_epi8(d1));
    _mm_storeu_si128((__m128i *)(o + 2 * pstride), _mm512_cvtepi32_epi8(d2));
  }
  return ldexpf(1.0f, e - 16);
}
/* x for exd_*: per row and group 384 bytes, digit p at 128 p: the 4 blocks' first halves
 * (block b at 16 b), then their second halves (64 + 16 b), as prep_q8_groups; dxd: 2^(e_b - 16)
 * in lanes 4b..4b+3; sxe: as prep_exact_groups. Returns 0 when a sum is not finite. */
QK_T512 static int prep_x_digits(const qctx *t, int8_t *xd, float *dxd, float *sxe) {
  int ok = 1;
  for (int64_t m = 0; m < t->M; ++m)
    for (int64_t g = 0; g < t->ng; ++g) {
      int8_t *q = xd + (m * t->ng + g) * 384;
      float *d = dxd + (m * t->ng + g) * 16, *se = sxe + (m * t->ng + g) * 16;
      for (int b = 0; b < 4; ++b) {
        int64_t c = 4 * g + b;
        float dd = 0.0f, sum = 0.0f;
        if (c < t->nc) {
          const float *x = t->x + m * t->ldx + 32 * c;
          dd = x_digits(_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16), q + 16 * b, 128, 64, &sum);
          ok &= isfinite(sum) != 0;
        } else {
          for (int p = 0; p < 3; ++p) {
            memset(q + 128 * p + 16 * b, 0, 16);
            memset(q + 128 * p + 64 + 16 * b, 0, 16);
          }
        }
        d[4 * b] = d[4 * b + 1] = d[4 * b + 2] = d[4 * b + 3] = dd;
        se[4 * b] = t->fmt == F_Q5_0 ? -16.0f * sum : sum;
        se[4 * b + 1] = se[4 * b + 2] = se[4 * b + 3] = 0.0f;
      }
    }
  return ok;
}

/* q6_k _q8 GEMV (AVX-512, M < 4): 64 weights per register as u8 (0..63) in their natural
 * order -- a 64-byte load of ql gives weights 0-63 of a half-block (low nibbles) and 64-127
 * (high nibbles), qh's 2-bit pairs OR-ed in above them -- one 512-bit dpbusd against x's int8
 * (quantize_rows_512: natural order, dx per 32), minus 32 sum(qx) (a dpbusd of 32s, shared by
 * the NR rows of W); each 16-weight sub-block is 4 dword lanes, scaled by its int8 scale x d x
 * dx of its 32-chunk. */
#define Q6KG_BODY(NR)                                                                         \
  QK_V512 void q6kg_1_##NR(const qctx *t, int64_t m, int64_t n) {                            \
    const int8_t *qx = t->qx + m * t->ldq;                                                    \
    const float *dx = t->dx + m * t->nc;                                                      \
    const uint8_t *row[NR];                                                                   \
    __m512 acc[NR];                                                                           \
    for (int r = 0; r < NR; ++r) {                                                            \
      row[r] = t->w + (n + r) * t->ldw;                                                       \
      acc[r] = _mm512_setzero_ps();                                                           \
    }                                                                                         \
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3), c32 = _mm512_set1_epi8(32); \
    const __m512i lane4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);  \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, 2 * (t->K / 256));                                \
    for (int64_t b = 0; b < t->K / 256; ++b)                                                  \
      for (int h = 0; h < 2; ++h) {                                                           \
        const int8_t *xq = qx + 256 * b + 128 * h;                                            \
        pf_step(&pf);                                                                         \
        __m512i x0 = _mm512_loadu_si512(xq), x1 = _mm512_loadu_si512(xq + 64);                \
        __m512i o0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c32, x0);                    \
        __m512i o1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c32, x1);                    \
        const float *d4 = dx + 8 * b + 4 * h;                                                 \
        __m512 dx0 = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d4[0]), _mm512_set1_ps(d4[1]));  \
        __m512 dx1 = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d4[2]), _mm512_set1_ps(d4[3]));  \
        __m512i i0 = _mm512_add_epi32(lane4, _mm512_set1_epi32(8 * h));                       \
        __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));                              \
        for (int r = 0; r < NR; ++r) {                                                        \
          const uint8_t *blk = row[r] + 210 * b;                                              \
          __m512i ql = _mm512_loadu_si512(blk + 64 * h);                                      \
          __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));             \
          __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1); \
          __m512i w0 = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(hh, m3), 4)); \
          __m512i w1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),        \
                                       _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hh, 4), m3), 4)); \
          __m512 sc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 192)))), \
                                    _mm512_set1_ps(_cvtsh_ss(*(const uint16_t *)(blk + 208)))); \
          __m512i p0 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, x0), o0); \
          __m512i p1 = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w1, x1), o1); \
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_mul_ps(_mm512_permutexvar_ps(i0, sc), dx0), acc[r]); \
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), _mm512_mul_ps(_mm512_permutexvar_ps(i1, sc), dx1), acc[r]); \
        }                                                                                     \
      }                                                                                       \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]);     \
  }
Q6KG_BODY(1)
Q6KG_BODY(4)
/* q4_k / q5_k _q8 GEMV (AVX-512, M < 4): a 64-byte load of qs is 128 weights, two 32-sub-blocks per
 * register: low nibbles = sub-blocks 4i (bytes 0-31) and 4i+2 (32-63), high nibbles = 4i+1,
 * 4i+3; x's int8 loaded in that order; 8 dword lanes per sub-block, scaled by d sc_j dx_j; the
 * min term dmin m_j times the chunk's sum of x (sx, f32) per block; q5_k: plus 16 where bit j
 * of qh[l] is set (sub-block j, its l-th weight). The 6-bit (sc, m) pairs
 * unpacked with 32-bit masks: sc 0-3 / m 0-3 the low 6 bits of bytes 0-3 / 4-7, sc 4-7 / m 4-7
 * the nibbles of bytes 8-11 plus the top 2 bits of bytes 0-3 / 4-7. */
QK_V512 void q4k_scales(const uint8_t *blk, __m256 *sc, __m256 *mn) {
  uint32_t s0, s1, s2;
  memcpy(&s0, blk + 4, 4);
  memcpy(&s1, blk + 8, 4);
  memcpy(&s2, blk + 12, 4);
  uint32_t sc_lo = s0 & 0x3f3f3f3fu, m_lo = s1 & 0x3f3f3f3fu;
  uint32_t sc_hi = (s2 & 0x0f0f0f0fu) | (((s0 >> 6) & 0x03030303u) << 4);
  uint32_t m_hi = ((s2 >> 4) & 0x0f0f0f0fu) | (((s1 >> 6) & 0x03030303u) << 4);
  *sc = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo))),
                      _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)blk)));
  *mn = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, (int)m_hi, (int)m_lo))),
                      _mm256_set1_ps(_cvtsh_ss(*(const uint16_t *)(blk + 2))));
}
/* The K-quant GEMVs' prologue: NR rows of W from column n, their zeroed accumulators (acc: the
 * scaled dot products, macc: the min terms per sub-block). */
#define KQ_SETUP(NR)                                                                          \
  const uint8_t *row[NR];                                                                     \
  __m512 acc[NR];                                                                             \
  __m256 macc[NR];                                                                            \
  for (int r = 0; r < NR; ++r) {                                                              \
    row[r] = t->w + (n + r) * t->ldw;                                                         \
    acc[r] = _mm512_setzero_ps();                                                             \
    macc[r] = _mm256_setzero_ps();                                                            \
  }
#define Q4KG_BODY(F, FMT, NR)                                                                 \
  QK_V512 void F##g_1_##NR(const qctx *t, int64_t m, int64_t n) {                            \
    const int64_t bb = BLOCK_BYTES[FMT], qs = FMT == F_Q5_K ? 48 : 16;                        \
    const int8_t *qx = t->qx + m * t->ldq;                                                    \
    const float *dx = t->dx + m * t->nc, *sx = t->sx + m * t->nc;                             \
    KQ_SETUP(NR)                                                                              \
    const __m512i m4 = _mm512_set1_epi8(0xF);                                                 \
    const __m512i half = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);    \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->K / 256);                                      \
    for (int64_t b = 0; b < t->K / 256; ++b) {                                                \
      __m256 dx8 = _mm256_loadu_ps(dx + 8 * b), sx8 = _mm256_loadu_ps(sx + 8 * b);            \
      pf_step(&pf);                                                                           \
      __m512i xl[2], xh[2];                                                                   \
      for (int i = 0; i < 2; ++i) {                                                           \
        const int8_t *xq = qx + 256 * b + 128 * i;                                            \
        xl[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)xq)), \
                                   _mm256_loadu_si256((const __m256i *)(xq + 64)), 1);        \
        xh[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(xq + 32))), \
                                   _mm256_loadu_si256((const __m256i *)(xq + 96)), 1);        \
      }                                                                                       \
      for (int r = 0; r < NR; ++r) {                                                          \
        const uint8_t *blk = row[r] + bb * b;                                                 \
        __m256 sc, mn;                                                                        \
        q4k_scales(blk, &sc, &mn);                                                            \
        macc[r] = _mm256_fmadd_ps(mn, sx8, macc[r]);                                          \
        __m512 s16 = _mm512_castps256_ps512(_mm256_mul_ps(sc, dx8));   /* sub-block j: lane j */ \
        __m512i hz = _mm512_setzero_si512();                                                  \
        if (FMT == F_Q5_K) {   /* qh, and qh >> 2 above it: bit 4i (+1) / 4i+2 (+1) of qh[l] */ \
          __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 16));                       \
          hz = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);   \
        }                                                                                     \
        for (int i = 0; i < 2; ++i) {                                                         \
          __m512i q = _mm512_loadu_si512(blk + qs + 64 * i);                                  \
          __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4); \
          if (FMT == F_Q5_K) {                                                                \
            const __m512i one = _mm512_set1_epi8(1);                                          \
            __m512i h0 = _mm512_and_si512(_mm512_srl_epi16(hz, _mm_cvtsi32_si128(4 * i)), one);   \
            __m512i h1 = _mm512_and_si512(_mm512_srl_epi16(hz, _mm_cvtsi32_si128(4 * i + 1)), one); \
            lo = _mm512_or_si512(lo, _mm512_slli_epi16(h0, 4));                               \
            hi = _mm512_or_si512(hi, _mm512_slli_epi16(h1, 4));                               \
          }                                                                                   \
          __m512i il = _mm512_add_epi32(_mm512_slli_epi32(half, 1), _mm512_set1_epi32(4 * i));  \
          __m512i ih = _mm512_add_epi32(il, _mm512_set1_epi32(1));                            \
          __m512i pl = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, xl[i]);                \
          __m512i ph = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, xh[i]);                \
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pl), _mm512_permutexvar_ps(il, s16), acc[r]); \
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ph), _mm512_permutexvar_ps(ih, s16), acc[r]); \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]) - hsum256(macc[r]);\
  }
#define Q4KG(F, FMT)                                                                          \
  Q4KG_BODY(F, FMT, 1) Q4KG_BODY(F, FMT, 4)                                                   \
  QK_T512 static void F##g(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {   \
    for (int64_t i = m; i < m + mr; ++i) {                                                    \
      int64_t n = n0;                                                                         \
      for (; n + 4 <= n1; n += 4) F##g_1_4(t, i, n);                                          \
      for (; n < n1; ++n) F##g_1_1(t, i, n);                                                  \
    }                                                                                         \
  }
Q4KG(q4k, F_Q4_K)
Q4KG(q5k, F_Q5_K)
QK_T512 static void q6kg(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {
  for (int64_t i = m; i < m + mr; ++i) {
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) q6kg_1_4(t, i, n);
    for (; n < n1; ++n) q6kg_1_1(t, i, n);
  }
}

/* Exact q4_k / q6_k GEMV (AVX-512, M < 4): the weights' integer values are never shifted into
 * place or widened by shuffles -- a dword lane keeps its 4 bytes, and each value is masked where
 * it lies (q4_k: nibble k of the lane, value * 16^k; q6_k: byte p, value * 256^p; the top one
 * shifted down), converted to f32 and multiplied with x prepared once per call in that lane
 * order, times the inverse power of two (prep_k_exact), so the 16 lanes of a sum belong to one
 * or two sub-blocks and are scaled per lane at the end of the block: q4_k by d sc_j (minus
 * dmin m_j times the sub-block's sum of x), q6_k by d sc_s (minus 32 d sc_s times the sum of x
 * over the 16 weights). Every step is f32 arithmetic on exact values: the error is the f32
 * summation's, as the per-chunk kernels'. q4_k: qs's 64 bytes i (0, 1) hold sub-blocks 4i..4i+3:
 * lanes 0-7 sub-blocks 4i (even k) and 4i+1 (odd k), lanes 8-15 4i+2 and 4i+3. q6_k: the 64
 * weights of a register (q6kg's w0 / w1) in natural order, lanes 4s..4s+3 sub-block s. */
#define Q4KE_BODY(NR)                                                                         \
  QK_V512 void q4ke_1_##NR(const qctx *t, int64_t m, int64_t n) {                            \
    const float *xk = t->xg + m * t->ldxg, *xs = t->sxe + m * t->nc;                          \
    KQ_SETUP(NR)                                                                              \
    const __m512i l8 = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);     \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->K / 256);                                      \
    for (int64_t b = 0; b < t->K / 256; ++b) {                                                \
      pf_step(&pf);                                                                           \
      __m256 x8 = _mm256_loadu_ps(xs + 8 * b);                                                \
      __m512 sc[NR];                                                                          \
      for (int r = 0; r < NR; ++r) {                                                          \
        __m256 s8, m8;                                                                        \
        q4k_scales(row[r] + 144 * b, &s8, &m8);                                               \
        macc[r] = _mm256_fmadd_ps(m8, x8, macc[r]);                                           \
        sc[r] = _mm512_castps256_ps512(s8);                                                   \
      }                                                                                       \
      for (int i = 0; i < 2; ++i) {                                                           \
        __m512i z[NR];                                                                        \
        __m512 se[NR], so[NR];                                                                \
        for (int r = 0; r < NR; ++r) {                                                        \
          z[r] = _mm512_loadu_si512(row[r] + 144 * b + 16 + 64 * i);                          \
          se[r] = so[r] = _mm512_setzero_ps();                                                \
        }                                                                                     \
        const float *xv = xk + 256 * b + 128 * i;                                             \
        _Pragma("GCC unroll 8")                                                               \
        for (int k = 0; k < 8; ++k) {                                                         \
          __m512 xk16 = _mm512_loadu_ps(xv + 16 * k);                                         \
          for (int r = 0; r < NR; ++r) {                                                      \
            __m512 v = gvec_nib(z[r], k);                                                     \
            if (k & 1) so[r] = _mm512_fmadd_ps(v, xk16, so[r]);                               \
            else se[r] = _mm512_fmadd_ps(v, xk16, se[r]);                                     \
          }                                                                                   \
        }                                                                                     \
        __m512i ie = _mm512_add_epi32(l8, _mm512_set1_epi32(4 * i));                          \
        __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));                              \
        for (int r = 0; r < NR; ++r) {                                                        \
          acc[r] = _mm512_fmadd_ps(se[r], _mm512_permutexvar_ps(ie, sc[r]), acc[r]);          \
          acc[r] = _mm512_fmadd_ps(so[r], _mm512_permutexvar_ps(io, sc[r]), acc[r]);          \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]) - hsum256(macc[r]);\
  }
Q4KE_BODY(1)
Q4KE_BODY(4)
QK_V512 __m512 gvec_b6(__m512i z, int p) {   /* byte p of every lane, times 256^p (p = 3: as is) */
  if (p == 3) return _mm512_cvtepi32_ps(_mm512_srli_epi32(z, 24));
  return _mm512_cvtepi32_ps(_mm512_and_si512(z, _mm512_set1_epi32(0xFF << (8 * p))));
}
#define Q6KE_BODY(NR)                                                                         \
  QK_V512 void q6ke_1_##NR(const qctx *t, int64_t m, int64_t n) {                            \
    const float *xk = t->xg + m * t->ldxg, *xs = t->sxe + m * (t->K / 16);                    \
    const uint8_t *row[NR];                                                                   \
    __m512 acc[NR], oacc[NR];                                                                 \
    for (int r = 0; r < NR; ++r) {                                                            \
      row[r] = t->w + (n + r) * t->ldw;                                                       \
      acc[r] = oacc[r] = _mm512_setzero_ps();                                                 \
    }                                                                                         \
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3);                       \
    const __m512i lane4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);  \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, 2 * (t->K / 256));                                \
    for (int64_t b = 0; b < t->K / 256; ++b) {                                                \
      __m512 x16 = _mm512_loadu_ps(xs + 16 * b), sc[NR];                                      \
      for (int r = 0; r < NR; ++r) {                                                          \
        const uint8_t *blk = row[r] + 210 * b;                                                \
        sc[r] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 192)))), \
                              _mm512_set1_ps(_cvtsh_ss(*(const uint16_t *)(blk + 208))));     \
        oacc[r] = _mm512_fmadd_ps(sc[r], x16, oacc[r]);                                       \
      }                                                                                       \
      for (int h = 0; h < 2; ++h) {                                                           \
        pf_step(&pf);                                                                         \
        __m512i w[NR][2];                                                                     \
        for (int r = 0; r < NR; ++r) {                                                        \
          const uint8_t *blk = row[r] + 210 * b;                                              \
          __m512i ql = _mm512_loadu_si512(blk + 64 * h);                                      \
          __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));             \
          __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1); \
          w[r][0] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(hh, m3), 4)); \
          w[r][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),         \
                                    _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hh, 4), m3), 4)); \
        }                                                                                     \
        for (int q = 0; q < 2; ++q) {                                                         \
          __m512 s[NR];                                                                       \
          for (int r = 0; r < NR; ++r) s[r] = _mm512_setzero_ps();                            \
          const float *xv = xk + 256 * b + 128 * h + 64 * q;                                  \
          _Pragma("GCC unroll 4")                                                             \
          for (int p = 0; p < 4; ++p) {                                                       \
            __m512 xp = _mm512_loadu_ps(xv + 16 * p);                                         \
            for (int r = 0; r < NR; ++r) s[r] = _mm512_fmadd_ps(gvec_b6(w[r][q], p), xp, s[r]); \
          }                                                                                   \
          __m512i is = _mm512_add_epi32(lane4, _mm512_set1_epi32(8 * h + 4 * q));             \
          for (int r = 0; r < NR; ++r)                                                        \
            acc[r] = _mm512_fmadd_ps(s[r], _mm512_permutexvar_ps(is, sc[r]), acc[r]);         \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r)                                                              \
      t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]) - 32.0f * _mm512_reduce_add_ps(oacc[r]); \
  }
Q6KE_BODY(1)
Q6KE_BODY(4)
#define KEXACT(F)                                                                             \
  QK_T512 static void F##e(const qctx *t, int64_t m, int64_t mr, int64_t n0, int64_t n1) {   \
    for (int64_t i = m; i < m + mr; ++i) {                                                    \
      int64_t n = n0;                                                                         \
      for (; n + 4 <= n1; n += 4) F##e_1_4(t, i, n);                                          \
      for (; n < n1; ++n) F##e_1_1(t, i, n);                                                  \
    }                                                                                         \
  }
KEXACT(q4k)
KEXACT(q6k)
/* Exact q5_k GEMV (AVX-512, M < 4) on x's integer digits (as exd_*: prep_x_digits_k): q5kg's
 * registers -- a 64-byte load of qs holds sub-blocks 4i (low nibbles, bytes 0-31), 4i+2
 * (32-63), 4i+1 and 4i+3 (high nibbles), the fifth bits added where bit j of qh[l] is set
 * (a byte test of qh, qh >> 2 above it) -- against the digits stored in that order (per block
 * and digit 256 bytes: chunks 0, 2, 1, 3, 4, 6, 5, 7), three dpbusd per register chained top
 * digit first (|lane| <= 4 * 31 * 127 2^16 < 2^31); each 8-lane half is one sub-block, scaled by
 * d sc_j 2^(e_j - 16) by a lane permute; minus dmin m_j times the sub-block's f32 sum of x. */
#define Q5KE_BODY(NR)                                                                         \
  QK_V512 void q5ke_1_##NR(const qctx *t, int64_t m, int64_t n) {                            \
    const int8_t *xd = t->xd + m * (t->K / 256) * 768;                                        \
    const float *dx = t->dxd + m * t->nc, *sx = t->sxe + m * t->nc;                           \
    KQ_SETUP(NR)                                                                              \
    const __m512i m4 = _mm512_set1_epi8(0xF), sixteen = _mm512_set1_epi8(16);                 \
    const __m512i half = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);    \
    qk_pf pf = pf_tile(row[0], NR * t->ldw, t->K / 256);                                      \
    for (int64_t b = 0; b < t->K / 256; ++b) {                                                \
      __m256 dx8 = _mm256_loadu_ps(dx + 8 * b), sx8 = _mm256_loadu_ps(sx + 8 * b);            \
      pf_step(&pf);                                                                           \
      const int8_t *xb = xd + 768 * b;                                                        \
      for (int r = 0; r < NR; ++r) {                                                          \
        const uint8_t *blk = row[r] + 176 * b;                                                \
        __m256 sc, mn;                                                                        \
        q4k_scales(blk, &sc, &mn);                                                            \
        macc[r] = _mm256_fmadd_ps(mn, sx8, macc[r]);                                          \
        __m512 s16 = _mm512_castps256_ps512(_mm256_mul_ps(sc, dx8));   /* sub-block j: lane j */ \
        __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 16));                         \
        __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1); \
        for (int i = 0; i < 2; ++i) {                                                         \
          __m512i q = _mm512_loadu_si512(blk + 48 + 64 * i);                                  \
          __m512i w[2] = {_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4)}; \
          for (int u = 0; u < 2; ++u) {                                                       \
            __mmask64 hb = _mm512_test_epi8_mask(hz, _mm512_set1_epi8((char)(1 << (4 * i + u)))); \
            __m512i v = _mm512_mask_add_epi8(w[u], hb, w[u], sixteen);                        \
            const int8_t *xq = xb + 128 * i + 64 * u;                                         \
            __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, _mm512_loadu_si512(xq + 512)); \
            s = _mm512_dpbusd_epi32(_mm512_slli_epi32(s, 8), v, _mm512_loadu_si512(xq + 256)); \
            s = _mm512_dpbusd_epi32(_mm512_slli_epi32(s, 8), v, _mm512_loadu_si512(xq));      \
            __m512i il = _mm512_add_epi32(half, _mm512_set1_epi32(4 * i + u));                \
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_permutexvar_ps(il, s16), acc[r]); \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int r = 0; r < NR; ++r) t->o[m * t->ldo + n + r] = _mm512_reduce_add_ps(acc[r]) - hsum256(macc[r]); \
  }
Q5KE_BODY(1)
Q5KE_BODY(4)
KEXACT(q5k)
/* x for q5ke: per row and 256-block 768 bytes, digit p at 256 p, the chunks in the order 0, 2,
 * 1, 3, 4, 6, 5, 7 (32 bytes each); dxd, sxe: per row K / 32 (each chunk's 2^(e - 16), sum).
 * Returns 0 when a sum is not finite. */
QK_T512 static int prep_x_digits_k(const qctx *t, int8_t *xd, float *dxd, float *sxe) {
  int ok = 1;
  int64_t nb = t->K / 256;
  for (int64_t m = 0; m < t->M; ++m)
    for (int64_t c = 0; c < t->nc; ++c) {
      const float *x = t->x + m * t->ldx + 32 * c;
      int j = (int)(c & 7), slot = (j & 4) | ((j & 1) << 1) | ((j >> 1) & 1);
      float sum;
      dxd[m * t->nc + c] = x_digits(_mm512_loadu_ps(x), _mm512_loadu_ps(x + 16),
                                    xd + (m * nb + c / 8) * 768 + 32 * slot, 256, 16, &sum);
      sxe[m * t->nc + c] = sum;
      ok &= isfinite(sum) != 0;
    }
  return ok;
}
/* x for q4ke / q6ke: per row K floats in the kernels' lane order, times 16^-k / 256^-p, and the
 * sums of x per sub-block (q4_k: 32 weights, K / 32 per row; q6_k: 16, K / 16). */
static uint16_t kperm[2][256];   /* q4_k, q6_k: the x element of slot e of a block */
static float kscale[2][256];     /* and its power of two */
static void k_tables(void) {
  for (int e = 0; e < 256; ++e) {
    int i = e >> 7, k = (e >> 4) & 7, j = e & 15, p = (e >> 4) & 3;
    /* q4_k: i, k, lane j: sub-block 4i + 2(j / 8) + (k & 1), weight 4(j % 8) + k / 2 */
    kperm[0][e] = (uint16_t)(32 * (4 * i + 2 * (j >> 3) + (k & 1)) + 4 * (j & 7) + (k >> 1));
    kscale[0][e] = GSCALE_NIB(k);
    /* q6_k: h, q, p, lane j: weight 128h + 64q + 4j + p */
    kperm[1][e] = (uint16_t)((e & ~63) + 4 * j + p);
    kscale[1][e] = p == 3 ? 1.0f : 1.0f / (float)(1u << (8 * p));
  }
}
static void prep_k_exact(const qctx *t, float *xk, float *xs) {
  int64_t nb = t->K / 256;
  int f = t->fmt == F_Q6_K, per = f ? 16 : 32;
  const uint16_t *perm = kperm[f];
  const float *sc = kscale[f];
  for (int64_t m = 0; m < t->M; ++m) {
    const float *x = t->x + m * t->ldx;
    float *d = xk + m * t->ldxg, *s = xs + m * (t->K / per);
    for (int64_t b = 0; b < nb; ++b) {
      const float *xb = x + 256 * b;
      for (int e = 0; e < 256; ++e) d[256 * b + e] = xb[perm[e]] * sc[e];
      for (int c = 0; c < 256 / per; ++c) {
        float sum = 0.0f;
        for (int e = 0; e < per; ++e) sum += xb[per * c + e];
        s[(256 / per) * b + c] = sum;
      }
    }
  }
}
/* x prepared for the group kernels: exact (xg permuted, times the decoder's GSCALE(k)
 * when scaled -- the GEMV -- or as is for the panel kernels; sxe) ... */
QK_T512 static void prep_exact_groups(const qctx *t, float *xg, float *sxe, int scaled) {
  int fam = group_family(t->fmt);
  float sc[8];
  for (int k = 0; k < 8; ++k) sc[k] = !scaled ? 1.0f : fam == GF_NIB ? GSCALE_NIB(k) : GSCALE_BYTE(k);
  for (int64_t m = 0; m < t->M; ++m) {
    const float *x = t->x + m * t->ldx;
    for (int64_t g = 0; g < t->ng; ++g) {
      float *dst = xg + m * t->ldxg + 128 * g, *se = sxe + (m * t->ng + g) * 16;
      if (g < t->ngf) {
        for (int k = 0; k < 8; ++k)
          _mm512_storeu_ps(dst + 16 * k, _mm512_mul_ps(_mm512_set1_ps(sc[k]),
                           _mm512_i32gather_ps(_mm512_loadu_si512(gperm[fam] + 16 * k), x + 128 * g, 4)));
      } else {
        for (int s = 0; s < 128; ++s) {
          int e = gperm[fam][s];
          dst[s] = 128 * g + e < 32 * t->nc ? x[128 * g + e] * sc[s / 16] : 0.0f;
        }
      }
      for (int b = 0; b < 4; ++b) {
        float sum = 0.0f;
        if (4 * g + b < t->nc) sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(x + 128 * g + 32 * b),
                                                                       _mm512_loadu_ps(x + 128 * g + 32 * b + 16)));
        se[4 * b] = sum;
        se[4 * b + 1] = se[4 * b + 2] = se[4 * b + 3] = 0.0f;
      }
    }
  }
}

/* -- panels (exact, M > 1): NB rows of W decoded once into f32, an f32 register-tiled dot
 * kernel (MR rows of x by NR rows of the panel, 16 lanes along K) over every row of x. -- */
/* a group format's row, in the group order (x: xg unscaled) */
#define GDEC(F, FMT)                                                                          \
  QK_T512 static void gdec_##F(const qctx *t, const uint8_t *row, float *dst) {             \
    uint8_t tail[256] __attribute__((aligned(64)));                                           \
    const int64_t gb = GROUP_BYTES(FMT);                                                      \
    if (t->ngf < t->ng) {                                                                     \
      memset(tail, 0, sizeof tail);                                                           \
      memcpy(tail, row + t->ngf * gb, (size_t)((t->nc - 4 * t->ngf) * BLOCK_BYTES[FMT]));    \
    }                                                                                         \
    for (int64_t g = 0; g < t->ng; ++g) {                                                     \
      const uint8_t *p = g < t->ngf ? row + g * gb : tail;                                    \
      __m512 dv, bv;                                                                          \
      __m512i z, z2;                                                                          \
      if (FMT == F_Q8_0) { gload_byte(p, &z, &z2, &dv); bv = _mm512_setzero_ps(); }           \
      else if (is_q5(FMT)) gload_q5(FMT, p, &z, &z2, &dv, &bv);                               \
      else z = gload_nib(FMT, p, &dv, &bv);                                                   \
      for (int k = 0; k < 8; ++k) {                                                           \
        int byte = group_family(FMT) == GF_BYTE;                                              \
        __m512 v = byte ? gvec_byte(z, z2, k) : gvec_nib(z, k);                               \
        float s = byte ? GSCALE_BYTE(k) : GSCALE_NIB(k);                                      \
        _mm512_storeu_ps(dst + 128 * g + 16 * k, _mm512_fmadd_ps(v, _mm512_mul_ps(dv, _mm512_set1_ps(s)), bv)); \
      }                                                                                       \
    }                                                                                         \
  }
GDEC(q4_0, F_Q4_0)
GDEC(q4_1, F_Q4_1)
GDEC(q8_0, F_Q8_0)
GDEC(q5_0, F_Q5_0)
GDEC(q5_1, F_Q5_1)
/* the group formats' kernels, by format */
static const struct {
  tile_fn exact, q8;
  void (*dec)(const qctx *, const uint8_t *, float *);
} GROUP_KERNELS[F_COUNT] = {
    [F_Q4_0] = {exg_q4_0, q8g_q4_0, gdec_q4_0}, [F_Q4_1] = {exg_q4_1, q8g_q4_1, gdec_q4_1},
    [F_Q8_0] = {exg_q8_0, q8g_q8_0, gdec_q8_0}, [F_Q5_0] = {exg_q5_0, q8g_q5_0, gdec_q5_0},
    [F_Q5_1] = {exg_q5_1, q8g_q5_1, gdec_q5_1},
};
/* any other format's row, in natural order (x as is) */
#define PDEC(F, ID)                                                                           \
  QK_T512 static void pdec_##F(const qctx *t, const uint8_t *row, float *dst) {             \
    for (int64_t c = 0; c < t->nc; ++c) {                                                     \
      __m512 lo, hi;                                                                          \
      deq512_##F(row, c, &lo, &hi);                                                           \
      _mm512_storeu_ps(dst + 32 * c, lo);                                                     \
      _mm512_storeu_ps(dst + 32 * c + 16, hi);                                                \
    }                                                                                         \
  }
#define PDEC_Q(F, ID, MIN) PDEC(F, ID)
QUANT_FORMATS(PDEC_Q)
#define PDEC_ENTRY(F, ID, MIN) [ID] = pdec_##F,
static void (*const PDECS[F_COUNT])(const qctx *, const uint8_t *, float *) = {QUANT_FORMATS(PDEC_ENTRY)};

/* the sums of 4 registers, in order */
QK_V512 __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(b), 1)));
  __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
  __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1)));
  __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
#define PK_BODY(MR, NR)                                                                       \
  QK_V512 void pk_##MR##_##NR(int64_t K, const float *x, int64_t ldx, const float *w, int64_t ldw, \
                              float *o, int64_t ldo) {                                        \
    __m512 acc[MR][NR];                                                                       \
    for (int i = 0; i < MR; ++i)                                                              \
      for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();                           \
    for (int64_t k = 0; k < K; k += 16) {                                                     \
      __m512 wv[NR];                                                                          \
      for (int r = 0; r < NR; ++r) wv[r] = _mm512_loadu_ps(w + r * ldw + k);                  \
      for (int i = 0; i < MR; ++i) {                                                          \
        __m512 xv = _mm512_loadu_ps(x + i * ldx + k);                                         \
        for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r], acc[i][r]);       \
      }                                                                                       \
    }                                                                                         \
    for (int i = 0; i < MR; ++i) {                                                            \
      if (NR == 4) {                                                                          \
        _mm_storeu_ps(o + i * ldo, reduce4(acc[i][0], acc[i][1 % NR], acc[i][2 % NR], acc[i][3 % NR])); \
      } else {                                                                                \
        for (int r = 0; r < NR; ++r) o[i * ldo + r] = _mm512_reduce_add_ps(acc[i][r]);        \
      }                                                                                       \
    }                                                                                         \
  }
#define PK_ROW(MR) PK_BODY(MR, 1) PK_BODY(MR, 2) PK_BODY(MR, 3) PK_BODY(MR, 4)
PK_ROW(1) PK_ROW(2) PK_ROW(3) PK_ROW(4)
typedef void (*pk_fn)(int64_t, const float *, int64_t, const float *, int64_t, float *, int64_t);
static const pk_fn PK[4][4] = {{pk_1_1, pk_1_2, pk_1_3, pk_1_4}, {pk_2_1, pk_2_2, pk_2_3, pk_2_4},
                               {pk_3_1, pk_3_2, pk_3_3, pk_3_4}, {pk_4_1, pk_4_2, pk_4_3, pk_4_4}};

#define PANEL_ROWS 32
/* rows [n0, n1) of W: panels of PANEL_ROWS rows, decoded once, against all rows of x */
QK_T512 static void panel_range(const qctx *t, int64_t n0, int64_t n1) {
  int64_t Kp = t->pxk;
  float *buf = aligned_alloc(64, (size_t)(PANEL_ROWS * Kp) * 4 + 64);
  if (!buf) return;
  for (int64_t nb = n0; nb < n1; nb += PANEL_ROWS) {
    int64_t ne = nb + PANEL_ROWS < n1 ? nb + PANEL_ROWS : n1;
    for (int64_t n = nb; n < ne; ++n) t->pdec(t, t->w + n * t->ldw, buf + (n - nb) * Kp);
    for (int64_t m = 0; m < t->M; m += 4) {
      int64_t mr = t->M - m < 4 ? t->M - m : 4;
      for (int64_t n = nb; n < ne; n += 4) {
        int64_t nr = ne - n < 4 ? ne - n : 4;
        PK[mr - 1][nr - 1](Kp, t->px + m * t->ldpx, t->ldpx, buf + (n - nb) * Kp, Kp, t->o + m * t->ldo + n, t->ldo);
      }
    }
  }
  free(buf);
}

/* ... and _q8 (x quantized per 32 as quantize_rows_512, stored in the group layout) */
QK_T512 static void prep_q8_groups(const qctx *t, int8_t *qg, float *dxg, float *sxg) {
  const __m128i flip = _mm_set1_epi8(t->fmt == F_Q8_0 ? (char)0x80 : 0);
  for (int64_t m = 0; m < t->M; ++m)
    for (int64_t g = 0; g < t->ng; ++g) {
      int8_t *q = qg + (m * t->ng + g) * 128;
      float *d = dxg + (m * t->ng + g) * 16, *sx = sxg + (m * t->ng + g) * 16;
      for (int b = 0; b < 4; ++b) {
        int64_t c = 4 * g + b;
        float dd = 0.0f, ss = 0.0f;
        __m128i ql = _mm_setzero_si128(), qh = _mm_setzero_si128();
        if (c < t->nc) {
          const float *x = t->x + m * t->ldx + 32 * c;
          __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
          float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
          float id;
          dd = amax / 127.0f;
          id = dd != 0.0f ? 1.0f / dd : 0.0f;
          __m512i il = _mm512_cvtps_epi32(_mm512_mul_ps(lo, _mm512_set1_ps(id)));
          __m512i ih = _mm512_cvtps_epi32(_mm512_mul_ps(hi, _mm512_set1_ps(id)));
          ql = _mm512_cvtepi32_epi8(il);
          qh = _mm512_cvtepi32_epi8(ih);
          ss = dd * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(il, ih));
        }
        _mm_storeu_si128((__m128i *)(q + 16 * b), _mm_xor_si128(ql, flip));
        _mm_storeu_si128((__m128i *)(q + 64 + 16 * b), _mm_xor_si128(qh, flip));
        d[4 * b] = d[4 * b + 1] = d[4 * b + 2] = d[4 * b + 3] = dd;
        sx[4 * b] = ss;
        sx[4 * b + 1] = sx[4 * b + 2] = sx[4 * b + 3] = 0.0f;
      }
    }
}

/* take: one row, dequantized */
#define TAKE512(F, ID)                                                                        \
  QK_T512 static void take512_##F(const uint8_t *row, int64_t nc, float *out) {              \
    for (int64_t c = 0; c < nc; ++c) {                                                        \
      __m512 lo, hi;                                                                          \
      deq512_##F(row, c, &lo, &hi);                                                           \
      _mm512_storeu_ps(out + 32 * c, lo);                                                     \
      _mm512_storeu_ps(out + 32 * c + 16, hi);                                                \
    }                                                                                         \
  }
#define TAKE256(F, ID)                                                                        \
  QK_T256 static void take256_##F(const uint8_t *row, int64_t nc, float *out) {              \
    for (int64_t c = 0; c < nc; ++c) {                                                        \
      __m256 w[4];                                                                            \
      deq256_##F(row, c, w);                                                                  \
      for (int k = 0; k < 4; ++k) _mm256_storeu_ps(out + 32 * c + 8 * k, w[k]);               \
    }                                                                                         \
  }
#define TAKE_Q(F, ID, MIN) TAKE512(F, ID) TAKE256(F, ID)
QUANT_FORMATS(TAKE_Q)
TAKE512(f16, F_F16) TAKE256(f16, F_F16)
TAKE512(bf16, F_BF16) TAKE256(bf16, F_BF16)
#endif /* QK_X86 */

#define TAKES(F, ID)                                                                          \
  static void takes_##F(const uint8_t *row, int64_t nc, float *out) {                        \
    for (int64_t c = 0; c < nc; ++c) deqs_##F(row, c, out + 32 * c);                          \
  }
#define TAKES_Q(F, ID, MIN) TAKES(F, ID)
QUANT_FORMATS(TAKES_Q)
TAKES(f16, F_F16)
TAKES(bf16, F_BF16)

/* -- dispatch tables ------------------------------------------------------------------ */

typedef void (*take_fn)(const uint8_t *, int64_t, float *);
enum { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };
static int isa_detected = ISA_SCALAR, isa = ISA_SCALAR;
static const int tile_rows[3] = {4, 2, 4};   /* MR per ISA */

typedef struct {
  tile_fn exact[3], q8[3];
  take_fn take[3];
} kernels;

#ifdef QK_X86
#define KERNELS_Q(F, ID) [ID] = {{exs_##F, ex256_##F, ex512_##F}, {q8s_##F, q8a_##F, q8v_##F}, \
                                 {takes_##F, take256_##F, take512_##F}},
#define KERNELS_F(F, ID) [ID] = {{exs_##F, ex256_##F, ex512_##F}, {exs_##F, ex256_##F, ex512_##F}, \
                                 {takes_##F, take256_##F, take512_##F}},
#else
#define KERNELS_Q(F, ID) [ID] = {{exs_##F, exs_##F, exs_##F}, {q8s_##F, q8s_##F, q8s_##F}, \
                                 {takes_##F, takes_##F, takes_##F}},
#define KERNELS_F(F, ID) [ID] = {{exs_##F, exs_##F, exs_##F}, {exs_##F, exs_##F, exs_##F}, \
                                 {takes_##F, takes_##F, takes_##F}},
#endif
#define KERNELS_QQ(F, ID, MIN) KERNELS_Q(F, ID)
static const kernels KERNELS[F_COUNT] = {QUANT_FORMATS(KERNELS_QQ) KERNELS_F(f16, F_F16) KERNELS_F(bf16, F_BF16)};

/* -- threads -------------------------------------------------------------------------- */

static double fork_work = 262144.0;   /* M*N*K below this: one thread */
static volatile int forked_child = 0;
static void mark_forked_child(void) { forked_child = 1; }

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(_OPENMP) && defined(RELAX_BLAS_MKL)
#define QK_THREADS 1
int MKL_Get_Max_Threads(void);
static int max_threads(void) { return forked_child ? 1 : MKL_Get_Max_Threads(); }
#elif defined(_OPENMP) && defined(RELAX_QUANT_OPENMP)   /* OpenBLAS builds on libiomp5 */
#define QK_THREADS 1
int scipy_openblas_get_num_threads(void);
static int max_threads(void) {
  if (forked_child) return 1;
  int n = scipy_openblas_get_num_threads();
  return n > 1 ? n : 1;
}
#else
static int max_threads(void) { return 1; }
#endif

__attribute__((constructor)) static void relax_quant_init(void) {
  pthread_atfork(NULL, NULL, mark_forked_child);
#ifdef QK_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    isa_detected = ISA_AVX2;   /* (F16C comes with every AVX2 + FMA CPU) */
  if (isa_detected == ISA_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
    isa_detected = ISA_AVX512;
#endif
  isa = isa_detected;
  const char *f32env = getenv("RELAX_QUANT_F32_GEMV");
  if (f32env && f32env[0] == '0') f32_gemv_on = 0;
  const char *intenv = getenv("RELAX_QUANT_EXACT_INT");
  if (intenv && intenv[0] == '0') exact_int_on = 0;
#ifdef QK_X86
  group_tables();
  k_tables();
#endif
}

/* For tests and benchmarks (ctypes): the ISA level (0 scalar, 1 AVX2, 2 AVX-512 VNNI), at
 * most the detected one; returns the level now in use. */
int relax_quant_set_isa(int level) {
  isa = level < 0 ? isa_detected : (level < isa_detected ? level : isa_detected);
  return isa;
}
int relax_quant_isa(void) { return isa; }
void relax_quant_set_fork_work(double w) { fork_work = w; }
/* The decode prefetch distance in bytes (>= 0; < 0: unchanged); returns the one now in use. */
int64_t relax_quant_prefetch(int64_t bytes) {
  if (bytes >= 0) qk_pf_dist = bytes;
  return qk_pf_dist;
}
int relax_quant_max_threads(void) { return max_threads(); }
/* The number of threads the last product ran on (its OpenMP team; 1 without a region), for tests. */
static volatile int last_team = 1;
int relax_quant_last_threads(void) { return last_team; }

/* Rows [0, N) of W in one contiguous range per thread; in each, blocks of 64 rows of W (they
 * stay in L2) against every tile of x. */
static void run_range(const qctx *t, tile_fn fn, int64_t mr, int64_t n0, int64_t n1) {
#ifdef QK_X86
  if (t->panel) {
    panel_range(t, n0, n1);
    return;
  }
#endif
#ifdef QK_X86
  pf_start(t->w + n0 * t->ldw, (n1 - n0) * t->ldw);
#endif
  for (int64_t nb = n0; nb < n1; nb += 64) {
    int64_t ne = nb + 64 < n1 ? nb + 64 : n1;
    for (int64_t m = 0; m < t->M; m += mr) fn(t, m, t->M - m < mr ? t->M - m : mr, nb, ne);
  }
}

/* The team size of a call: the caller's count (a memref<i32> descriptor: allocated, aligned,
 * offset) when it gives one >= 1, else the BLAS thread count; 1 in a forked child or a build
 * without OpenMP. */
typedef struct { int32_t *allocated, *aligned; int64_t offset; } qcell;
static int call_threads(const void *cell) {
  const qcell *c = (const qcell *)cell;
  int n = c && c->aligned ? c->aligned[c->offset] : 0;
  if (n < 1 || forked_child) return max_threads();
#ifdef QK_THREADS
  return n;
#else
  return 1;
#endif
}

static void run(const qctx *t, tile_fn fn, int64_t mr) {
  int nt = t->threads > 0 ? t->threads : 1;
  if ((double)t->M * (double)t->N * (double)t->K < fork_work) nt = 1;
  int64_t per = (t->N + nt - 1) / nt;
  per = (per + 3) / 4 * 4;
  if (per > 0 && (t->N + per - 1) / per < nt) nt = (int)((t->N + per - 1) / per);
  if (nt <= 1) {
    last_team = 1;
    run_range(t, fn, mr, 0, t->N);
    return;
  }
#ifdef QK_THREADS
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int i = 0; i < nt; ++i) {
    int64_t n0 = i * per, n1 = n0 + per < t->N ? n0 + per : t->N;
    if (i == 0) last_team = omp_get_num_threads();
    run_range(t, fn, mr, n0, n1);
  }
#endif
}

/* -- f32 decode GEMV: C (M <= 3, N) = A (M, K) @ B (K, N), B the f32 weight as bound (x @ W) -- */
/* The BLAS shim's M <= 3 products over row-major f32 operands (blas_adapter.c) come here
 * first. B is read once, in groups of 8 rows (k .. k+7) over a tile of columns (2048 at M = 1,
 * else 1024: the M rows of C's tile stay in L1): per 16 columns, 8 loads of B and, per row of
 * A, one load, 8 FMAs (k in order) and one store of C. Each row stream of a group prefetches
 * its own row qk_pf_dist / 8 bytes ahead, spilling into the next group's same row past the
 * tile's end (so every line of B is prefetched once, ~qk_pf_dist bytes before its use); the
 * lines the first group's prefetches skip are prefetched when a tile starts. Exact f32: every
 * output is the k-ordered FMA chain of its products. Measurements: bench/README.md,
 * "F16 / F32 decode GEMVs". */
#ifdef QK_X86
#define F32_TILE(MM) ((MM) == 1 ? 2048 : 1024)   /* columns: the MM rows of C stay in L1 */
/* 16 columns at byte offset O of the tile (mask MK) for MM rows of A: RR rows of B in k order. */
#define F32_STEP(MM, RR, O, MK)                                                               \
  {                                                                                           \
    __m512 bv[RR];                                                                            \
    for (int r = 0; r < RR; ++r) bv[r] = _mm512_maskz_loadu_ps(MK, row[r] + (O));            \
    for (int m = 0; m < MM; ++m) {                                                            \
      float *c = C + m * ldc + t0 + (O) / 4;                                                  \
      __m512 y = _mm512_maskz_loadu_ps(MK, c);                                                \
      for (int r = 0; r < RR; ++r) y = _mm512_fmadd_ps(bv[r], xv[m][r], y);                   \
      _mm512_mask_storeu_ps(c, MK, y);                                                        \
    }                                                                                         \
  }
#define F32_RANGE(MM, RR)                                                                     \
  QK_T512 static void f32_gemv_##MM##_##RR(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, \
                                    float *C, int64_t ldc, int accumulate, int64_t n0, int64_t n1) { \
    int64_t width = n1 - n0, nt = (width + F32_TILE(MM) - 1) / F32_TILE(MM);                         \
    int64_t tw = ((width + nt - 1) / nt + 15) / 16 * 16;                                      \
    for (int64_t t0 = n0; t0 < n1; t0 += tw) {                                               \
      int64_t t1 = t0 + tw < n1 ? t0 + tw : n1, T = (t1 - t0) * 4, Tf = T / 64 * 64;          \
      int64_t d = qk_pf_dist / RR, dq = d / T, dr = d % T;   /* ahead: dq rows + dr bytes */  \
      __mmask16 mt = (__mmask16)((1u << ((T - Tf) / 4)) - 1);                                \
      for (int64_t kr = 0; kr < RR * (dq + 1) && kr < K; ++kr)   /* what the first group skips */ \
        for (int64_t o = 0; o < (kr < RR * dq ? T : dr); o += 64)                              \
          _mm_prefetch((const char *)(B + kr * ldb + t0) + o, _MM_HINT_T0);                    \
      if (!accumulate)                                                                        \
        for (int m = 0; m < MM; ++m) memset(C + m * ldc + t0, 0, (size_t)T);                  \
      for (int64_t k = 0; k < K; k += RR) {                                                   \
        int R = K - k < RR ? (int)(K - k) : RR;                                               \
        const char *row[RR], *pa[RR], *pb[RR];                                               \
        __m512 xv[MM][RR];                                                                    \
        for (int r = 0; r < RR; ++r) {                                                        \
          int64_t kr = k + (r < R ? r : 0), ka = kr + RR * dq, kb = ka + RR;                  \
          row[r] = (const char *)(B + kr * ldb + t0);   /* past K: row k again, times x = 0 */ \
          pa[r] = (const char *)(B + (ka < K ? ka : kr) * ldb + t0) + dr;                     \
          pb[r] = (const char *)(B + (kb < K ? kb : kr) * ldb + t0) + dr - T;                 \
          for (int m = 0; m < MM; ++m) xv[m][r] = _mm512_set1_ps(r < R ? A[m * lda + k + r] : 0.0f); \
        }                                                                                     \
        int64_t o = 0, sw = T - dr;   /* prefetches switch to the next group's rows at o = sw */ \
        for (; o < Tf; o += 64) {                                                             \
          for (int r = 0; r < RR; ++r) _mm_prefetch((o < sw ? pa[r] : pb[r]) + o, _MM_HINT_T0); \
          F32_STEP(MM, RR, o, (__mmask16)0xFFFF)                                              \
        }                                                                                     \
        if (o < T) F32_STEP(MM, RR, o, mt)                                                    \
      }                                                                                       \
    }                                                                                         \
  }
F32_RANGE(1, 8) F32_RANGE(2, 8) F32_RANGE(3, 8)
QK_T512 static void f32_gemv_range(int64_t M, int64_t K, const float *A, int64_t lda, const float *B,
                                   int64_t ldb, float *C, int64_t ldc, int accumulate, int64_t n0, int64_t n1) {
  if (M == 1) f32_gemv_1_8(K, A, lda, B, ldb, C, ldc, accumulate, n0, n1);
  else if (M == 2) f32_gemv_2_8(K, A, lda, B, ldb, C, ldc, accumulate, n0, n1);
  else f32_gemv_3_8(K, A, lda, B, ldb, C, ldc, accumulate, n0, n1);
}
#endif

/* C (M, N) = A @ B [+ C when accumulate]: A rows lda apart (unit inner stride), B (K, N) rows
 * ldb apart, C rows ldc apart; M <= 3, AVX-512 only. Returns 1 when it wrote C, 0 when the
 * caller must (another ISA, M > 3, switched off by relax_quant_set_f32_gemv). Threads: the
 * BLAS thread count over column ranges (multiples of 16), like the quant kernels' rows. */
/* The adapter's entry (blas_adapter.c): hidden, so a call from this library's adapter runs this
 * library's kernel even when another relax_blas build (the other provider's) was loaded first
 * with RTLD_GLOBAL and exports relax_quant_f32_gemv too. */
__attribute__((visibility("hidden"))) int relax_shim_quant_f32_gemv(int64_t M, int64_t N, int64_t K, const float *A,
                                                                    int64_t lda, const float *B, int64_t ldb, float *C,
                                                                    int64_t ldc, int accumulate);
int relax_quant_f32_gemv(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float *C, int64_t ldc, int accumulate) {
  return relax_shim_quant_f32_gemv(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
int relax_shim_quant_f32_gemv(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                              int64_t ldb, float *C, int64_t ldc, int accumulate) {
#ifdef QK_X86
  if (!f32_gemv_on || isa != ISA_AVX512 || M < 1 || M > 3 || N < 1 || K < 1 || ldb < N || ldc < N) return 0;
  int nt = max_threads();
  ++f32_gemv_calls;
  if ((double)M * (double)N * (double)K < fork_work) nt = 1;
  int64_t per = ((N + nt - 1) / nt + 15) / 16 * 16;
  if ((N + per - 1) / per < nt) nt = (int)((N + per - 1) / per);
  if (nt <= 1) {
    last_team = 1;
    f32_gemv_range(M, K, A, lda, B, ldb, C, ldc, accumulate, 0, N);
    return 1;
  }
#ifdef QK_THREADS
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int i = 0; i < nt; ++i) {
    int64_t n0 = i * per, n1 = n0 + per < N ? n0 + per : N;
    if (i == 0) last_team = omp_get_num_threads();
    if (n0 < n1) f32_gemv_range(M, K, A, lda, B, ldb, C, ldc, accumulate, n0, n1);
  }
#endif
  return 1;
#else
  (void)M; (void)N; (void)K; (void)A; (void)lda; (void)B; (void)ldb; (void)C; (void)ldc; (void)accumulate;
  return 0;
#endif
}
/* For tests and benchmarks: 0 sends the shim's f32 GEMVs to the BLAS again, 1 here (default);
 * < 0: unchanged. Returns the setting now in use. */
int relax_quant_set_f32_gemv(int on) {
  if (on >= 0) f32_gemv_on = on != 0;
  return f32_gemv_on;
}
/* For tests and benchmarks: 0 sends the exact q5_0 / q5_1 / q5_k GEMVs back to the f32 kernels
 * they replace (exg_*, the per-chunk q5_k kernel), 1 to the integer-digit ones (default);
 * < 0: unchanged. Returns the setting now in use. */
int relax_quant_set_exact_int(int on) {
  if (on >= 0) exact_int_on = on != 0;
  return exact_int_on;
}
/* How many products relax_quant_f32_gemv has run (for tests: the route taken). */
int64_t relax_quant_f32_gemv_calls(void) { return f32_gemv_calls; }

/* -- entry points --------------------------------------------------------------------- */

/* A 2-D view with unit inner stride: the view itself, or a packed copy (*tmp, to free). */
static const char *unit_inner(qview v, size_t esize, int64_t *ld, void **tmp) {
  *tmp = NULL;
  if (v.strides[1] == 1 || v.sizes[1] <= 1) {
    *ld = v.strides[0];
    return v.data;
  }
  char *p = malloc((size_t)(v.sizes[0] * v.sizes[1]) * esize + 1);
  if (!p) return NULL;
  for (int64_t i = 0; i < v.sizes[0]; ++i)
    for (int64_t j = 0; j < v.sizes[1]; ++j)
      memcpy(p + (size_t)(i * v.sizes[1] + j) * esize, v.data + (size_t)((i * v.strides[0] + j * v.strides[1]) * (int64_t)esize), esize);
  *ld = v.sizes[1];
  *tmp = p;
  return p;
}

/* Scratch for x prepared per call, 64-byte aligned. One buffer per library is kept between
 * calls in a global slot, taken and given back with atomic exchanges (a decode step makes ~200
 * calls, and a malloc / free pair per call showed in profiles); a concurrent caller that finds
 * the slot empty allocates its own, and the slot keeps the buffer given back last. Not
 * thread-local: this file is linked into every compiled model's library, and initial-exec TLS
 * marks a library STATIC_TLS, whose dlopen takes glibc's small static TLS surplus, which ran out
 * after ~100 models loaded in one process ("cannot allocate memory in static TLS block": the
 * llm-config fuzz worker's abort at seed 1000100); dynamic TLS would need ld.so by name for
 * __tls_get_addr (an exported model needs libc, libm and the BLAS only: test_aot). */
#define SCRATCH_HEAD 64   /* the buffer's usable size, kept in front of it */
static char *scratch_slot;
static void *scratch_take(size_t bytes) {
  char *b = __atomic_exchange_n(&scratch_slot, NULL, __ATOMIC_ACQUIRE);
  if (b && *(size_t *)b < bytes) {
    free(b);
    b = NULL;
  }
  if (!b) {
    size_t sz = (bytes + SCRATCH_HEAD + 4095) / 4096 * 4096;
    b = aligned_alloc(64, sz);
    if (!b) return NULL;
    *(size_t *)b = sz - SCRATCH_HEAD;
  }
  return b + SCRATCH_HEAD;
}
static void scratch_give(void *p) {
  if (!p) return;
  free(__atomic_exchange_n(&scratch_slot, (char *)p - SCRATCH_HEAD, __ATOMIC_RELEASE));
}

static void qmatmul(int fmt, int q8, void *xd, void *wd, void *od, const void *cell) {
  qview x = qread(xd, 2, 4), w = qread(wd, 2, 1), o = qread(od, 2, 4);
  int64_t M = x.sizes[0], K = x.sizes[1], N = w.sizes[0], bs = BLOCK_SIZE[fmt];
  if (M < 0 || K < 0 || N < 0 || o.sizes[0] != M || o.sizes[1] != N || K % bs != 0 ||
      w.sizes[1] != K / bs * BLOCK_BYTES[fmt])
    return;
  if (M == 0 || N == 0) return;
  qctx t = {.M = M, .N = N, .K = K, .nc = K / 32, .threads = call_threads(cell)};
  void *xt = NULL, *wt = NULL, *ot = NULL, *qbuf = NULL;
  t.x = (const float *)unit_inner(x, 4, &t.ldx, &xt);
  t.w = (const uint8_t *)unit_inner(w, 1, &t.ldw, &wt);
  int direct = o.strides[1] == 1 || N == 1;
  if (direct) {
    t.o = (float *)o.data;
    t.ldo = o.strides[0];
  } else {
    t.o = ot = malloc((size_t)(M * N) * 4);
    t.ldo = N;
  }
  if (!t.x || !t.w || !t.o) goto done;
  t.fmt = fmt;
#ifdef QK_X86
  if (isa == ISA_AVX512 && group_family(fmt) != GF_NONE) {   /* the group kernels */
    t.ng = (t.nc + 3) / 4;
    t.ngf = t.nc / 4;
    qbuf = scratch_take((size_t)(M * t.ng) * (128 * 4 + 16 * 4 * 2) + 64);
    if (!qbuf) goto done;
    if (q8) {
      float *dxg = (float *)qbuf, *sxg = dxg + M * t.ng * 16;
      int8_t *qg = (int8_t *)(sxg + M * t.ng * 16);
      t.qg = qg;
      t.dxg = dxg;
      t.sxg = sxg;
      prep_q8_groups(&t, qg, dxg, sxg);
      run(&t, GROUP_KERNELS[fmt].q8, 4);
    } else if (M == 1 && is_q5(fmt) && exact_int_on &&
               prep_x_digits(&t, (int8_t *)qbuf, (float *)((char *)qbuf + M * t.ng * 384),
                             (float *)((char *)qbuf + M * t.ng * (384 + 64)))) {   /* exact q5 GEMV */
      t.xd = (const int8_t *)qbuf;
      t.dxd = (const float *)((char *)qbuf + M * t.ng * 384);
      t.sxe = (const float *)((char *)qbuf + M * t.ng * (384 + 64));
      run(&t, fmt == F_Q5_0 ? exd_q5_0 : exd_q5_1, 4);
    } else {
      float *xg = (float *)qbuf, *sxe = xg + M * t.ng * 128;
      t.xg = xg;
      t.sxe = sxe;
      t.ldxg = t.ng * 128;
      t.panel = M >= 2;
      prep_exact_groups(&t, xg, sxe, !t.panel);
      t.px = xg;
      t.ldpx = t.pxk = t.ldxg;
      t.pdec = GROUP_KERNELS[fmt].dec;
      run(&t, GROUP_KERNELS[fmt].exact, 4);
    }
  } else if (isa == ISA_AVX512 && !q8 && M < 4 && fmt == F_Q5_K && exact_int_on &&
             (qbuf = scratch_take((size_t)(M * (K / 256)) * 768 + (size_t)(2 * M * t.nc) * 4 + 64)) &&
             prep_x_digits_k(&t, (int8_t *)qbuf + (size_t)(2 * M * t.nc) * 4, (float *)qbuf,
                             (float *)qbuf + M * t.nc)) {   /* exact q5_k GEMV */
    t.dxd = (const float *)qbuf;
    t.sxe = (const float *)qbuf + M * t.nc;
    t.xd = (const int8_t *)qbuf + (size_t)(2 * M * t.nc) * 4;
    run(&t, q5ke, 4);
  } else if (isa == ISA_AVX512 && !q8 && M < 4 && (fmt == F_Q4_K || fmt == F_Q6_K)) {   /* exact K-quant GEMV */
    t.ldxg = K;
    qbuf = scratch_take((size_t)(M * K) * 4 + (size_t)(M * (K / 16)) * 4 + 64);
    if (!qbuf) goto done;
    t.xg = (const float *)qbuf;
    t.sxe = (const float *)qbuf + M * K;
    prep_k_exact(&t, (float *)qbuf, (float *)qbuf + M * K);
    run(&t, fmt == F_Q4_K ? q4ke : q6ke, 4);
  } else if (isa == ISA_AVX512 && !q8 && M >= 4 && fmt != F_F16 && fmt != F_BF16) {   /* panels */
    t.panel = 1;
    t.px = t.x;
    t.ldpx = t.ldx;
    t.pxk = 32 * t.nc;
    t.pdec = PDECS[fmt];
    run(&t, KERNELS[fmt].exact[isa], tile_rows[isa]);
  } else
#endif
  if (q8 && fmt != F_F16 && fmt != F_BF16) {
    t.ldq = 32 * t.nc;
    qbuf = scratch_take((size_t)(M * t.ldq) + (size_t)(2 * M * t.nc) * 4 + 64);
    if (!qbuf) goto done;
    float *dx = (float *)qbuf, *sx = dx + M * t.nc;
    int8_t *qx = (int8_t *)(sx + M * t.nc);
    t.qx = qx;
    t.dx = dx;
    t.sx = sx;
#ifdef QK_X86
    if (isa == ISA_AVX512) quantize_rows_512(&t, qx, dx, sx); else
#endif
    quantize_rows_scalar(&t, qx, dx, sx);
#ifdef QK_X86
    if (isa == ISA_AVX512 && fmt == F_Q6_K && M < 4) run(&t, q6kg, 4); else
    if (isa == ISA_AVX512 && fmt == F_Q4_K && M < 4) run(&t, q4kg, 4); else
    if (isa == ISA_AVX512 && fmt == F_Q5_K && M < 4) run(&t, q5kg, 4); else
#endif
    run(&t, KERNELS[fmt].q8[isa], tile_rows[isa]);
  } else {
    run(&t, KERNELS[fmt].exact[isa], tile_rows[isa]);
  }
  if (!direct)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) ((float *)o.data)[i * o.strides[0] + j * o.strides[1]] = t.o[i * N + j];
done:
  scratch_give(qbuf);
  free(xt);
  free(wt);
  free(ot);
}

static void qtake(int fmt, void *td, void *idd, void *od) {
  qview tb = qread(td, 2, 1), ids = qread(idd, 1, 8), o = qread(od, 2, 4);
  int64_t V = tb.sizes[0], S = ids.sizes[0], K = o.sizes[1], bs = BLOCK_SIZE[fmt];
  if (S < 0 || K < 0 || o.sizes[0] != S || K % bs != 0 || tb.sizes[1] != K / bs * BLOCK_BYTES[fmt]) return;
  if (S == 0 || K == 0) return;
  if (V <= 0) return;   /* nothing to take from */
  int64_t nc = K / 32;
  float *buf = o.strides[1] == 1 ? NULL : malloc((size_t)K * 4);
  if (o.strides[1] != 1 && !buf) return;
  for (int64_t i = 0; i < S; ++i) {
    int64_t id = ((const int64_t *)ids.data)[i * ids.strides[0]];
    id = id < 0 ? 0 : id >= V ? V - 1 : id;
    const uint8_t *row = (const uint8_t *)tb.data + id * tb.strides[0];
    uint8_t *rowc = NULL;
    if (tb.strides[1] != 1 && tb.sizes[1] > 1) {   /* a strided row: copied */
      rowc = malloc((size_t)tb.sizes[1]);
      if (!rowc) break;
      for (int64_t j = 0; j < tb.sizes[1]; ++j) rowc[j] = (uint8_t)tb.data[id * tb.strides[0] + j * tb.strides[1]];
      row = rowc;
    }
    float *dst = buf ? buf : (float *)o.data + i * o.strides[0];
    KERNELS[fmt].take[isa](row, nc, dst);
    for (int64_t k = 32 * nc; k < K; ++k) dst[k] = fmt == F_F16 ? h2f(row + 2 * k) : bf2f(row + 2 * k);
    if (buf)
      for (int64_t k = 0; k < K; ++k) ((float *)o.data)[i * o.strides[0] + k * o.strides[1]] = buf[k];
    free(rowc);
  }
  free(buf);
}

#define ENTRY(F, ID)                                                                          \
  void _mlir_ciface_relax_qmatmul_##F(void *x, void *w, void *o, const void *n) { qmatmul(ID, 0, x, w, o, n); } \
  void _mlir_ciface_relax_qmatmul_##F##_q8(void *x, void *w, void *o, const void *n) { qmatmul(ID, 1, x, w, o, n); } \
  void _mlir_ciface_relax_qtake_##F(void *t, void *ids, void *o) { qtake(ID, t, ids, o); }
#define ENTRY_Q(F, ID, MIN) ENTRY(F, ID)
QUANT_FORMATS(ENTRY_Q)
ENTRY(f16, F_F16)
ENTRY(bf16, F_BF16)
