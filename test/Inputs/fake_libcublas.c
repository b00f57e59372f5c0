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
 * cuBLASLt (the epilogues of the shim): cublasLtCreate, the matmul descriptor (compute and scale
 * type, TRANSA / TRANSB, EPILOGUE DEFAULT / RELU / BIAS / RELU_BIAS, BIAS_POINTER), matrix
 * layouts (type, rows, cols, ld; column-major), a preference (MAX_WORKSPACE_BYTES), the
 * heuristic (one algorithm when the layouts agree with the operation, else none) and
 * cublasLtMatmul: D = epilogue(alpha op(A) op(B) + beta C), the bias one value per row of D in
 * D's type, enqueued like the products above.
 *
 * FAKE_CUBLAS_SKIP=1: products are accepted and counted but not computed (benchmark rehearsals,
 * where the naive loops here would dominate).
 *
 * Counters (ctypes): fake_cublas_handles, fake_cublas_calls (products accepted),
 * fake_cublas_runs (products computed), fake_cublas_workspace (the last workspace's bytes),
 * fake_cublas_dims (m, n, k, batch, transa, transb of the last call); fake_cublaslt_calls,
 * fake_cublaslt_epilogue (the last call's epilogue), fake_cublaslt_beta (its beta, x1000).
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

/* -- cuBLASLt ---------------------------------------------------------------------------- */

long fake_cublaslt_calls = 0, fake_cublaslt_epilogue = 0, fake_cublaslt_beta = 0;
typedef struct { int compute, scale, transa, transb; uint32_t epilogue; uint64_t bias; } lt_desc_t;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } lt_layout_t;
typedef struct { uint64_t workspace; } lt_pref_t;
typedef struct { uint64_t data[8]; size_t workspace; int state; float waves; int reserved[4]; } lt_result_t;
static int lt_handle_storage;

int cublasLtCreate(void **h) { *h = &lt_handle_storage; return 0; }
int cublasLtDestroy(void *h) { (void)h; return 0; }
int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
    if (compute != 68 && compute != 77) return 15;
    if (scale != 0) return 15;
    lt_desc_t *x = calloc(1, sizeof *x);
    x->compute = compute, x->scale = scale, x->epilogue = 1;
    *d = x;
    return 0;
}
int cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t size) {
    lt_desc_t *x = d;
    if ((attr == 3 || attr == 4 || attr == 7) && size == 4) {
        int32_t v;
        memcpy(&v, buf, 4);
        if (attr == 3) x->transa = v; else if (attr == 4) x->transb = v; else x->epilogue = (uint32_t)v;
        return 0;
    }
    if (attr == 8 && size == sizeof(void *)) { void *p; memcpy(&p, buf, sizeof p); x->bias = (uint64_t)(uintptr_t)p; return 0; }
    return 7;
}
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
    if (type != 0 && type != R16F && type != R16BF) return 15;
    if (ld < (int64_t)(rows > 1 ? rows : 1)) return 7;
    lt_layout_t *x = malloc(sizeof *x);
    x->type = type, x->rows = rows, x->cols = cols, x->ld = ld;
    *l = x;
    return 0;
}
int cublasLtMatrixLayoutDestroy(void *l) { free(l); return 0; }
int cublasLtMatmulPreferenceCreate(void **p) { *p = calloc(1, sizeof(lt_pref_t)); return 0; }
int cublasLtMatmulPreferenceDestroy(void *p) { free(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t size) {
    if (attr != 1 || size != 8) return 7;
    memcpy(&((lt_pref_t *)p)->workspace, buf, 8);
    return 0;
}

/* whether the layouts agree with D = op(A) op(B) + C and the types are ones cuBLASLt takes */
static int lt_fits(const lt_desc_t *o, const lt_layout_t *a, const lt_layout_t *b, const lt_layout_t *c,
                   const lt_layout_t *d) {
    uint64_t m = d->rows, n = d->cols, k = o->transa ? a->rows : a->cols;
    if ((o->transa ? a->cols : a->rows) != m || (o->transb ? b->cols : b->rows) != k || (o->transb ? b->rows : b->cols) != n)
        return 0;
    if (c->rows != m || c->cols != n || c->type != d->type || a->type != b->type) return 0;
    if (d->type != 0 && d->type != a->type) return 0;
    if (o->compute == 77 && a->type != 0) return 0;
    return o->epilogue == 1 || o->epilogue == 2 || o->epilogue == 4 || o->epilogue == 6;
}

int cublasLtMatmulAlgoGetHeuristic(void *h, void *op, void *a, void *b, void *c, void *d, void *pref, int wanted,
                                   lt_result_t *out, int *count) {
    (void)h, (void)pref;
    if (wanted < 1) return 7;
    *count = 0;
    if (!lt_fits(op, a, b, c, d)) return 0;
    memset(out, 0, sizeof *out);
    out->data[0] = 42;
    out->waves = 1.0f;
    *count = 1;
    return 0;
}

enum { LTA, LTB, LM, LN, LK, LALPHA, LBETA, LPA, LATYPE, LLDA, LPB, LLDB, LPC, LLDC, LPD, LDTYPE, LLDD, LEPI, LBIAS,
       LT_NARGS };

static void run_lt(const int64_t *x) {
    const char *skip = getenv("FAKE_CUBLAS_SKIP");
    if (skip && *skip == '1') { fake_cublas_runs++; return; }
    float alpha, beta;
    uint32_t ab = (uint32_t)x[LALPHA], bb = (uint32_t)x[LBETA];
    memcpy(&alpha, &ab, 4);
    memcpy(&beta, &bb, 4);
    int at = (int)x[LATYPE], dt = (int)x[LDTYPE];
    const char *a = fake_device_bytes((uint64_t)x[LPA], 1), *b = fake_device_bytes((uint64_t)x[LPB], 1);
    const char *c = x[LPC] ? fake_device_bytes((uint64_t)x[LPC], 1) : 0;
    const char *bias = x[LBIAS] ? fake_device_bytes((uint64_t)x[LBIAS], 1) : 0;
    char *d = fake_device_bytes((uint64_t)x[LPD], 1);
    for (int64_t j = 0; j < x[LN]; j++)
        for (int64_t i = 0; i < x[LM]; i++) {
            float acc = 0.0f;
            for (int64_t l = 0; l < x[LK]; l++)
                acc += load(a, at, x[LTA] ? l + i * x[LLDA] : i + l * x[LLDA])
                       * load(b, at, x[LTB] ? j + l * x[LLDB] : l + j * x[LLDB]);
            float v = alpha * acc + (beta != 0.0f ? beta * load(c, dt, i + j * x[LLDC]) : 0.0f);
            if (x[LEPI] & 4) v += load(bias, dt, i);
            if ((x[LEPI] & 2) && !(v > 0.0f)) v = 0.0f;
            store(d, dt, i + j * x[LLDD], v);
        }
    fake_cublas_runs++;
}

int cublasLtMatmul(void *h, void *op, const void *alpha, const void *A_, void *la, const void *B_, void *lb,
                   const void *beta, const void *C_, void *lc, void *D_, void *ld, const void *algo, void *ws,
                   size_t ws_size, void *stream) {
    (void)h;
    lt_desc_t *o = op;
    lt_layout_t *a = la, *b = lb, *c = lc, *d = ld;
    if (!algo || ((const lt_result_t *)algo)->data[0] != 42) return 7;
    if (!lt_fits(o, a, b, c, d)) return 15;
    if (ws_size && !fake_device_bytes((uint64_t)(uintptr_t)ws, ws_size)) return 7;
    float bv;
    memcpy(&bv, beta, 4);
    if (!in_device((int64_t)(uintptr_t)A_, a->rows, a->cols, a->ld, 0, 1, elem(a->type))
        || !in_device((int64_t)(uintptr_t)B_, b->rows, b->cols, b->ld, 0, 1, elem(b->type))
        || !in_device((int64_t)(uintptr_t)D_, d->rows, d->cols, d->ld, 0, 1, elem(d->type))
        || (bv != 0.0f && !in_device((int64_t)(uintptr_t)C_, c->rows, c->cols, c->ld, 0, 1, elem(c->type)))
        || ((o->epilogue & 4) && !in_device((int64_t)o->bias, d->rows, 1, d->rows, 0, 1, elem(d->type))))
        return 7;
    int64_t args[24] = {0};
    uint32_t bits;
    args[LTA] = o->transa, args[LTB] = o->transb, args[LM] = (int64_t)d->rows, args[LN] = (int64_t)d->cols;
    args[LK] = (int64_t)(o->transa ? a->rows : a->cols);
    memcpy(&bits, alpha, 4); args[LALPHA] = bits;
    memcpy(&bits, beta, 4); args[LBETA] = bits;
    args[LPA] = (int64_t)(uintptr_t)A_, args[LATYPE] = a->type, args[LLDA] = a->ld;
    args[LPB] = (int64_t)(uintptr_t)B_, args[LLDB] = b->ld;
    args[LPC] = (int64_t)(uintptr_t)C_, args[LLDC] = c->ld;
    args[LPD] = (int64_t)(uintptr_t)D_, args[LDTYPE] = d->type, args[LLDD] = d->ld;
    args[LEPI] = o->epilogue, args[LBIAS] = (o->epilogue & 4) ? (int64_t)o->bias : 0;
    long dims[6] = {(long)args[LM], (long)args[LN], (long)args[LK], 1, o->transa, o->transb};
    memcpy(fake_cublas_dims, dims, sizeof dims);
    fake_cublaslt_calls++;
    fake_cublas_calls++;
    fake_cublaslt_epilogue = o->epilogue;
    fake_cublaslt_beta = (long)(bv * 1000.0f);
    fake_enqueue(stream, run_lt, args);
    return 0;
}
