/* A library for relax.call_dps_library tests: out = a + b on (n, 4) float32 memrefs. */
#include <stdint.h>
typedef struct { float *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } memref2d;
void _mlir_ciface_dps_add(memref2d *a, memref2d *b, memref2d *out) {
  int64_t n = a->sizes[0] * a->sizes[1];
  for (int64_t i = 0; i < n; ++i)
    out->aligned[out->offset + i] = a->aligned[a->offset + i] + b->aligned[b->offset + i];
}
