/* The cuda target's cuBLAS entry point (relax_mlir/runtime/cuda/cublas.py builds it).
 *
 * relax_cublas_load(path) dlopens a libcublas.so (the PyPI wheel's, the system's, or the
 * tests' fake) and creates one handle; relax_cublas_matmul(rt, code, a, b, c) is what the
 * compiled host code calls for each relax_cublas_matmul_* (the host module defines those
 * _mlir_ciface_ functions to pass its launch state block `rt` and the callee's `code`):
 * the call's stream and the session's workspace come from `rt`, cuBLAS is pointed at them
 * (cublasSetStream resets the workspace to cuBLAS's own pool, which allocates: not allowed
 * while the stream is captured into the call's CUDA graph, hence cublasSetWorkspace after
 * it), then one cublasGemmEx (2-D, or 3-D x 2-D with A's rows contiguous across the batch)
 * or cublasGemmStridedBatchedEx. Row-major C = A B is column-major C^T = B^T A^T: cuBLAS
 * gets B as its first operand. A failure is recorded in `rt` as the launch path records
 * one (kind RELAX_KIND_LIBRARY, the cuBLAS status) and later calls do nothing.
 *
 * With an epilogue (code / 100000: 1 add, 2 bias, 3 relu, 4 bias + relu; cuda_launch's
 * LIBRARY_EPILOGUES) the product goes through cuBLASLt instead: cublasLtMatmul with
 * CUBLASLT_EPILOGUE_BIAS / RELU / RELU_BIAS (the bias `e`, one value per column of our C), or
 * beta = 1 with C = `e` (a residual of D's shape) and D our C; the descriptors and the
 * heuristic's algorithm are made per call (host work only), the session's workspace is the
 * matmul's. 2-D only.
 *
 * code = epilogue * 100000 + form * 10000 + rank_a * 1000 + rank_b * 100 + in * 10 + out, dtypes 0 = f32, 1 = f16,
 * 2 = bf16 (cuda_launch.LIBRARY_DTYPE_CODES); half inputs compute in f32 (CUBLAS_COMPUTE_32F).
 * form (cuda_launch.LIBRARY_RANKS): 0 B is (K, N); 1 B is given transposed, (N, K) (C = A B^T,
 * relax.quantized_matmul's weight dequantized into a scratch buffer); 2 B is (N, K) as raw
 * bytes, an i8 (N, 2K) descriptor of a stored f16 / bf16 weight read in the input type. 2-D only.
 * Slot indices of `rt` come as -D flags from relax_mlir/runtime/cuda_launch.py's SLOTS.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*create_t)(void **);
typedef int (*set_stream_t)(void *, void *);
typedef int (*set_workspace_t)(void *, void *, size_t);
typedef int (*gemm_ex_t)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                         int, const void *, void *, int, int, int, int);
typedef int (*gemm_sb_t)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                         const void *, int, int, long long, const void *, void *, int, int, long long, int, int, int);

/* cuBLASLt (the epilogues) */
typedef int (*lt_create_t)(void **);
typedef int (*lt_desc_create_t)(void **, int, int);
typedef int (*lt_set_t)(void *, int, const void *, size_t);
typedef int (*lt_layout_create_t)(void **, int, uint64_t, uint64_t, int64_t);
typedef int (*lt_destroy_t)(void *);
typedef int (*lt_pref_create_t)(void **);
typedef struct { uint64_t data[8]; size_t workspace; int state; float waves; int reserved[4]; } lt_heuristic_t;
typedef int (*lt_heuristic_fn)(void *, void *, void *, void *, void *, void *, void *, int, lt_heuristic_t *, int *);
typedef int (*lt_matmul_t)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                           const void *, void *, void *, void *, const void *, void *, size_t, void *);
static void *lt_handle;
static lt_desc_create_t lt_desc_create;
static lt_set_t lt_desc_set, lt_pref_set;
static lt_layout_create_t lt_layout_create;
static lt_destroy_t lt_desc_destroy, lt_layout_destroy, lt_pref_destroy;
static lt_pref_create_t lt_pref_create;
static lt_heuristic_fn lt_heuristic;
static lt_matmul_t lt_matmul;

static void *handle;
static set_stream_t set_stream;
static set_workspace_t set_workspace;
static gemm_ex_t gemm_ex;
static gemm_sb_t gemm_sb;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int compute_type = 68;   /* CUBLAS_COMPUTE_32F; 77: CUBLAS_COMPUTE_32F_FAST_TF32 */

#define CUDA_R_32F 0
#define CUDA_R_16F 2
#define CUDA_R_16BF 14
#define OP_N 0
#define OP_T 1
#define GEMM_DEFAULT (-1)
#define NOT_LOADED 1          /* CUBLAS_STATUS_NOT_INITIALIZED */
#define BAD_LAYOUT 7          /* CUBLAS_STATUS_INVALID_VALUE */
#define TOO_LARGE 7
/* k == 0 is cuBLAS's C = beta C: zeros, as numpy */

/* cuBLASLt from `lt_path`, else its usual names, else `lib` itself (the tests' fake has both);
 * without it the epilogue calls fail (CUBLAS_STATUS_NOT_INITIALIZED), the others work */
static void load_lt(void *lib, const char *lt_path) {
    void *lt = lt_path && *lt_path ? dlopen(lt_path, RTLD_NOW | RTLD_LOCAL) : 0;
    if (!lt) lt = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!lt || !dlsym(lt, "cublasLtMatmul")) lt = lib;
    lt_create_t create = (lt_create_t)dlsym(lt, "cublasLtCreate");
    lt_desc_create = (lt_desc_create_t)dlsym(lt, "cublasLtMatmulDescCreate");
    lt_desc_set = (lt_set_t)dlsym(lt, "cublasLtMatmulDescSetAttribute");
    lt_desc_destroy = (lt_destroy_t)dlsym(lt, "cublasLtMatmulDescDestroy");
    lt_layout_create = (lt_layout_create_t)dlsym(lt, "cublasLtMatrixLayoutCreate");
    lt_layout_destroy = (lt_destroy_t)dlsym(lt, "cublasLtMatrixLayoutDestroy");
    lt_pref_create = (lt_pref_create_t)dlsym(lt, "cublasLtMatmulPreferenceCreate");
    lt_pref_set = (lt_set_t)dlsym(lt, "cublasLtMatmulPreferenceSetAttribute");
    lt_pref_destroy = (lt_destroy_t)dlsym(lt, "cublasLtMatmulPreferenceDestroy");
    lt_heuristic = (lt_heuristic_fn)dlsym(lt, "cublasLtMatmulAlgoGetHeuristic");
    lt_matmul = (lt_matmul_t)dlsym(lt, "cublasLtMatmul");
    void *h = 0;
    if (create && lt_desc_create && lt_desc_set && lt_desc_destroy && lt_layout_create && lt_layout_destroy
        && lt_pref_create && lt_pref_set && lt_pref_destroy && lt_heuristic && lt_matmul && create(&h) == 0)
        lt_handle = h;
}

/* 0, or a negative step that failed: -1 dlopen, -2 a missing entry point, -3 cublasCreate */
int relax_cublas_load(const char *path, int tf32, const char *lt_path) {
    if (handle) return 0;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return -1;
    create_t create = (create_t)dlsym(lib, "cublasCreate_v2");
    set_stream = (set_stream_t)dlsym(lib, "cublasSetStream_v2");
    set_workspace = (set_workspace_t)dlsym(lib, "cublasSetWorkspace_v2");
    gemm_ex = (gemm_ex_t)dlsym(lib, "cublasGemmEx");
    gemm_sb = (gemm_sb_t)dlsym(lib, "cublasGemmStridedBatchedEx");
    if (!create || !set_stream || !set_workspace || !gemm_ex || !gemm_sb) return -2;
    void *h = 0;
    int r = create(&h);
    if (r != 0) return -1000 - r;
    if (tf32) compute_type = 77;
    load_lt(lib, lt_path);
    handle = h;
    return 0;
}

int relax_cublas_has_lt(void) { return lt_handle != 0; }

const char *relax_cublas_error(void) { return dlerror(); }

static void fail(int64_t *rt, int64_t status) {
    if (rt[SLOT_ERROR]) return;
    rt[SLOT_ERROR] = RELAX_KIND_LIBRARY;
    rt[SLOT_CODE] = status;
}

static int fits(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

/* One matrix of a descriptor (rank r, batch index dims before the last two): its leading
 * dimension and whether cuBLAS must read it transposed; 0 when neither axis is unit-stride. */
static int layout(const int64_t *d, int r, int64_t *ld, int *trans) {
    const int64_t *sizes = d + 3, *strides = d + 3 + r;
    int64_t rows = sizes[r - 2], cols = sizes[r - 1];
    if (strides[r - 1] == 1 || cols <= 1) {
        *trans = 0;
        *ld = strides[r - 2] > cols ? strides[r - 2] : (cols > 1 ? cols : 1);
        if (rows > 1 && strides[r - 2] < cols) return 0;
        return 1;
    }
    if (strides[r - 2] == 1 || rows <= 1) {
        *trans = 1;
        *ld = strides[r - 1] > rows ? strides[r - 1] : (rows > 1 ? rows : 1);
        return 1;
    }
    return 0;
}

#define LT_TRANSA 3
#define LT_TRANSB 4
#define LT_EPILOGUE 7
#define LT_BIAS_POINTER 8
#define LT_PREF_MAX_WORKSPACE 1

/* D (n x m column-major, ld ldc) = epilogue(op(B) op(A) [+ E]) through cuBLASLt; 0 or a status */
static int lt_gemm(int64_t *rt, int epi, int opb, int opa, int64_t n, int64_t m, int64_t k, const void *pb, int tin,
                   int64_t ldb, const void *pa, int64_t lda, void *pc, int tout, int64_t ldc, const void *pe, int64_t lde) {
    static const uint32_t epilogue[5] = {1, 1, 4, 2, 6};   /* DEFAULT, DEFAULT (beta), BIAS, RELU, RELU_BIAS */
    void *desc = 0, *la = 0, *lb = 0, *lc = 0, *ld = 0, *pref = 0;
    float one = 1.0f, zero = 0.0f;
    uint32_t e = epilogue[epi];
    uint64_t ws = (uint64_t)rt[SLOT_WS_SIZE];
    int r = lt_desc_create(&desc, tin == CUDA_R_32F ? compute_type : 68, CUDA_R_32F);
    if (r == 0) r = lt_desc_set(desc, LT_TRANSA, &opb, sizeof opb);
    if (r == 0) r = lt_desc_set(desc, LT_TRANSB, &opa, sizeof opa);
    if (r == 0) r = lt_desc_set(desc, LT_EPILOGUE, &e, sizeof e);
    if (r == 0 && (epi == 2 || epi == 4)) r = lt_desc_set(desc, LT_BIAS_POINTER, &pe, sizeof pe);
    /* first operand op(B): stored (opb ? k x n : n x k); second op(A): (opa ? m x k : k x m) */
    if (r == 0) r = lt_layout_create(&lb, tin, opb ? k : n, opb ? n : k, ldb);
    if (r == 0) r = lt_layout_create(&la, tin, opa ? m : k, opa ? k : m, lda);
    if (r == 0) r = lt_layout_create(&ld, tout, n, m, ldc);
    if (r == 0) r = lt_layout_create(&lc, tout, n, m, epi == 1 ? lde : ldc);
    if (r == 0) r = lt_pref_create(&pref);
    if (r == 0) r = lt_pref_set(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof ws);
    lt_heuristic_t found;
    int count = 0;
    if (r == 0) r = lt_heuristic(lt_handle, desc, lb, la, lc, ld, pref, 1, &found, &count);
    if (r == 0 && count < 1) r = 15;    /* CUBLAS_STATUS_NOT_SUPPORTED: no algorithm for it */
    if (r == 0)
        r = lt_matmul(lt_handle, desc, &one, pb, lb, pa, la, epi == 1 ? &one : &zero, epi == 1 ? pe : pc, lc, pc, ld,
                      &found, (void *)(intptr_t)rt[SLOT_WS], (size_t)ws, (void *)(intptr_t)rt[SLOT_STREAM]);
    if (pref) lt_pref_destroy(pref);
    if (lc) lt_layout_destroy(lc);
    if (ld) lt_layout_destroy(ld);
    if (la) lt_layout_destroy(la);
    if (lb) lt_layout_destroy(lb);
    if (desc) lt_desc_destroy(desc);
    return r;
}

void relax_cublas_matmul(int64_t *rt, int64_t code, const int64_t *a, const int64_t *b, const int64_t *c,
                         const int64_t *e) {
    if (rt[SLOT_ERROR]) return;
    if (!handle) { fail(rt, NOT_LOADED); return; }
    int64_t full = code;
    int epi = (int)(code / 100000);
    code %= 100000;
    if (epi && !lt_handle) { fail(rt, NOT_LOADED); return; }
    int form = (int)(code / 10000), ra = (int)(code / 1000 % 10), rb = (int)(code / 100 % 10);
    int din = (int)(code / 10 % 10), dout = (int)(code % 10);
    int rc = ra > rb ? ra : rb;
    int64_t m = a[3 + ra - 2], k = a[3 + ra - 1], n = form ? b[3 + rb - 2] : b[3 + rb - 1];
    int64_t batch = ra == 3 ? a[3] : 1;
    static const int cuda_type[3] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF};
    if (din > 2 || dout > 2) { fail(rt, BAD_LAYOUT); return; }
    int esz_in = din ? 2 : 4, esz_out = dout ? 2 : 4;
    int tin = cuda_type[din], tout = cuda_type[dout];
    const char *pa = (const char *)(intptr_t)a[1] + a[2] * esz_in;
    const char *pb = (const char *)(intptr_t)b[1] + b[2] * (form == 2 ? 1 : esz_in);
    char *pc = (char *)(intptr_t)c[1] + c[2] * esz_out;
    int64_t lda, ldb, ldc;
    int ta, tb, tc;
    if ((form || epi) && (ra != 2 || rb != 2)) { fail(rt, BAD_LAYOUT); return; }
    if (form == 2) {
        /* raw rows: (N, K * esz) bytes, unit-stride, whole elements, element-aligned */
        int64_t rowbytes = b[3 + 1], s0 = b[3 + 2], s1 = b[3 + 3];
        if (!din || rowbytes != k * esz_in || (s1 != 1 && rowbytes > 1) || s0 % esz_in || s0 < rowbytes
            || ((intptr_t)pb) % esz_in) {
            fail(rt, BAD_LAYOUT);
            return;
        }
        ldb = s0 / esz_in > 1 ? s0 / esz_in : 1;
        tb = 0;
    } else if (!layout(b, rb, &ldb, &tb)) {
        fail(rt, BAD_LAYOUT);
        return;
    }
    if (!layout(a, ra, &lda, &ta) || !layout(c, rc, &ldc, &tc) || tc) {
        fail(rt, BAD_LAYOUT);
        return;
    }
    /* B (N, K) row-major is column-major (K, N): cuBLAS transposes it back */
    if (form) tb = !tb;
    /* the epilogue's operand: a residual (M, N) like C, or a bias of N contiguous values */
    const char *pe = 0;
    int64_t lde = 0;
    if (epi == 1) {
        int te;
        if (!e || !layout(e, 2, &lde, &te) || te || e[3] != m || e[4] != n) { fail(rt, BAD_LAYOUT); return; }
        pe = (const char *)(intptr_t)e[1] + e[2] * esz_out;
    } else if (epi == 2 || epi == 4) {
        if (!e || e[3] != n || (e[4] != 1 && n > 1)) { fail(rt, BAD_LAYOUT); return; }
        pe = (const char *)(intptr_t)e[1] + e[2] * esz_out;
    }
    if (m == 0 || n == 0 || batch == 0) return;
    /* 3-D x 2-D with A's and C's rows evenly spaced across the batch: one GEMM of batch*M rows */
    if (ra == 3 && rb == 2 && !ta && a[3 + 3] == m * lda && c[3 + 3] == m * ldc) {
        m *= batch;
        batch = 1;
    }
    if (!fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) || !fits(ldc) || !fits(batch)) {
        fail(rt, TOO_LARGE);
        return;
    }
    float one = 1.0f, zero = 0.0f;
    /* the fast TF32 mode is for f32 inputs only: half inputs always compute in f32 */
    int compute = din ? 68 : compute_type;
    int r;
    pthread_mutex_lock(&lock);
    r = set_stream(handle, (void *)(intptr_t)rt[SLOT_STREAM]);
    if (r == 0) r = set_workspace(handle, (void *)(intptr_t)rt[SLOT_WS], (size_t)rt[SLOT_WS_SIZE]);
    /* column-major: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m) */
    if (r == 0 && epi)
        r = lt_gemm(rt, epi, tb ? OP_T : OP_N, ta ? OP_T : OP_N, n, m, k, pb, tin, ldb, pa, lda, pc, tout, ldc, pe, lde);
    else if (r == 0 && batch == 1)
        r = gemm_ex(handle, tb ? OP_T : OP_N, ta ? OP_T : OP_N, (int)n, (int)m, (int)k, &one, pb, tin, (int)ldb,
                    pa, tin, (int)lda, &zero, pc, tout, (int)ldc, compute, GEMM_DEFAULT);
    else if (r == 0) {
        long long sa = ra == 3 ? a[3 + 3] : 0, sb = rb == 3 ? b[3 + 3] : 0, sc = c[3 + 3];
        r = gemm_sb(handle, tb ? OP_T : OP_N, ta ? OP_T : OP_N, (int)n, (int)m, (int)k, &one, pb, tin, (int)ldb, sb,
                    pa, tin, (int)lda, sa, &zero, pc, tout, (int)ldc, sc, (int)batch, compute, GEMM_DEFAULT);
    }
    pthread_mutex_unlock(&lock);
    if (r != 0) {
        fail(rt, r);
        return;
    }
    rt[SLOT_LAUNCHES] += 1;
    rt[SLOT_LIBRARY_CALLS] += 1;
    rt[SLOT_TOPOLOGY] = rt[SLOT_TOPOLOGY] * 1099511628211LL + 2 + full;
}
