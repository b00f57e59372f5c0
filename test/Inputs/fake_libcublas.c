/* A stand-in for cuBLAS (libcublas.so.12) over the fake CUDA driver (fake_libcuda.c, built as
 * libcuda.so.1 and linked here): the entry points the cuda target's shim
 * (relax_mlir/runtime/cuda/cublas_shim.c) uses, computing real results on the fake driver's
 * shadow of device memory, so that test/test_cuda_library.py checks numerics without a GPU.
 *
 * cublasGemmEx / cublasGemmStridedBatchedEx: column-major C = op(A) op(B) (alpha, beta),
 * f32 (CUDA_R_32F), f16 (CUDA_R_16F) or bf16 (CUDA_R_16BF: stored rounding to nearest even, as
 * ml_dtypes) storage, f32 accumulation (f32 inputs also under 32F_FAST_TF32, exact here); the product is enqueued on
 * the handle's stream (fake_enqueue: run now, or recorded as a node of the stream's capture
 * and run each time its graph is launched). As a real cuBLAS, a stream under capture needs a
 * user workspace (cublasSetWorkspace after cublasSetStream, which resets it): otherwise
 * CUBLAS_STATUS_NOT_SUPPORTED (15). A pointer outside device memory: CUBLAS_STATUS_INVALID_VALUE.
 *
 * FAKE_CUBLAS_SKIP=1: products are accepted and counted but not computed (benchmark rehearsals,
 * where the naive loops here would dominate).
 *
 * Counters (ctypes): fake_cublas_handles, fake_cublas_calls (products accepted),
 * fake_cublas_runs (products computed), fake_cublas_workspace (the last workspace's bytes),
 * fake_cublas_dims (m, n, k, batch, transa, transb of the last call).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

long fake_cublas_handles = 0, fake_cublas_calls = 0, fake_cublas_runs = 0, fake_cublas_workspace = 0;
long fake_cublas_dims[6];

void *fake_device_bytes(uint64_t p, size_t n);
int fake_enqueue(void *s, void (*fn)(const int64_t *), const int64_t *args);
int fake_capturing(void *s);

typedef struct { void *stream; int workspace; } handle_t;
static handle_t handles[16];

int cublasCreate_v2(void **h) {
    if (fake_cublas_handles >= 16) return 3;
    handle_t *x = &handles[fake_cublas_handles++];
    memset(x, 0, sizeof *x);
    *h = x;
    return 0;
}
int cublasDestroy_v2(void *h) { (void)h; return 0; }
int cublasSetStream_v2(void *h, void *s) {
    handle_t *x = h;
    x->stream = s;
    x->workspace = 0;        /* as cuBLAS: back to its own workspace pool */
    return 0;
}
int cublasSetWorkspace_v2(void *h, void *w, size_t n) {
    handle_t *x = h;
    if (n && !fake_device_bytes((uint64_t)(uintptr_t)w, n)) return 7;
    x->workspace = n > 0;
    fake_cublas_workspace = (long)n;
    return 0;
}

static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, f;
    if (e == 0) {
        if (!m) f = s;
        else {                                  /* subnormal */
            e = 113;
            while (!(m & 1024)) { m <<= 1; e--; }
            f = s | (e << 23) | ((m & 1023) << 13);
        }
    } else if (e == 31) f = s | 0x7f800000u | (m << 13);
    else f = s | ((e + 112) << 23) | (m << 13);
    float out;
    memcpy(&out, &f, 4);
    return out;
}
static uint16_t float_to_half(float v) {     /* round to nearest even */
    uint32_t f;
    memcpy(&f, &v, 4);
    uint32_t s = (f >> 16) & 0x8000, e = (f >> 23) & 255, m = f & 0x7fffff;
    if (e == 255) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
    int ex = (int)e - 112;
    if (ex >= 31) return (uint16_t)(s | 0x7c00);
    if (ex <= 0) {
        if (ex < -10) return (uint16_t)s;
        m |= 0x800000;
        int shift = 14 - ex;
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(s | r);
    }
    uint32_t r = ((uint32_t)ex << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(s | r);
}
static float bf16_to_float(uint16_t h) {
    uint32_t f = (uint32_t)h << 16;
    float out;
    memcpy(&out, &f, 4);
    return out;
}
static uint16_t float_to_bf16(float v) {     /* round to nearest even; NaN stays a quiet NaN */
    uint32_t f;
    memcpy(&f, &v, 4);
    if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40);
    return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1)) >> 16);
}
#define R16F 2
#define R16BF 14
static int elem(int type) { return type == R16F || type == R16BF ? 2 : 4; }
static float load(const char *p, int type, int64_t i) {
    if (type == R16F) { uint16_t h; memcpy(&h, p + 2 * i, 2); return half_to_float(h); }
    if (type == R16BF) { uint16_t h; memcpy(&h, p + 2 * i, 2); return bf16_to_float(h); }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}
static void store(char *p, int type, int64_t i, float v) {
    if (type == R16F) { uint16_t h = float_to_half(v); memcpy(p + 2 * i, &h, 2); }
    else if (type == R16BF) { uint16_t h = float_to_bf16(v); memcpy(p + 2 * i, &h, 2); }
    else memcpy(p + 4 * i, &v, 4);
}

enum { TA, TB, M, N, K, ALPHA, A, ATYPE, LDA, SA, B, BTYPE, LDB, SB, BETA, C, CTYPE, LDC, SC, BATCH, NARGS };

static void run(const int64_t *x) {
    const char *skip = getenv("FAKE_CUBLAS_SKIP");
    if (skip && *skip == '1') { fake_cublas_runs++; return; }
    float alpha, beta;
    uint32_t ab = (uint32_t)x[ALPHA], bb = (uint32_t)x[BETA];
    memcpy(&alpha, &ab, 4);
    memcpy(&beta, &bb, 4);
    int64_t m = x[M], n = x[N], k = x[K];
    int ea = elem((int)x[ATYPE]), eb = elem((int)x[BTYPE]), ec = elem((int)x[CTYPE]);
    for (int64_t t = 0; t < x[BATCH]; t++) {
        const char *a = fake_device_bytes((uint64_t)(x[A] + t * x[SA] * ea), 1);
        const char *b = fake_device_bytes((uint64_t)(x[B] + t * x[SB] * eb), 1);
        char *c = fake_device_bytes((uint64_t)(x[C] + t * x[SC] * ec), 1);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                float acc = 0.0f;
                for (int64_t l = 0; l < k; l++) {
                    float av = load(a, (int)x[ATYPE], x[TA] ? l + i * x[LDA] : i + l * x[LDA]);
                    float bv = load(b, (int)x[BTYPE], x[TB] ? j + l * x[LDB] : l + j * x[LDB]);
                    acc += av * bv;
                }
                float old = beta != 0.0f ? load(c, (int)x[CTYPE], i + j * x[LDC]) : 0.0f;
                store(c, (int)x[CTYPE], i + j * x[LDC], alpha * acc + beta * old);
            }
    }
    fake_cublas_runs++;
}

static int in_device(int64_t p, int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch, int e) {
    if (rows == 0 || cols == 0 || batch == 0) return 1;
    int64_t last = (batch - 1) * stride + (cols - 1) * ld + rows;   /* elements, column-major */
    return fake_device_bytes((uint64_t)p, (size_t)(last * e)) != 0;
}

int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A_,
                               int at, int lda, long long sa, const void *B_, int bt, int ldb, long long sb,
                               const void *beta, void *C_, int ct, int ldc, long long sc, int batch, int compute,
                               int algo) {
    handle_t *x = h;
    (void)algo;
    if (compute != 68 && compute != 77) return 15;
    if ((at != 0 && at != R16F && at != R16BF) || bt != at) return 15;
    if (ct != 0 && ct != at) return 15;                 /* C in f32 or in the inputs' type */
    if (compute == 77 && at != 0) return 15;            /* fast TF32: f32 inputs only */
    if (m < 0 || n < 0 || k < 0 || batch < 0 || ldc < (m > 1 ? m : 1)) return 7;
    if (lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) || ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1))) return 7;
    if (fake_capturing(x->stream) && !x->workspace) return 15;
    int e = elem(at);
    if (!in_device((int64_t)(uintptr_t)A_, ta ? k : m, ta ? m : k, lda, sa, batch, e)
        || !in_device((int64_t)(uintptr_t)B_, tb ? n : k, tb ? k : n, ldb, sb, batch, e)
        || !in_device((int64_t)(uintptr_t)C_, m, n, ldc, sc, batch, elem(ct)))
        return 7;
    int64_t args[24] = {0};
    uint32_t bits;
    args[TA] = ta, args[TB] = tb, args[M] = m, args[N] = n, args[K] = k;
    memcpy(&bits, alpha, 4); args[ALPHA] = bits;
    memcpy(&bits, beta, 4); args[BETA] = bits;
    args[A] = (int64_t)(uintptr_t)A_, args[ATYPE] = at, args[LDA] = lda, args[SA] = sa;
    args[B] = (int64_t)(uintptr_t)B_, args[BTYPE] = bt, args[LDB] = ldb, args[SB] = sb;
    args[C] = (int64_t)(uintptr_t)C_, args[CTYPE] = ct, args[LDC] = ldc, args[SC] = sc, args[BATCH] = batch;
    long dims[6] = {m, n, k, batch, ta, tb};
    memcpy(fake_cublas_dims, dims, sizeof dims);
    fake_cublas_calls++;
    fake_enqueue(x->stream, run, args);
    return 0;
}

int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A_, int at, int lda,
                 const void *B_, int bt, int ldb, const void *beta, void *C_, int ct, int ldc, int compute, int algo) {
    return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A_, at, lda, 0, B_, bt, ldb, 0, beta, C_, ct, ldc, 0, 1,
                                      compute, algo);
}
