/* A stand-in for the CUDA driver library (libcuda.so.1) for test/test_cuda.py on machines
 * without an NVIDIA GPU: every entry point the cuda runtime (relax_mlir/runtime/cuda.py)
 * and MLIR's libmlir_cuda_runtime.so use, with behaviour chosen per call by environment
 * variables, so that the runtime's error mapping, checks and host path run for real.
 * Kernels are never executed (results are whatever the buffers hold).
 *
 * Device memory is not host memory: cuMemAlloc hands out addresses in a range mapped
 * PROT_NONE, so host code that dereferences a device pointer crashes (SIGSEGV) instead of
 * silently working; the bytes live in a shadow mapping that only the copy entry points
 * (cuMemcpyHtoD / DtoH / DtoD, sync and async) reach. Streams can be captured
 * (cuStreamBeginCapture .. cuStreamEndCapture): launches and device-to-device copies on a
 * capturing stream become nodes of a graph (host<->device copies there are refused, as
 * pageable copies are on a real driver), cuGraphInstantiate / cuGraphExecUpdate (same
 * node kinds and kernels, else CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) / cuGraphLaunch
 * replay them: a kernel node counts as a launch, a copy node copies.
 *
 *   FAKE_CUDA_INIT          CUresult of cuInit (default 0)
 *   FAKE_CUDA_DEVICES       number of devices, named "Fake GPU <k>" (default 1)
 *   FAKE_CUDA_MANAGED       the managed-memory attribute (default 1)
 *   FAKE_CUDA_GRID_X        the grid's x limit (default 2147483647)
 *   FAKE_CUDA_ALLOC_LIMIT   cuMemAlloc(Managed) fails with OUT_OF_MEMORY above it (bytes)
 *   FAKE_CUDA_LOAD_ERROR    CUresult of cuModuleLoadDataEx (with a log line)
 *   FAKE_CUDA_LAUNCH_ERROR  CUresult of cuLaunchKernel
 *   FAKE_CUDA_QUERY         CUresult of cuStreamQuery (600: never done)
 *   FAKE_CUDA_TRACE         a file that gets each kernel run's name, one a line (a launch census)
 *
 * Counters (read with ctypes): fake_launches (kernels run: direct launches and kernel nodes
 * of launched graphs) and fake_grids (grid x, y, z of the first 64), fake_direct_launches,
 * fake_graph_launches, fake_instantiations, fake_updates, fake_captured (nodes recorded),
 * fake_htod / fake_dtoh / fake_dtod (copies), fake_allocs (cuMemAlloc), fake_syncs
 * (cuStreamSynchronize, cuCtxSynchronize and cuStreamQuery calls that returned done),
 * fake_get_functions (cuModuleGetFunction calls).
 *
 * Host work in stream order, for the fake cuBLAS (test/Inputs/fake_libcublas.c, linked
 * against this library): fake_enqueue(stream, fn, args) runs fn(args) now, or, on a
 * capturing stream, records it as a node (kind 3, counted as a kernel when its graph is
 * launched, as cuBLAS's kernels would be); fake_device_bytes(p, n) is the shadow of device
 * memory [p, p + n), NULL outside it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
long fake_launches = 0, fake_direct_launches = 0, fake_graph_launches = 0, fake_instantiations = 0,
     fake_updates = 0, fake_captured = 0, fake_htod = 0, fake_dtoh = 0, fake_dtod = 0, fake_allocs = 0, fake_syncs = 0,
     fake_get_functions = 0;
long fake_grids[64 * 3];

static long env(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static const char *names[][2] = {
    {"0", "CUDA_SUCCESS"}, {"2", "CUDA_ERROR_OUT_OF_MEMORY"}, {"100", "CUDA_ERROR_NO_DEVICE"},
    {"218", "CUDA_ERROR_INVALID_PTX"}, {"600", "CUDA_ERROR_NOT_READY"}, {"700", "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {"701", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
};
static const char *texts[] = {
    "no error", "out of memory", "no CUDA-capable device is detected", "a PTX JIT compilation failed",
    "device not ready", "an illegal memory access was encountered", "too many resources requested for launch",
};

CUresult cuGetErrorName(CUresult e, const char **s) {
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (atoi(names[i][0]) == e) { *s = names[i][1]; return 0; }
    *s = 0;
    return 1;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (atoi(names[i][0]) == e) { *s = texts[i]; return 0; }
    *s = 0;
    return 1;
}
CUresult cuInit(unsigned flags) { (void)flags; return (CUresult)env("FAKE_CUDA_INIT", 0); }
CUresult cuDeviceGetCount(int *n) { *n = (int)env("FAKE_CUDA_DEVICES", 1); return 0; }
CUresult cuDeviceGet(int *d, int k) { *d = k; return k < env("FAKE_CUDA_DEVICES", 1) ? 0 : 101; }
CUresult cuDeviceGetName(char *buf, int len, int d) {
    char tmp[32] = "Fake GPU ";
    tmp[9] = (char)('0' + d);
    strncpy(buf, tmp, (size_t)len);
    return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    switch (attr) {
    case 1: case 2: case 3: *v = 1024; break;
    case 4: *v = 64; break;
    case 8: *v = 48 * 1024; break;   /* shared memory per block */
    case 10: *v = 32; break;         /* warp size */
    case 16: *v = (int)env("FAKE_CUDA_SMS", 132); break;   /* multiprocessors (an H100's) */
    case 5: *v = (int)env("FAKE_CUDA_GRID_X", 2147483647); break;
    case 6: case 7: *v = 65535; break;
    case 75: *v = 9; break;
    case 83: *v = (int)env("FAKE_CUDA_MANAGED", 1); break;
    default: *v = 0;
    }
    return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = (size_t)80 << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)(intptr_t)(0x1000 + d); return 0; }
/* contexts made current and not popped; module unloads without one (a real driver: 201) */
long fake_ctx_depth = 0, fake_unloads = 0, fake_unloads_without_context = 0;
CUresult cuCtxPushCurrent_v2(void *c) { (void)c; fake_ctx_depth++; return 0; }
CUresult cuCtxPopCurrent_v2(void **c) { if (c) *c = 0; if (fake_ctx_depth > 0) fake_ctx_depth--; return 0; }
CUresult cuCtxSynchronize(void) { fake_syncs++; return 0; }
CUresult cuMemAllocManaged(uint64_t *p, size_t n, unsigned flags) {
    (void)flags;
    long limit = env("FAKE_CUDA_ALLOC_LIMIT", 0);
    if (limit && (long)n > limit) return 2;
    void *m = 0;
    if (posix_memalign(&m, 256, n)) return 2;
    *p = (uint64_t)(uintptr_t)m;
    return 0;
}

/* device memory: [dev_base, dev_base + DEV_BYTES) mapped PROT_NONE; its bytes at the same
 * offset in shadow; a bump allocator (the runtime pools its buffers) */
#define DEV_BYTES ((size_t)4 << 30)
static char *dev_base = 0, *shadow = 0;
static size_t dev_top = 0;

static int dev_init(void) {
    if (dev_base) return 1;
    void *d = mmap(0, DEV_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *h = mmap(0, DEV_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d == MAP_FAILED || h == MAP_FAILED) return 0;
    dev_base = d, shadow = h;
    return 1;
}
/* the shadow bytes of [p, p + n), or 0 when that is not device memory */
static char *dev(uint64_t p, size_t n) {
    if (!dev_base || p < (uint64_t)(uintptr_t)dev_base || p + n > (uint64_t)(uintptr_t)dev_base + dev_top) return 0;
    return shadow + (p - (uint64_t)(uintptr_t)dev_base);
}
int fake_is_device(uint64_t p) { return dev(p, 1) != 0; }

CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
    long limit = env("FAKE_CUDA_ALLOC_LIMIT", 0);
    if (limit && (long)n > limit) return 2;
    size_t size = (n + 255) & ~(size_t)255;
    if (!dev_init() || dev_top + size > DEV_BYTES) return 2;
    *p = (uint64_t)(uintptr_t)(dev_base + dev_top);
    dev_top += size;
    fake_allocs++;
    return 0;
}
CUresult cuMemFree_v2(uint64_t p) {
    if (dev(p, 1)) return 0;       /* device memory: the bump allocator does not reuse it */
    free((void *)(uintptr_t)p);
    return 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *opts, void **vals) {
    (void)img;
    long err = env("FAKE_CUDA_LOAD_ERROR", 0);
    if (err) {
        for (unsigned i = 0; i < n; i++)
            if (opts[i] == 5) strcpy((char *)vals[i], "ptxas fatal   : fake rejection");
        return (CUresult)err;
    }
    *m = malloc(16);
    return 0;
}
CUresult cuModuleLoadData(void **m, const void *img) { return cuModuleLoadDataEx(m, img, 0, 0, 0); }
CUresult cuModuleUnload(void *m) {
  fake_unloads++;
  if (fake_ctx_depth == 0) { fake_unloads_without_context++; return 201; }  /* CUDA_ERROR_INVALID_CONTEXT */
  free(m);
  return 0;
}
/* one handle per (module, name), as a real driver */
static struct { void *m; char *name; } funcs[4096];
static int nfuncs = 0;
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    fake_get_functions++;
    for (int i = 0; i < nfuncs; i++)
        if (funcs[i].m == m && !strcmp(funcs[i].name, name)) { *f = &funcs[i]; return 0; }
    if (nfuncs == 4096) return 2;
    funcs[nfuncs].m = m, funcs[nfuncs].name = strdup(name);
    *f = &funcs[nfuncs++];
    return 0;
}
const char *fake_function_name(void *f) { return ((char **)f)[1]; }
/* graphs: a list of nodes (a kernel launch or a device-to-device copy) */
#define FAKE_ARGS 24
typedef void (*fake_host_fn)(const int64_t *);
typedef struct { int kind; void *f; unsigned grid[3], block[3]; uint64_t dst, src; size_t n; int64_t args[FAKE_ARGS]; } node_t;
typedef struct { int n, cap; node_t *nodes; } graph_t;
typedef struct { int capturing; graph_t *graph; } stream_t;

static void add_node(graph_t *g, node_t nd) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->nodes = realloc(g->nodes, (size_t)g->cap * sizeof(node_t));
    }
    g->nodes[g->n++] = nd;
    fake_captured++;
}
static void run_kernel(void *f, unsigned gx, unsigned gy, unsigned gz) {
    const char *trace = getenv("FAKE_CUDA_TRACE");
    if (trace && *trace) {   /* the census: one line per kernel run, its name (host work: "-") */
        FILE *out = fopen(trace, "a");
        if (out) { fprintf(out, "%s\n", f ? fake_function_name(f) : "-"); fclose(out); }
    }
    if (fake_launches < 64) {
        fake_grids[3 * fake_launches] = gx;
        fake_grids[3 * fake_launches + 1] = gy;
        fake_grids[3 * fake_launches + 2] = gz;
    }
    fake_launches++;
}
static int capturing(void *s) { return s && ((stream_t *)s)->capturing; }

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *s, void **params, void **extra) {
    (void)smem; (void)params; (void)extra;
    long err = env("FAKE_CUDA_LAUNCH_ERROR", 0);
    if (err) return (CUresult)err;
    if (capturing(s)) {
        node_t nd = {1, f, {gx, gy, gz}, {bx, by, bz}, 0, 0, 0, {0}};
        add_node(((stream_t *)s)->graph, nd);
        return 0;
    }
    fake_direct_launches++;
    run_kernel(f, gx, gy, gz);
    return 0;
}
CUresult cuStreamQuery(void *s) {
    (void)s;
    CUresult r = (CUresult)env("FAKE_CUDA_QUERY", 0);
    if (r == 0) fake_syncs++;
    return r;
}
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = calloc(1, sizeof(stream_t)); return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; fake_syncs++; return 0; }

CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    (void)mode;
    stream_t *st = s;
    if (!st || st->capturing) return 1;
    st->capturing = 1;
    st->graph = calloc(1, sizeof(graph_t));
    return 0;
}
CUresult cuStreamEndCapture(void *s, void **g) {
    stream_t *st = s;
    if (!st || !st->capturing) return 1;
    st->capturing = 0;
    *g = st->graph;
    st->graph = 0;
    return 0;
}
static graph_t *copy_graph(const graph_t *g) {
    graph_t *c = calloc(1, sizeof(graph_t));
    c->n = c->cap = g->n;
    c->nodes = malloc((size_t)(g->n ? g->n : 1) * sizeof(node_t));
    memcpy(c->nodes, g->nodes, (size_t)g->n * sizeof(node_t));
    return c;
}
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long flags) {
    (void)flags;
    *e = copy_graph(g);
    fake_instantiations++;
    return 0;
}
typedef struct { int result; void *errorNode, *errorFromNode; } update_info_t;
CUresult cuGraphExecUpdate_v2(void *e, void *g, update_info_t *info) {
    graph_t *x = e, *n = g;
    int ok = x->n == n->n;
    for (int i = 0; ok && i < n->n; i++)
        ok = x->nodes[i].kind == n->nodes[i].kind && x->nodes[i].f == n->nodes[i].f;
    if (info) info->result = ok ? 0 : 2;   /* CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED */
    if (!ok) return 910;                   /* CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE */
    memcpy(x->nodes, n->nodes, (size_t)n->n * sizeof(node_t));
    fake_updates++;
    return 0;
}
CUresult cuGraphLaunch(void *e, void *s) {
    graph_t *x = e;
    if (capturing(s)) return 900;
    for (int i = 0; i < x->n; i++) {
        node_t *nd = &x->nodes[i];
        if (nd->kind == 1) run_kernel(nd->f, nd->grid[0], nd->grid[1], nd->grid[2]);
        else if (nd->kind == 3) { run_kernel(NULL, 1, 1, 1); ((fake_host_fn)nd->f)(nd->args); }
        else memmove(dev(nd->dst, nd->n), dev(nd->src, nd->n), nd->n);
    }
    fake_graph_launches++;
    return 0;
}
static void free_graph(graph_t *g) { if (g) { free(g->nodes); free(g); } }
CUresult cuGraphDestroy(void *g) { free_graph(g); return 0; }
CUresult cuGraphExecDestroy(void *e) { free_graph(e); return 0; }

void *fake_device_bytes(uint64_t p, size_t n) { return dev(p, n); }
/* 0, or 1 when the stream is capturing and the work was recorded instead of run */
int fake_enqueue(void *s, fake_host_fn fn, const int64_t *args) {
    if (capturing(s)) {
        node_t nd = {3, (void *)fn, {1, 1, 1}, {1, 1, 1}, 0, 0, 0, {0}};
        memcpy(nd.args, args, sizeof nd.args);
        add_node(((stream_t *)s)->graph, nd);
        return 1;
    }
    fake_direct_launches++;
    run_kernel(NULL, 1, 1, 1);
    fn(args);
    return 0;
}
int fake_capturing(void *s) { return capturing(s); }

/* copies: device addresses through the shadow; 1 (CUDA_ERROR_INVALID_VALUE) for anything else */
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
    char *to = dev(d, n);
    if (!to) return 1;
    memcpy(to, s, n);
    fake_htod++;
    return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
    char *from = dev(s, n);
    if (!from) return 1;
    memcpy(d, from, n);
    fake_dtoh++;
    return 0;
}
CUresult cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) {
    char *to = dev(d, n), *from = dev(s, n);
    if (!to || !from) return 1;
    memmove(to, from, n);
    fake_dtod++;
    return 0;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, void *st) {
    return capturing(st) ? 900 : cuMemcpyHtoD_v2(d, s, n);   /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
}
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, void *st) {
    return capturing(st) ? 900 : cuMemcpyDtoH_v2(d, s, n);
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void *st) {
    if (!dev(d, n) || !dev(s, n)) return 1;
    if (capturing(st)) {
        node_t nd = {2, 0, {0, 0, 0}, {0, 0, 0}, d, s, n, {0}};
        add_node(((stream_t *)st)->graph, nd);
        return 0;
    }
    return cuMemcpyDtoD_v2(d, s, n);
}

/* used by libmlir_cuda_runtime.so for what the runtime never calls: present, inert */
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = 0; return 0; }
CUresult cuEventDestroy_v2(void *e) { (void)e; return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { (void)f; (void)a; (void)v; return 0; }
CUresult cuLaunchKernelEx(const void *c, void *f, void **p, void **x) { (void)c; (void)f; (void)p; (void)x; return 0; }
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { (void)p; (void)n; (void)f; return 0; }
CUresult cuMemHostUnregister(void *p) { (void)p; return 0; }
CUresult cuMemcpy(uint64_t d, uint64_t s, size_t n) { return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void *st) { return cuMemcpyDtoDAsync_v2(d, s, n, st); }
CUresult cuMemsetD16Async(uint64_t d, unsigned short v, size_t n, void *s) { (void)d; (void)v; (void)n; (void)s; return 0; }
CUresult cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *s) { (void)d; (void)v; (void)n; (void)s; return 0; }
CUresult cuTensorMapEncodeTiled(void *m, int t, unsigned r, void *a, const void *b, const void *c, const void *d,
                                const void *e, int f, int g, int h, int i) {
    (void)m; (void)t; (void)r; (void)a; (void)b; (void)c; (void)d; (void)e; (void)f; (void)g; (void)h; (void)i;
    return 0;
}
