/* A stand-in for the CUDA driver library (libcuda.so.1) for test/test_cuda.py on machines
 * without an NVIDIA GPU: every entry point the cuda runtime (relax_mlir/runtime/cuda.py)
 * and MLIR's libmlir_cuda_runtime.so use, with behaviour chosen per call by environment
 * variables, so that the runtime's error mapping, checks and host path run for real.
 * Kernels are never executed (results are whatever the buffers hold).
 *
 *   FAKE_CUDA_INIT          CUresult of cuInit (default 0)
 *   FAKE_CUDA_DEVICES       number of devices, named "Fake GPU <k>" (default 1)
 *   FAKE_CUDA_MANAGED       the managed-memory attribute (default 1)
 *   FAKE_CUDA_GRID_X        the grid's x limit (default 2147483647)
 *   FAKE_CUDA_ALLOC_LIMIT   cuMemAllocManaged fails with OUT_OF_MEMORY above it (bytes)
 *   FAKE_CUDA_LOAD_ERROR    CUresult of cuModuleLoadDataEx (with a log line)
 *   FAKE_CUDA_LAUNCH_ERROR  CUresult of cuLaunchKernel
 *   FAKE_CUDA_QUERY         CUresult of cuStreamQuery (600: never done)
 *
 * fake_launches counts launches; fake_grids holds the grid x, y, z of each (up to 64).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
long fake_launches = 0;
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
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAllocManaged(uint64_t *p, size_t n, unsigned flags) {
    (void)flags;
    long limit = env("FAKE_CUDA_ALLOC_LIMIT", 0);
    if (limit && (long)n > limit) return 2;
    void *m = 0;
    if (posix_memalign(&m, 256, n)) return 2;
    *p = (uint64_t)(uintptr_t)m;
    return 0;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
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
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; *f = strdup(name); return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *s, void **params, void **extra) {
    (void)f; (void)bx; (void)by; (void)bz; (void)smem; (void)s; (void)params; (void)extra;
    long err = env("FAKE_CUDA_LAUNCH_ERROR", 0);
    if (err) return (CUresult)err;
    if (fake_launches < 64) {
        fake_grids[3 * fake_launches] = gx;
        fake_grids[3 * fake_launches + 1] = gy;
        fake_grids[3 * fake_launches + 2] = gz;
    }
    fake_launches++;
    return 0;
}
CUresult cuStreamQuery(void *s) { (void)s; return (CUresult)env("FAKE_CUDA_QUERY", 0); }
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(8); return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }

/* used by libmlir_cuda_runtime.so for what the runtime never calls: present, inert */
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = 0; return 0; }
CUresult cuEventDestroy_v2(void *e) { (void)e; return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { (void)f; (void)a; (void)v; return 0; }
CUresult cuLaunchKernelEx(const void *c, void *f, void **p, void **x) { (void)c; (void)f; (void)p; (void)x; return 0; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) { return cuMemAllocManaged(p, n, 1); }
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { (void)p; (void)n; (void)f; return 0; }
CUresult cuMemHostUnregister(void *p) { (void)p; return 0; }
CUresult cuMemcpy(uint64_t d, uint64_t s, size_t n) { memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void *st) { (void)st; return cuMemcpy(d, s, n); }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return 0; }
CUresult cuMemsetD16Async(uint64_t d, unsigned short v, size_t n, void *s) { (void)d; (void)v; (void)n; (void)s; return 0; }
CUresult cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *s) { (void)d; (void)v; (void)n; (void)s; return 0; }
CUresult cuTensorMapEncodeTiled(void *m, int t, unsigned r, void *a, const void *b, const void *c, const void *d,
                                const void *e, int f, int g, int h, int i) {
    (void)m; (void)t; (void)r; (void)a; (void)b; (void)c; (void)d; (void)e; (void)f; (void)g; (void)h; (void)i;
    return 0;
}
