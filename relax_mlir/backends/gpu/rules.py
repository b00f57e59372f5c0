"""GPU schedule rules: one rule per kernel kind, parametric in the element type and sized
for the module's Target (as TVM dlight's ``ScheduleRule.apply(func, target)``).

A rule says which kernels it takes (:attr:`ScheduleRule.kinds`, :meth:`ScheduleRule.dtype`
and the element types the target allows, :meth:`ScheduleRule.dtypes`), declares its knobs
as a :class:`~relax_mlir.tuning.space.Space` (the CPU schedules' tuning hook: a config is
a dict knob -> int, checked before anything is built), gives the untuned choice for the
target (:meth:`ScheduleRule.default`) and rewrites a bufferized kernel
(:meth:`ScheduleRule.apply`) with the launch builders of ``relax_mlir/transforms/gpu``.
What no rule takes keeps the generic fallback: the naive parallel-loop route of
:mod:`relax_mlir.pipelines.gpu` (a thread per output element).

===================  ==========================  =============================================
kind                 rule (knob family)           element types
===================  ==========================  =============================================
output-fusable       :class:`Matmul` (matmul):    f32, f16 (both targets), bf16 (cuda). Sums
                     GEMM tiles for M, N >= min,  in f32 registers, C stored in its own type
                     the GEMV (subgroup shuffles) (f16 x f16 -> f16 with f32 accumulation).
                     for M <= gemv_rows, else a   Integer matmuls: the fallback.
                     thread per element of C
reduction            :class:`Rows` (rows)         f32 (16-bit rows: the fallback)
elementwise,         :class:`Elementwise`         32-bit (f32, i32): 128-bit vector accesses;
broadcast,           (elementwise)                16-bit and 64-bit data: the fallback
injective
===================  ==========================  =============================================

bf16: the launch builders widen any float storage type to f32 (``FLOAT_TYPES`` of tile_matmul),
so :meth:`Matmul.dtypes` lists it on cuda; the vulkan pipeline gives this rule a bf16 matmul as
an f32 one between casts (relax-widen-bf16-matmul) and keeps bf16 as 16-bit integers in SPIR-V
(relax-spirv-bf16-storage).

A kernel without a recorded kind (``relax-opt`` on hand-written kernels) is offered to every
rule in that order. ``relax.schedule_config`` on a kernel (a dictionary of integers, as
relax-apply-schedules records on CPU kernels) overrides knobs of its rule: what a tuner
sets; an invalid value is an error, not a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mlir import ir

from ...target import Target
from . import decode_attention, gemv, mma, mma_tf32, quant_gemm, quant_gemv, row_reductions, tile_matmul, vector_elementwise
from .launch_builder import kernel_kind
from ...tuning.space import Config, Knob, Space

#: the kernel attribute holding tuned knob values (the CPU's relax-apply-schedules name)
CONFIG_ATTR = "relax.schedule_config"


class ScheduleRule:
    """A GPU schedule for one kernel kind (see the module docstring)."""

    #: the rule's name (its knob space: ``gpu_<name>``)
    name: str = ""
    #: the kernel kinds (relax.kernel_kind) the rule takes
    kinds: tuple[str, ...] = ()

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        """The element type the rule would schedule kernel ``fn`` at (None: nothing here
        for this rule)."""
        raise NotImplementedError

    def dtypes(self, target: Target) -> tuple[str, ...]:
        """Element types this rule builds kernels for on ``target``."""
        raise NotImplementedError

    def space(self, target: Target) -> Space:
        raise NotImplementedError

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        """The untuned knob values for ``target`` and ``dtype``."""
        raise NotImplementedError

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        """Rewrite kernel ``fn`` with ``config`` (checked); whether anything was rewritten."""
        raise NotImplementedError


def _first(fn: ir.Operation, names: tuple[str, ...]) -> Optional[ir.Operation]:
    for o in fn.regions[0].blocks[0].operations:
        if o.operation.name in names:
            return o.operation
    return None


def _elem(v: ir.Value) -> Optional[str]:
    return str(ir.ShapedType(v.type).element_type) if isinstance(v.type, ir.ShapedType) else None


def _pow2(v: int) -> bool:
    return v >= 1 and not v & (v - 1)


def subgroup(t: Target) -> Optional[int]:
    """The target's subgroup (warp) width when known and a power of two (the GEMV's shuffle
    width), else None."""
    return t.subgroup_size if t.subgroup_size and _pow2(t.subgroup_size) else None


# -- matmul: GEMM tiles, GEMV, a thread per element ----------------------------------------

def gemv_vector(target: Target, dtype: str) -> int:
    """Columns per GEMV lane, one vector load of B each: 128 bits (4 x f32, 8 x f16 / bf16) on
    cuda; at most 4 components on vulkan (SPIR-V vectors of 8 need the Vector16 capability,
    which Vulkan shaders do not have: f16 loads are 64 bits there)."""
    bits = 16 if dtype in ("f16", "bf16") else 32
    return 128 // bits if target.kind == "cuda" else 4


def _tensor_cores(t: Target) -> bool:
    """The cuda tensor-core routes are offered: on cuda, and on vulkan when they are emulated
    (Target.emulate_mma: relax-emulate-mma runs their warp-level matrix ops)."""
    return t.kind == "cuda" or t.emulate_mma


def _matmul_rule(cfg: Config, t: Target, extents: dict) -> Optional[str]:
    cap, shared = t.max_threads_per_block or None, t.shared_memory_bytes or None   # 0: unknown
    threads = cfg["threads"] * cfg["threads"]
    if cap is not None and threads > cap:
        return f"{threads} threads per GEMM workgroup exceed the target's {cap}"
    tile = cfg["threads"] * cfg["per_thread"]
    if (tile * cfg["tile_k"]) % threads:
        return "threads^2 must divide (threads * per_thread) * tile_k"
    if shared is not None and 2 * tile * cfg["tile_k"] * 4 > shared:
        return f"GEMM blocks of A and B ({2 * tile * cfg['tile_k'] * 4} bytes) exceed {shared} bytes of workgroup memory"
    if "gemv_rows" in cfg:
        sg = subgroup(t)
        if not _pow2(cfg["gemv_lanes"]) or not _pow2(cfg["gemv_k_subgroups"]) or cfg["gemv_lanes"] > sg:
            return f"gemv_lanes and gemv_k_subgroups must be powers of two, gemv_lanes at most the subgroup ({sg})"
        if cap is not None and sg * cfg["gemv_k_subgroups"] > cap:
            return f"{sg * cfg['gemv_k_subgroups']} threads per GEMV workgroup exceed the target's {cap}"
        if cfg["gemv_rows"] >= cfg["min_size"]:
            return "gemv_rows must be below min_size (the GEMM's route comes first)"
    if cfg.get("f16_gemm") == 2:
        return mma_tiles(cfg, t).problem(cap, shared)
    return None


#: the tensor-core GEMM's knobs (f16_gemm=2) and their MmaTiles fields
TC_KNOBS = {"tc_warps_m": "warps_m", "tc_warps_n": "warps_n", "tc_warp_m": "warp_m", "tc_warp_n": "warp_n",
            "tc_tile_k": "tile_k"}


def mma_tiles(cfg: Config, t: Optional[Target] = None) -> mma.MmaTiles:
    """The tensor-core tiles of a matmul config (MmaTiles' defaults for knobs it lacks); staging
    chunks of 8 halves (128 bits) on cuda, 4 elsewhere (SPIR-V vectors of 8 need Vector16,
    which Vulkan shaders lack: the emulated route on vulkan)."""
    vec = 8 if t is None or t.kind == "cuda" else 4
    return mma.MmaTiles(vec=vec, **{f: cfg[k] for k, f in TC_KNOBS.items() if k in cfg})


class Matmul(ScheduleRule):
    """matmul / batch_matmul (+ fill, + elementwise epilogue): ``if M, N >= min_size``: the
    GEMM tiles (:mod:`relax_mlir.backends.gpu.tile_matmul`); ``else if M <= gemv_rows``
    (and B aligned for its vector loads, :func:`gemv_vector`): the GEMV
    (:mod:`relax_mlir.backends.gpu.gemv`);
    else a thread per element of C. One launch per route, the fill and epilogue folded in."""

    name = "matmul"
    kinds = ("output-fusable",)

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        mm = _first(fn, ("linalg.matmul", "linalg.batch_matmul"))
        return _elem(mm.operands[0]) if mm is not None else None

    def dtypes(self, target: Target) -> tuple[str, ...]:
        return ("f32", "f16", "bf16") if target.kind == "cuda" else ("f32", "f16")

    def space(self, target: Target) -> Space:
        """GEMM knobs; with a known subgroup size (the GEMV's shuffle width) the GEMV's too
        (a target without one has no GEMV route)."""
        knobs = (
            Knob("threads", (4, 8, 16), "GEMM: threads per workgroup along x and along y"),
            Knob("per_thread", (2, 4, 8), "GEMM: each thread computes per_thread x per_thread elements of C"),
            Knob("tile_k", (8, 16, 32), "GEMM: K step staged in workgroup memory"),
            Knob("min_size", (16, 32, 64), "M and N from which the GEMM tiles run"),
        )
        if _tensor_cores(target):
            knobs += (
                Knob("f16_gemm", (1, 2), "f16 / bf16 GEMM route: 1 the SIMT tiles, 2 tensor cores (mma.sync "
                                         "m16n8k16 on ldmatrix fragments from workgroup memory: mma.py)"),
                Knob("f32_gemm", (1, 2), "f32 GEMM route: 1 the SIMT tiles, 2 TF32 tensor cores (m16n8k8; "
                                         "inputs at tf32 precision; never chosen by the tuner)", tuned=False),
                Knob("tc_warps_m", (1, 2, 4), "tensor cores: warps per workgroup along M"),
                Knob("tc_warps_n", (1, 2, 4), "tensor cores: warps per workgroup along N"),
                Knob("tc_warp_m", (16, 32, 64), "tensor cores: rows of C per warp"),
                Knob("tc_warp_n", (16, 32, 64), "tensor cores: columns of C per warp"),
                Knob("tc_tile_k", (16, 32, 64), "tensor cores: K step staged in workgroup memory"),
            )
        sg = subgroup(target)
        if sg is not None:
            knobs += (
                Knob("gemv_rows", (1, 2, 4, 8), "M up to which the GEMV runs"),
                Knob("gemv_lanes", tuple(v for v in (1, 2, 4, 8, 16, 32) if v <= sg),
                     "GEMV: lanes along N per subgroup (each a 128-bit load of B: gemv_vector)"),
                Knob("gemv_k_subgroups", (1, 2, 4, 8), "GEMV: subgroups per workgroup splitting K"),
            )
        return Space("gpu_matmul", knobs, _matmul_rule, target)

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        cfg = dict(threads=tile_matmul.MatmulTiles.threads, per_thread=tile_matmul.MatmulTiles.per_thread,
                   tile_k=tile_matmul.MatmulTiles.tile_k, min_size=tile_matmul.MIN_SIZE)
        if _tensor_cores(target):   # off until a device has checked its numerics (docs/gpu.md)
            t = mma.MmaTiles()
            cfg.update(f16_gemm=1, f32_gemm=1,     # f32_gemm: TF32 changes f32 results, only on request
                       tc_warps_m=t.warps_m, tc_warps_n=t.warps_n, tc_warp_m=t.warp_m, tc_warp_n=t.warp_n,
                       tc_tile_k=t.tile_k)
        sg = subgroup(target)
        if sg is None:   # no known subgroup width: no shuffles, no GEMV route
            return cfg
        # a quarter of the lanes along N, 4 columns each: a 32-wide subgroup reads four 128-byte
        # row segments of f32 B per step (coalesced) and sums them with two shuffle steps;
        # several subgroups per workgroup share K on cuda (more loads in flight for short N);
        # on Vulkan one subgroup per workgroup: no barrier (lavapipe's barriers switch coroutines).
        lanes = max(1, sg // 4)
        k_sub = 4 if target.kind == "cuda" else 1
        while sg * k_sub > (target.max_threads_per_block or sg * k_sub):
            k_sub //= 2
        return dict(cfg, gemv_rows=4, gemv_lanes=lanes, gemv_k_subgroups=max(k_sub, 1))

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        tiles = tile_matmul.MatmulTiles(config["threads"], config["per_thread"], config["tile_k"])
        routes = tile_matmul.tiled_routes(tiles, config["min_size"])
        # bf16: nvvm.mma.sync, which relax-emulate-mma does not run (and vulkan has no bf16)
        if config.get("f16_gemm") == 2 and _tensor_cores(target) and (
                dtype == "f16" or dtype == "bf16" and target.kind == "cuda"):
            routes[0] = (tile_matmul.large_guard(config["min_size"]) if len(routes) > 1 else None,
                         mma.build_mma(mma_tiles(config, target)))
        if config.get("f32_gemm") == 2 and dtype == "f32" and _tensor_cores(target):
            routes[0] = (tile_matmul.large_guard(config["min_size"]) if len(routes) > 1 else None,
                         mma_tf32.build_tf32())
        if "gemv_rows" in config and len(routes) > 1:
            g = gemv.GemvTiles(subgroup(target), config["gemv_lanes"], config["gemv_k_subgroups"],
                               config["gemv_rows"], gemv_vector(target, dtype))
            routes.insert(1, (gemv.gemv_guard(g), gemv.build_gemv(g)))
        return tile_matmul.tile_kernel(fn, routes, (dtype,)) > 0


# -- quantized matmul (GGUF blocks) ------------------------------------------------------------

def _quant_rule(cfg: Config, t: Target, extents: dict) -> Optional[str]:
    sg = subgroup(t)
    lanes, subs = cfg["qgemv_lanes_per_block"], cfg["qgemv_subgroups"]
    if not _pow2(lanes) or not _pow2(subs) or lanes > 16 or (sg is not None and lanes > sg):
        return f"qgemv_lanes_per_block must be a power of two up to 16 and the subgroup ({sg})"
    if cfg["qgemv_halves"] not in (1, 2, 4, 8):
        return "qgemv_halves must be 1, 2, 4 or 8 (at most 128 bits per load)"
    if cfg["qgemv_columns"] not in (1, 2, 4, 8):
        return "qgemv_columns must be 1, 2, 4 or 8"
    cap = t.max_threads_per_block or None
    if sg is not None and cap is not None and sg * subs > cap:
        return f"{sg * subs} threads per quantized-GEMV workgroup exceed the target's {cap}"
    if cfg["qgemm"] not in (1, 2):
        return "qgemm must be 1 (the GEMV for every M) or 2 (the GEMM tiles from qgemm_min_rows rows)"
    tiles = tile_matmul.MatmulTiles()
    shared = t.shared_memory_bytes or None
    if cfg["qgemm"] == 2 and cap is not None and tiles.threads ** 2 > cap:
        return f"{tiles.threads ** 2} threads per quantized-GEMM workgroup exceed the target's {cap}"
    blocks = 2 * tiles.tile * tiles.tile_k * 4
    if cfg["qgemm"] == 2 and shared is not None and blocks > shared:
        return f"quantized-GEMM blocks ({blocks} bytes) exceed {shared} bytes of workgroup memory"
    return None


#: M from which a quantized matmul takes the GEMM tiles (quant_gemm.py) instead of the GEMV:
#: where re-decoding the weight per row starts to cost more than a mostly idle 64-row tile
#: (lavapipe, K = 768, N = 2048: the block formats about even at 16 rows, the GEMM 1.5-2x
#: faster at 32; bench/README.md); a GPU's crossover is for bench/gpu_session.sh to measure
QGEMM_MIN_ROWS = 16


class QuantMatmul(ScheduleRule):
    """``relax.quantized_matmul`` kernels (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K rows
    (K-quants: K a multiple of 256, the op's own requirement), f16 and bf16 weights; a
    fused elementwise prologue on x): from ``qgemm_min_rows`` rows of x (an ``scf.if`` on
    the run-time M) the GEMM tiles with the weight decoded into workgroup memory
    (:mod:`relax_mlir.backends.gpu.quant_gemm`); below, a subgroup per output column, lanes
    sharing each weight block (f16 / bf16: each lane loading up to 8 elements as 32-bit
    words; Q5 / K-quants: runs of consecutive weights, one scale per run), one scale per
    block, shuffles (:mod:`relax_mlir.backends.gpu.quant_gemv`). Its "element type" is the
    weight format; it needs a known subgroup size (else the kernel stays a row reduction)."""

    name = "qmatmul"
    kinds = ("reduction",)

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        return quant_gemv.kernel_format(fn)

    def dtypes(self, target: Target) -> tuple[str, ...]:
        return quant_gemv.FORMATS if subgroup(target) is not None else ()

    def space(self, target: Target) -> Space:
        return Space("gpu_qmatmul", (
            Knob("qgemv_lanes_per_block", (1, 2, 4, 8, 16), "block formats: lanes sharing one 32-element weight "
                                                             "block (sub-block of the K-quants)"),
            Knob("qgemv_halves", (1, 2, 4, 8), "f16 / bf16: elements per lane load (8: 128 bits; fewer "
                                               "where K's alignment allows no more)"),
            Knob("qgemv_columns", (1, 2, 4, 8), "f16 / bf16: output columns per subgroup (each element of x "
                                                "loaded once for all of them)"),
            Knob("qgemv_subgroups", (1, 2, 4, 8), "subgroups per workgroup (Q8_0 / Q4: one output column each)"),
            Knob("qgemm", (1, 2), "1: the GEMV for every M; 2: the GEMM tiles (the weight decoded into "
                                  "workgroup memory once per workgroup) from qgemm_min_rows rows of x"),
            Knob("qgemm_min_rows", (2, 4, 8, 16, 32, 64),
                 "M from which the GEMM tiles run (an scf.if on the run-time M; below: the GEMV)"),
        ), _quant_rule, target)

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        # 4 lanes per block: 8 weights each (8 bytes of Q8_0, 4 of Q4); f16 / bf16: 8 elements
        # (a 128-bit load) per lane; 4 warps per block on cuda; one subgroup per workgroup on
        # vulkan (as the GEMV)
        sg = subgroup(target) or 32
        subs = 4 if target.kind == "cuda" else 1
        while sg * subs > (target.max_threads_per_block or sg * subs):
            subs //= 2
        return dict(qgemv_lanes_per_block=min(4, sg), qgemv_halves=8, qgemv_columns=1, qgemv_subgroups=max(subs, 1),
                    qgemm=2, qgemm_min_rows=QGEMM_MIN_ROWS)

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        m = quant_gemv.match(fn)
        if m is None:
            return False
        wide = target.kind == "cuda"
        tiles = quant_gemv.QuantTiles(subgroup(target), config["qgemv_lanes_per_block"], config["qgemv_subgroups"],
                                      wide, config["qgemv_halves"], config["qgemv_columns"])
        if config["qgemm"] == 2 and quant_gemm.takes(fn, m):
            quant_gemm.build(fn, m, tile_matmul.MatmulTiles(), config["qgemm_min_rows"], wide,
                             lambda: quant_gemv.build(fn, m, tiles))
        else:
            quant_gemv.build(fn, m, tiles)
        return True


# -- row kernels ---------------------------------------------------------------------------

def _rows_rule(cfg: Config, t: Target, extents: dict) -> Optional[str]:
    if not _pow2(cfg["threads"]):
        return "threads must be a power of two (tree reductions)"
    if t.max_threads_per_block is not None and cfg["threads"] > t.max_threads_per_block:
        return f"{cfg['threads']} threads per workgroup exceed the target's {t.max_threads_per_block}"
    return None


class Rows(ScheduleRule):
    """Row kernels (softmax, RMSNorm, LayerNorm, reductions over the last axis): a
    workgroup per row below ``workgroup_rows`` rows, a thread per row from there
    (:mod:`relax_mlir.backends.gpu.row_reductions`)."""

    name = "rows"
    #: output-fusable: contractions written as generics (attention's q.k and p.v sums),
    #: which the matmul rule (linalg.matmul only) does not take
    kinds = ("reduction", "output-fusable")

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        """The accumulator's type: the first reduction's output (else the first generic's).
        f32 also for f16 / bf16 data, which the legalized kernels reduce into f32 row buffers,
        reading 16-bit values widened and storing 16-bit results rounded."""
        if _first(fn, ("linalg.matmul", "linalg.batch_matmul")) is not None:
            return None
        gens = [o.operation for o in fn.regions[0].blocks[0].operations if o.operation.name == "linalg.generic"]
        red = [g for g in gens if any(str(t) == row_reductions.REDUCTION for t in g.opview.iterator_types)]
        op = (red or gens or [None])[0]
        return _elem(op.operands[len(op.operands) - 1]) if op is not None else None

    def dtypes(self, target: Target) -> tuple[str, ...]:
        return ("f32",)

    def space(self, target: Target) -> Space:
        return Space("gpu_rows", (
            Knob("threads", (32, 64, 128, 256), "threads per workgroup (a workgroup per row)"),
            Knob("workgroup_rows", (256, 1024, 4096), "rows from which a thread takes a whole row"),
        ), _rows_rule, target)

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        return dict(threads=row_reductions.THREADS, workgroup_rows=row_reductions.WORKGROUP_ROWS)

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        return row_reductions.schedule_kernel(fn, config["threads"], config["workgroup_rows"])


# -- decode attention -----------------------------------------------------------------------

def _attention_rule(cfg: Config, t: Target, extents: dict) -> Optional[str]:
    sg = subgroup(t) or 32
    if t.max_threads_per_block is not None and sg * cfg["attention_splits"] > t.max_threads_per_block:
        return f"{sg * cfg['attention_splits']} threads per workgroup exceed the target's {t.max_threads_per_block}"
    if cfg.get("attention_split") == 2 and not t.multiprocessors:
        return "attention_split=2 needs the target's multiprocessor count (Target.multiprocessors)"
    return None


class DecodeAttention(ScheduleRule):
    """The fused decode attention kernel of relax-gpu-decode-attention: a workgroup per query
    row, ``attention_splits`` subgroups splitting the KV length, online softmax, shuffles;
    above ``attention_chunk`` keys a workgroup per chunk of a row, the last of a row to finish
    combining them (``attention_launches`` = 1; 2: a combining launch)
    (:mod:`relax_mlir.backends.gpu.decode_attention`). Needs a known subgroup size and a
    static head dim that is a multiple of it (at most 16 elements per lane) or divides it
    (:func:`~relax_mlir.backends.gpu.decode_attention.takes`), else the kernel's linalg body
    takes the other routes."""

    name = "attention"
    kinds = ("reduction", "output-fusable")

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        return "f32" if decode_attention.head_dim(fn) is not None else None

    def dtypes(self, target: Target) -> tuple[str, ...]:
        return ("f32",) if subgroup(target) is not None else ()

    def space(self, target: Target) -> Space:
        return Space("gpu_attention", (
            Knob("attention_splits", (1, 2, 4, 8), "subgroups per workgroup, each taking every n-th key"),
            Knob("attention_chunk", (32, 64, 128, 256, 512, 1024, 4096),
                 "keys per workgroup (with attention_split=2: at least): a longer KV length is split "
                 "across workgroups (a second launch combines them), a shorter one is one workgroup per row"),
            Knob("attention_split", (1, 2),
                 "1: chunks of attention_chunk keys; 2: chunks sized at run time from the target's "
                 "multiprocessors (Target.multiprocessors), at least attention_chunk keys"),
            Knob("attention_waves", (1, 2, 4, 8),
                 "attention_split=2: about this many workgroups per multiprocessor over all rows"),
            Knob("attention_launches", (1, 2),
                 "the split across workgroups as 1 launch (the last workgroup of a row to finish, "
                 "found by an atomic counter per row, combines its chunks) or 2 (a combining launch)"),
        ), _attention_rule, target)

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        # lavapipe: one subgroup (its barriers switch coroutines); cuda: 4 warps per row; the
        # split sized from the multiprocessors where the target knows them (cuda's device).
        # One launch on cuda only: on vulkan the workspace lacks the Coherent decoration a
        # device-scope handoff needs on real GPUs, and lavapipe's atomics made it slower
        cuda = target.kind == "cuda"
        return dict(attention_splits=4 if cuda else 1, attention_chunk=256,
                    attention_split=2 if target.multiprocessors else 1, attention_waves=2,
                    attention_launches=1 if cuda else 2)

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        m, sg, d = decode_attention.match(fn), subgroup(target), decode_attention.head_dim(fn)
        if m is None or not decode_attention.takes(d, sg):
            return False
        wgs = config["attention_waves"] * target.multiprocessors if config["attention_split"] == 2 else 0
        decode_attention.build(fn, m, sg, config["attention_splits"], config["attention_chunk"], wgs,
                               config["attention_launches"], "cuda" if target.kind == "cuda" else "vulkan")
        return True


# -- elementwise / broadcast / injective -----------------------------------------------------

def _elementwise_rule(cfg: Config, t: Target, extents: dict) -> Optional[str]:
    if t.max_threads_per_block is not None and cfg["threads"] > t.max_threads_per_block:
        return f"{cfg['threads']} threads per workgroup exceed the target's {t.max_threads_per_block}"
    return None


class Elementwise(ScheduleRule):
    """All-parallel ops on 32-bit and 16-bit float data: consecutive elements per thread with
    vector accesses behind a run-time alignment guard
    (:mod:`relax_mlir.backends.gpu.vector_elementwise`): 4 when a 32-bit buffer is among the
    vector operands (128 bits of it), else :data:`~relax_mlir.backends.gpu.vector_elementwise.HALVES`
    halves (cuda 8: 128 bits; vulkan 4: 64 bits); ops that do not qualify (64-bit data, 16-bit
    integers, transposes) keep the fallback."""

    name = "elementwise"
    kinds = vector_elementwise.KINDS

    def dtype(self, fn: ir.Operation) -> Optional[str]:
        """The first output type among the kernel's ops that the rule takes (each op is
        checked again when it is rewritten: a fused kernel may mix types), else the first
        op's."""
        outs = [_elem(o.operation.operands[len(o.operation.operands) - 1])
                for o in fn.regions[0].blocks[0].operations if o.operation.name in ("linalg.generic", "linalg.copy")]
        return next((t for t in outs if t in ("f32", "i32", "f16", "bf16")), outs[0] if outs else None)

    def dtypes(self, target: Target) -> tuple[str, ...]:
        return ("f32", "i32", "f16", "bf16")

    def space(self, target: Target) -> Space:
        return Space("gpu_elementwise", (Knob("threads", (32, 64, 128, 256), "threads per workgroup"),),
                     _elementwise_rule, target)

    def default(self, target: Target, dtype: str, **hints: int) -> Config:
        return dict(threads=hints.get("workgroup_size", vector_elementwise.THREADS))

    def apply(self, fn: ir.Operation, target: Target, config: Config, dtype: str) -> bool:
        halves = vector_elementwise.HALVES["cuda" if target.kind == "cuda" else "vulkan"]
        return vector_elementwise.schedule_kernel(fn, config["threads"], halves) > 0


#: the rules, in the order a kernel without a recorded kind is offered to them
RULES: tuple[ScheduleRule, ...] = (DecodeAttention(), Matmul(), QuantMatmul(), Rows(), Elementwise())


@dataclass(frozen=True)
class Selection:
    """What :func:`select` chose for a kernel: the rule, the element type, the knob values."""

    rule: ScheduleRule
    dtype: str
    config: Config


def target_key(t: Target) -> str:
    """The tuning database's target key of a GPU target: what the knobs' validity and speed
    depend on (kind, arch, device, subgroup width, threads per workgroup, workgroup memory)."""
    return (f"gpu/{t.kind}/{t.arch or '-'}/{t.chip or '-'}/sg{subgroup(t) or 0}/"
            f"t{t.max_threads_per_block or 0}/smem{t.shared_memory_bytes or 0}")


def kernel_config(fn: ir.Operation) -> Optional[Config]:
    """Tuned knob values recorded on kernel ``fn`` (``relax.schedule_config``), else None."""
    if CONFIG_ATTR not in fn.attributes:
        return None
    return {na.name: ir.IntegerAttr(na.attr).value for na in ir.DictAttr(fn.attributes[CONFIG_ATTR])}


def parse_overrides(text: str) -> Config:
    """``"gemv_lanes=4:gemv_k_subgroups=8"`` -> a dict of ints (ValueError when malformed)."""
    out: Config = {}
    for item in (x.strip() for x in text.split(":")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().lstrip("-").isdigit():
            raise ValueError(f"schedule config: expected knob=integer, got '{item}'")
        out[name.strip()] = int(value)
    return out


def select(fn: ir.Operation, target: Target, config: Optional[Config] = None,
           rules: tuple[ScheduleRule, ...] = RULES, overrides: Optional[Config] = None,
           **hints: int) -> list[Selection]:
    """The rules that schedule kernel ``fn`` on ``target`` ([] : the generic fallback): by
    the kernel's kind (every rule for a kernel without one), then by its element type and
    what the target allows. ``config`` (else the kernel's ``relax.schedule_config``)
    overrides knobs of the first rule selected; ``overrides`` (a compile's
    ``schedule_config``) the knobs of every selected rule that has them. ValueError when the
    result is not a valid point of the rule's space. ``hints``: pipeline choices the defaults
    follow (``workgroup_size``: the elementwise threads)."""
    kind = kernel_kind(fn)
    config = config if config is not None else kernel_config(fn)
    out = []
    for rule in rules:
        if kind is not None and kind not in rule.kinds:
            continue
        dtype = rule.dtype(fn)
        if dtype is None or dtype not in rule.dtypes(target):
            continue
        cfg = rule.default(target, dtype, **hints)
        if overrides:
            cfg = {**cfg, **{k: v for k, v in overrides.items() if k in cfg}}
        if config is not None and not out:
            cfg = {**cfg, **config}
        rule.space(target).check(cfg)
        out.append(Selection(rule, dtype, cfg))
    return out
