"""The cuda target's launch path, compiled into each executable's host code (no Python per launch).

Upstream's translation of ``gpu.launch_func`` calls MLIR's CUDA runtime wrappers per launch:
``mgpuModuleGetFunction``, ``mgpuStreamCreate``, ``mgpuLaunchKernel``,
``mgpuStreamSynchronize``, ``mgpuStreamDestroy``. :func:`link` defines those five (and
``relax_cuda_copy``, relax-cuda-host's device-to-device copy) in the LLVM dialect inside the
host module itself, so the JIT inlines them into the generated code:

* the stream is the call's (the session's stream, written into the state block by the runtime
  before the call): created once, never per launch, and neither synchronized nor destroyed
  per launch: the runtime synchronizes once per call;
* a launch checks the grid and block against the device's limits (a few compares), skips an
  empty grid, calls ``cuLaunchKernel`` and counts it; a copy calls ``cuMemcpyDtoDAsync``;
  both fold what they issued into the call's *topology* hash (the kernel handles and copies in
  order), which picks the CUDA graph executable the call's capture can update;
* ``mgpuModuleGetFunction`` asks the driver once per kernel (a cache of handles by module and
  name, open addressing);
* the first failure (its kind, CUresult, kernel, grid and block) is recorded in the state block
  and later launches do nothing; the runtime raises it when the host function returns;
* with ``RELAX_MLIR_CUDA_CHECK=1`` every launch first calls back into Python
  (``relax_cuda_check_launch``: each pointer parameter in the runtime's device memory);
* call buffers (``_mlir_memref_to_llvm_alloc``, what ``finalize-memref-to-llvm
  {use-generic-functions=true}`` calls) are carved from the session's arena, a device buffer
  whose base and size the runtime writes into the state block before the call: a bump of
  ``arena_top`` in :data:`ARENA_ALIGN` steps, freed all at once when the call ends
  (``_mlir_memref_to_llvm_free`` does nothing); what does not fit calls back into Python
  (``relax_cuda_alloc``: a pool buffer), and ``arena_need`` (every request's size) tells the
  runtime how big to make the arena for the next call.

The driver's entry points are bound by address (``relax_cu_*`` runtime symbols), so the path
calls exactly the driver library the runtime loaded. The state block is the public global
``_mlir_relax_cuda_rt`` (:data:`SLOTS` names its ``i64`` slots).
"""

from __future__ import annotations

#: slot index of each field of the state block
SLOTS = {name: k for k, name in enumerate([
    "stream", "error", "code", "function", "gx", "gy", "gz", "bx", "by", "bz", "launches", "copies",
    "max_gx", "max_gy", "max_gz", "max_bx", "max_by", "max_bz", "max_threads", "check", "topology",
    "arena", "arena_size", "arena_top", "arena_need", "library_calls", "cublas_ws", "cublas_ws_size"])}
NSLOTS = 28
#: entries of the compiled kernel-handle cache (2 ** FCACHE_BITS)
FCACHE_BITS = 10
FCACHE = 1 << FCACHE_BITS
#: call buffers are carved from the session's arena at this alignment (bytes)
ARENA_ALIGN = 256
#: relax-cuda-host's device-to-device copy, defined here in the host module
COPY_FN = "relax_cuda_copy"
#: host constants (relax-cuda-host): ``<CONST_PREFIX><k>`` the host copy, ``<SLOT_PREFIX><k>``
#: the slot the runtime fills with its device copy's address; ``CONSTANTS_ATTR`` lists them
CONST_PREFIX = "_mlir_relax_cuda_const_"
SLOT_PREFIX = "_mlir_relax_cuda_cslot_"
CONSTANTS_ATTR = "cuda.constants"
STATE = "_mlir_relax_cuda_rt"
#: error kinds recorded in slot ``error``
LIMIT, LAUNCH, COPY, GET_FUNCTION, LIBRARY = 1, 2, 3, 4, 5
#: the library GEMMs (relax-cuda-dispatch-library): ``_mlir_ciface_<LIBRARY_PREFIX>...``
#: declarations of the host module are defined to call the cuBLAS shim's C entry point
#: (relax_mlir/runtime/cuda/cublas_shim.c) with the state block and the callee's code
LIBRARY_PREFIX = "relax_cublas_matmul_"
LIBRARY_ENTRY = "relax_cublas_matmul"
#: the runtime library of those callees (relax_mlir/runtime/cuda/cublas.py) and the
#: (input dtype, output dtype) pairs it computes (f32 accumulation)
LIBRARY_NAME = "relax_cublas"
LIBRARY_DTYPES = {("f32", "f32"), ("f16", "f16"), ("f16", "f32"), ("bf16", "bf16"), ("bf16", "f32")}
#: the shim's dtype digits (cublas_shim.c)
LIBRARY_DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2}


#: the shapes of A and B the shim takes: ranks (B (K, N)), ``22t``: B given as its transpose
#: (N, K) in the input type (C = A B^T), ``22w``: B^T as the raw rows of a stored half weight (an
#: i8 (N, 2K) tensor of relax.quantized_matmul); the digit of each in the shim's code
LIBRARY_RANKS = {"22": 0, "33": 0, "32": 0, "22t": 1, "22w": 2}


#: cuBLASLt epilogues a 2-D library GEMM can carry (the callee's last part; the shim's digit):
#: ``add`` D = A B + R (beta = 1 on a residual R of D's shape), ``bias`` D = A B + b[n],
#: ``relu`` D = max(A B, 0), ``biasrelu`` D = max(A B + b[n], 0)
LIBRARY_EPILOGUES = {"add": 1, "bias": 2, "relu": 3, "biasrelu": 4}
#: epilogues with an operand of their own (R, b): the callee takes (A, B, that, C)
EPILOGUE_OPERAND = ("add", "bias", "biasrelu")


def library_callee(ranks: str, din: str, dout: str, epilogue: str = "") -> str:
    """``relax_cublas_matmul_22_f32``, ``relax_cublas_matmul_33_f16_f32``,
    ``relax_cublas_matmul_22t_f16``, ``relax_cublas_matmul_22_f32_biasrelu``, ..."""
    return LIBRARY_PREFIX + ranks + "_" + din + ("" if din == dout else "_" + dout) + \
        ("_" + epilogue if epilogue else "")


def parse_library_callee(name: str):
    """(rank of A, rank of B, input dtype, output dtype, B's form: 0 (K, N), 1 (N, K), 2 (N, K) raw
    bytes, epilogue or "") of a :func:`library_callee`, else None."""
    if not name.startswith(LIBRARY_PREFIX):
        return None
    parts = name[len(LIBRARY_PREFIX):].split("_")
    epilogue = parts.pop() if parts and parts[-1] in LIBRARY_EPILOGUES else ""
    if len(parts) not in (2, 3) or parts[0] not in LIBRARY_RANKS:
        return None
    if epilogue and parts[0] not in ("22", "22t", "22w"):
        return None
    din, dout = parts[1], parts[-1]
    if (din, dout) not in LIBRARY_DTYPES:
        return None
    return int(parts[0][0]), int(parts[0][1]), din, dout, LIBRARY_RANKS[parts[0]], epilogue
#: driver entry points the path calls: runtime symbol -> driver function
DRIVER_SYMBOLS = {"relax_cu_launch": "cuLaunchKernel", "relax_cu_copy": "cuMemcpyDtoDAsync_v2",
                  "relax_cu_get_function": "cuModuleGetFunction"}
#: the Python hook of RELAX_MLIR_CUDA_CHECK=1
CHECK_HOOK = "relax_cuda_check_launch"
#: the Python allocation of a call buffer that does not fit the session's arena
ALLOC_HOOK = "relax_cuda_alloc"
#: functions defined here (a declaration of one of them in the host module is replaced)
DEFINED = ("mgpuStreamCreate", "mgpuStreamSynchronize", "mgpuStreamDestroy", "mgpuModuleGetFunction",
           "mgpuLaunchKernel", "relax_cuda_copy", "_mlir_memref_to_llvm_alloc", "_mlir_memref_to_llvm_free")


def _slot(k: str, name: str) -> str:
    return (f"%{name}p = llvm.getelementptr %rt[0, {SLOTS[k]}] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<{NSLOTS} x i64>\n"
            f"    %{name} = llvm.load %{name}p : !llvm.ptr -> i64\n")


_RT = "%rt = llvm.mlir.addressof @" + STATE + " : !llvm.ptr\n"


def _text() -> str:
    i64x6 = "i64, i64, i64, i64, i64, i64"
    return f"""
module {{
  llvm.mlir.global external @{STATE}(dense<0> : tensor<{NSLOTS}xi64>) {{addr_space = 0 : i32}} : !llvm.array<{NSLOTS} x i64>
  llvm.func @relax_cu_launch(!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @relax_cu_copy(i64, i64, i64, !llvm.ptr) -> i32
  llvm.func @relax_cu_get_function(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @{CHECK_HOOK}(!llvm.ptr, {i64x6}, !llvm.ptr, i64) -> i32

  // the first failure wins
  llvm.func internal @relax_cuda_fail(%kind: i64, %code: i64, %f: !llvm.ptr, %gx: i64, %gy: i64, %gz: i64,
                                      %bx: i64, %by: i64, %bz: i64) {{
    {_RT}    {_slot("error", "err")}    %c0 = llvm.mlir.constant(0 : i64) : i64
    %first = llvm.icmp "eq" %err, %c0 : i64
    llvm.cond_br %first, ^rec, ^out
  ^rec:
    llvm.store %kind, %errp : i64, !llvm.ptr
    {_slot("code", "o1")}    llvm.store %code, %o1p : i64, !llvm.ptr
    %fi = llvm.ptrtoint %f : !llvm.ptr to i64
    {_slot("function", "o2")}    llvm.store %fi, %o2p : i64, !llvm.ptr
    {_slot("gx", "o3")}    llvm.store %gx, %o3p : i64, !llvm.ptr
    {_slot("gy", "o4")}    llvm.store %gy, %o4p : i64, !llvm.ptr
    {_slot("gz", "o5")}    llvm.store %gz, %o5p : i64, !llvm.ptr
    {_slot("bx", "o6")}    llvm.store %bx, %o6p : i64, !llvm.ptr
    {_slot("by", "o7")}    llvm.store %by, %o7p : i64, !llvm.ptr
    {_slot("bz", "o8")}    llvm.store %bz, %o8p : i64, !llvm.ptr
    llvm.br ^out
  ^out:
    llvm.return
  }}

  // topology = topology * FNV prime + what was issued (a kernel handle; 1: a copy)
  llvm.func internal @relax_cuda_topology(%x: i64) {{
    {_RT}    {_slot("topology", "t")}    %prime = llvm.mlir.constant(1099511628211 : i64) : i64
    %tm = llvm.mul %t, %prime : i64
    %t1 = llvm.add %tm, %x : i64
    llvm.store %t1, %tp : i64, !llvm.ptr
    llvm.return
  }}

  llvm.func @mgpuStreamCreate() -> !llvm.ptr {{
    {_RT}    {_slot("stream", "s")}    %p = llvm.inttoptr %s : i64 to !llvm.ptr
    llvm.return %p : !llvm.ptr
  }}
  llvm.func @mgpuStreamSynchronize(%s: !llvm.ptr) {{
    llvm.return
  }}
  llvm.func @mgpuStreamDestroy(%s: !llvm.ptr) {{
    llvm.return
  }}

  // a cache of (module, name) -> kernel handle, open addressing with linear probing (entries
  // are never evicted): one driver lookup per kernel
  llvm.mlir.global internal @relax_cuda_fcache(dense<0> : tensor<{3 * FCACHE}xi64>) {{addr_space = 0 : i32}} : !llvm.array<{3 * FCACHE} x i64>
  llvm.func @mgpuModuleGetFunction(%m: !llvm.ptr, %name: !llvm.ptr) -> !llvm.ptr {{
    %cache = llvm.mlir.addressof @relax_cuda_fcache : !llvm.ptr
    %mi = llvm.ptrtoint %m : !llvm.ptr to i64
    %ni = llvm.ptrtoint %name : !llvm.ptr to i64
    %mix = llvm.add %ni, %mi : i64
    %golden = llvm.mlir.constant(-7046029254386353131 : i64) : i64
    %h = llvm.mul %mix, %golden : i64
    %shift = llvm.mlir.constant({64 - FCACHE_BITS} : i64) : i64
    %start = llvm.lshr %h, %shift : i64
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c3 = llvm.mlir.constant(3 : i64) : i64
    %maskc = llvm.mlir.constant({FCACHE - 1} : i64) : i64
    %size = llvm.mlir.constant({FCACHE} : i64) : i64
    %zero = llvm.mlir.zero : !llvm.ptr
    llvm.br ^probe(%start, %c0 : i64, i64)
  ^probe(%i: i64, %n: i64):
    %e0 = llvm.mul %i, %c3 : i64
    %e1 = llvm.add %e0, %c1 : i64
    %e2 = llvm.add %e1, %c1 : i64
    %pm = llvm.getelementptr %cache[0, %e0] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{3 * FCACHE} x i64>
    %pn = llvm.getelementptr %cache[0, %e1] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{3 * FCACHE} x i64>
    %pf = llvm.getelementptr %cache[0, %e2] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{3 * FCACHE} x i64>
    %cm = llvm.load %pm : !llvm.ptr -> i64
    %cn = llvm.load %pn : !llvm.ptr -> i64
    %sm = llvm.icmp "eq" %cm, %mi : i64
    %sn = llvm.icmp "eq" %cn, %ni : i64
    %hit = llvm.and %sm, %sn : i1
    llvm.cond_br %hit, ^hit(%pf : !llvm.ptr), ^miss
  ^miss:
    %empty = llvm.icmp "eq" %cm, %c0 : i64
    llvm.cond_br %empty, ^lookup(%pm, %pn, %pf : !llvm.ptr, !llvm.ptr, !llvm.ptr), ^next
  ^next:
    %n1 = llvm.add %n, %c1 : i64
    %full = llvm.icmp "sge" %n1, %size : i64
    %i1 = llvm.add %i, %c1 : i64
    %i2 = llvm.and %i1, %maskc : i64
    llvm.cond_br %full, ^lookup(%zero, %zero, %zero : !llvm.ptr, !llvm.ptr, !llvm.ptr), ^probe(%i2, %n1 : i64, i64)
  ^hit(%phit: !llvm.ptr):
    %cf = llvm.load %phit : !llvm.ptr -> i64
    %cfp = llvm.inttoptr %cf : i64 to !llvm.ptr
    llvm.return %cfp : !llvm.ptr
  ^lookup(%qm: !llvm.ptr, %qn: !llvm.ptr, %qf: !llvm.ptr):
    %slot = llvm.alloca %c1 x !llvm.ptr : (i64) -> !llvm.ptr
    llvm.store %zero, %slot : !llvm.ptr, !llvm.ptr
    %r = llvm.call @relax_cu_get_function(%slot, %m, %name) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %c0i = llvm.mlir.constant(0 : i32) : i32
    %ok = llvm.icmp "eq" %r, %c0i : i32
    llvm.cond_br %ok, ^found, ^fail
  ^found:
    %f = llvm.load %slot : !llvm.ptr -> !llvm.ptr
    %nocache = llvm.icmp "eq" %qm, %zero : !llvm.ptr
    llvm.cond_br %nocache, ^done(%f : !llvm.ptr), ^store(%f : !llvm.ptr)
  ^store(%fs: !llvm.ptr):
    %fi = llvm.ptrtoint %fs : !llvm.ptr to i64
    llvm.store %mi, %qm : i64, !llvm.ptr
    llvm.store %ni, %qn : i64, !llvm.ptr
    llvm.store %fi, %qf : i64, !llvm.ptr
    llvm.br ^done(%fs : !llvm.ptr)
  ^done(%fd: !llvm.ptr):
    llvm.return %fd : !llvm.ptr
  ^fail:
    %code = llvm.sext %r : i32 to i64
    %kind = llvm.mlir.constant({GET_FUNCTION} : i64) : i64
    llvm.call @relax_cuda_fail(%kind, %code, %zero, %c0, %c0, %c0, %c0, %c0, %c0) : (i64, i64, !llvm.ptr, {i64x6}) -> ()
    llvm.return %zero : !llvm.ptr
  }}

  llvm.func @mgpuLaunchKernel(%f: !llvm.ptr, %gx: i64, %gy: i64, %gz: i64, %bx: i64, %by: i64, %bz: i64,
                              %smem: i32, %stream: !llvm.ptr, %params: !llvm.ptr, %extra: !llvm.ptr, %n: i64) {{
    {_RT}    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c0i = llvm.mlir.constant(0 : i32) : i32
    {_slot("error", "err")}    %failed = llvm.icmp "ne" %err, %c0 : i64
    %e1 = llvm.icmp "sle" %gx, %c0 : i64
    %e2 = llvm.icmp "sle" %gy, %c0 : i64
    %e3 = llvm.icmp "sle" %gz, %c0 : i64
    %e12 = llvm.or %e1, %e2 : i1
    %e123 = llvm.or %e12, %e3 : i1
    %skip = llvm.or %e123, %failed : i1
    llvm.cond_br %skip, ^out, ^check
  ^check:
    {_slot("check", "chk")}    %hook = llvm.icmp "ne" %chk, %c0 : i64
    llvm.cond_br %hook, ^hook, ^limits
  ^hook:
    %h = llvm.call @{CHECK_HOOK}(%f, %gx, %gy, %gz, %bx, %by, %bz, %params, %n) : (!llvm.ptr, {i64x6}, !llvm.ptr, i64) -> i32
    %hok = llvm.icmp "eq" %h, %c0i : i32
    llvm.cond_br %hok, ^limits, ^out
  ^limits:
    {_slot("max_gx", "mgx")}    {_slot("max_gy", "mgy")}    {_slot("max_gz", "mgz")}    {_slot("max_bx", "mbx")}    {_slot("max_by", "mby")}    {_slot("max_bz", "mbz")}    {_slot("max_threads", "mt")}    %l1 = llvm.icmp "sgt" %gx, %mgx : i64
    %l2 = llvm.icmp "sgt" %gy, %mgy : i64
    %l3 = llvm.icmp "sgt" %gz, %mgz : i64
    %l4 = llvm.icmp "sgt" %bx, %mbx : i64
    %l5 = llvm.icmp "sgt" %by, %mby : i64
    %l6 = llvm.icmp "sgt" %bz, %mbz : i64
    %bxy = llvm.mul %bx, %by : i64
    %bxyz = llvm.mul %bxy, %bz : i64
    %l7 = llvm.icmp "sgt" %bxyz, %mt : i64
    %o1 = llvm.or %l1, %l2 : i1
    %o2 = llvm.or %o1, %l3 : i1
    %o3 = llvm.or %o2, %l4 : i1
    %o4 = llvm.or %o3, %l5 : i1
    %o5 = llvm.or %o4, %l6 : i1
    %over = llvm.or %o5, %l7 : i1
    llvm.cond_br %over, ^limit, ^launch
  ^limit:
    %kl = llvm.mlir.constant({LIMIT} : i64) : i64
    llvm.call @relax_cuda_fail(%kl, %c0, %f, %gx, %gy, %gz, %bx, %by, %bz) : (i64, i64, !llvm.ptr, {i64x6}) -> ()
    llvm.br ^out
  ^launch:
    {_slot("stream", "strm")}    %sp = llvm.inttoptr %strm : i64 to !llvm.ptr
    %tgx = llvm.trunc %gx : i64 to i32
    %tgy = llvm.trunc %gy : i64 to i32
    %tgz = llvm.trunc %gz : i64 to i32
    %tbx = llvm.trunc %bx : i64 to i32
    %tby = llvm.trunc %by : i64 to i32
    %tbz = llvm.trunc %bz : i64 to i32
    %r = llvm.call @relax_cu_launch(%f, %tgx, %tgy, %tgz, %tbx, %tby, %tbz, %smem, %sp, %params, %extra) : (!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %ok = llvm.icmp "eq" %r, %c0i : i32
    llvm.cond_br %ok, ^count, ^fail
  ^fail:
    %code = llvm.sext %r : i32 to i64
    %kf = llvm.mlir.constant({LAUNCH} : i64) : i64
    llvm.call @relax_cuda_fail(%kf, %code, %f, %gx, %gy, %gz, %bx, %by, %bz) : (i64, i64, !llvm.ptr, {i64x6}) -> ()
    llvm.br ^out
  ^count:
    {_slot("launches", "nl")}    %c1 = llvm.mlir.constant(1 : i64) : i64
    %nl1 = llvm.add %nl, %c1 : i64
    llvm.store %nl1, %nlp : i64, !llvm.ptr
    %fi = llvm.ptrtoint %f : !llvm.ptr to i64
    llvm.call @relax_cuda_topology(%fi) : (i64) -> ()
    llvm.br ^out
  ^out:
    llvm.return
  }}

  llvm.func @{ALLOC_HOOK}(i64) -> !llvm.ptr
  llvm.func @_mlir_memref_to_llvm_alloc(%n: i64) -> !llvm.ptr {{
    {_RT}    %mask = llvm.mlir.constant({-ARENA_ALIGN} : i64) : i64
    %round = llvm.mlir.constant({ARENA_ALIGN - 1} : i64) : i64
    %n1 = llvm.add %n, %round : i64
    %size = llvm.and %n1, %mask : i64
    {_slot("arena_need", "need")}    %need1 = llvm.add %need, %size : i64
    llvm.store %need1, %needp : i64, !llvm.ptr
    {_slot("arena_top", "top")}    {_slot("arena_size", "cap")}    %top1 = llvm.add %top, %size : i64
    %fits = llvm.icmp "sle" %top1, %cap : i64
    llvm.cond_br %fits, ^bump, ^slow
  ^bump:
    {_slot("arena", "base")}    llvm.store %top1, %topp : i64, !llvm.ptr
    %a = llvm.add %base, %top : i64
    %p = llvm.inttoptr %a : i64 to !llvm.ptr
    llvm.return %p : !llvm.ptr
  ^slow:
    %q = llvm.call @{ALLOC_HOOK}(%n) : (i64) -> !llvm.ptr
    llvm.return %q : !llvm.ptr
  }}
  llvm.func @_mlir_memref_to_llvm_free(%p: !llvm.ptr) {{
    llvm.return
  }}

  llvm.func @relax_cuda_copy(%src: i64, %dst: i64, %n: i64) {{
    {_RT}    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c0i = llvm.mlir.constant(0 : i32) : i32
    {_slot("error", "err")}    %failed = llvm.icmp "ne" %err, %c0 : i64
    %empty = llvm.icmp "sle" %n, %c0 : i64
    %skip = llvm.or %failed, %empty : i1
    llvm.cond_br %skip, ^out, ^copy
  ^copy:
    {_slot("stream", "strm")}    %sp = llvm.inttoptr %strm : i64 to !llvm.ptr
    %r = llvm.call @relax_cu_copy(%dst, %src, %n, %sp) : (i64, i64, i64, !llvm.ptr) -> i32
    %ok = llvm.icmp "eq" %r, %c0i : i32
    llvm.cond_br %ok, ^count, ^fail
  ^fail:
    %code = llvm.sext %r : i32 to i64
    %kc = llvm.mlir.constant({COPY} : i64) : i64
    %zero = llvm.mlir.zero : !llvm.ptr
    llvm.call @relax_cuda_fail(%kc, %code, %zero, %n, %src, %dst, %c0, %c0, %c0) : (i64, i64, !llvm.ptr, {i64x6}) -> ()
    llvm.br ^out
  ^count:
    {_slot("copies", "nc")}    %c1 = llvm.mlir.constant(1 : i64) : i64
    %nc1 = llvm.add %nc, %c1 : i64
    llvm.store %nc1, %ncp : i64, !llvm.ptr
    llvm.call @relax_cuda_topology(%c1) : (i64) -> ()
    llvm.br ^out
  ^out:
    llvm.return
  }}
}}
"""


def link(module) -> list[str]:
    """Define the launch path in ``module`` (a host module lowered to the LLVM dialect):
    declarations of the same functions are replaced; so are those of the cuBLAS matmuls
    (``_mlir_ciface_relax_cublas_matmul_*``), whose names are returned."""
    from mlir import ir

    body = module.body
    for op in list(body.operations):
        o = op.operation
        if o.name == "llvm.func" and ir.StringAttr(o.attributes["sym_name"]).value in DEFINED + tuple(DRIVER_SYMBOLS) \
                + (CHECK_HOOK,):
            if o.regions[0].blocks:
                raise RuntimeError(f"the host module already defines @{ir.StringAttr(o.attributes['sym_name']).value}")
            o.erase()
    library = []
    for op in list(body.operations):
        o = op.operation
        name = ir.StringAttr(o.attributes["sym_name"]).value if "sym_name" in o.attributes else ""
        if o.name == "llvm.func" and name.startswith("_mlir_ciface_" + LIBRARY_PREFIX) and not o.regions[0].blocks:
            library.append((name, library_code(name[len("_mlir_ciface_"):])))
            o.erase()
    text = _text()
    text = text[:text.rstrip().rfind("}")] + _library_text(library) + "}\n"
    rt = ir.Module.parse(text, module.context)
    for op in list(rt.body.operations):
        body.append(op.operation)
    return [name for name, _ in library]


def library_code(callee: str) -> int:
    """The shim's code of a ``relax_cublas_matmul_*`` callee (see cublas_shim.c)."""
    parsed = parse_library_callee(callee)
    if parsed is None:
        raise RuntimeError(f"@{callee}: not a cuBLAS matmul of relax-cuda-dispatch-library")
    ra, rb, din, dout, form, epilogue = parsed
    return (LIBRARY_EPILOGUES.get(epilogue, 0) * 100000 + form * 10000 + ra * 1000 + rb * 100
            + LIBRARY_DTYPE_CODES[din] * 10 + LIBRARY_DTYPE_CODES[dout])


def _library_text(entries: list[tuple[str, int]]) -> str:
    """The ``_mlir_ciface_`` functions: (A, B, C) or, with an epilogue operand E, (A, B, E, C),
    each calling the shim's entry (rt, code, A, B, C, E or null)."""
    if not entries:
        return ""

    def fn(name: str, code: int) -> str:
        extra = parse_library_callee(name[len("_mlir_ciface_"):])[5] in EPILOGUE_OPERAND
        params = "%a: !llvm.ptr, %b: !llvm.ptr, %e: !llvm.ptr, %c: !llvm.ptr" if extra else \
            "%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr"
        null = "" if extra else "\n    %e = llvm.mlir.zero : !llvm.ptr"
        return f"""
  llvm.func @{name}({params}) {{
    %rt = llvm.mlir.addressof @{STATE} : !llvm.ptr
    %code = llvm.mlir.constant({code} : i64) : i64{null}
    llvm.call @{LIBRARY_ENTRY}(%rt, %code, %a, %b, %c, %e) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
    llvm.return
  }}"""
    fns = "".join(fn(name, code) for name, code in entries)
    return f"""
  llvm.func @{LIBRARY_ENTRY}(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr){fns}
"""


__all__ = ["SLOTS", "NSLOTS", "STATE", "DRIVER_SYMBOLS", "CHECK_HOOK", "ALLOC_HOOK", "ARENA_ALIGN", "LIMIT", "LAUNCH", "COPY", "GET_FUNCTION",
           "link"]
