"""Transform-dialect schedules per kernel kind, applied by ``relax-apply-schedules``.

:func:`select` reads a kernel (a ``func.func`` marked ``relax.kernel``, on tensors) and
its recorded kind (``relax.kernel_kind``, from relax-annotate-kernel-kinds) and returns
the schedule that fits it, or None (the kernel then goes through plain loops):

* ``matmul``: fill + ``linalg.matmul`` (f32), any of M, N, K symbolic (:mod:`.matmul`);
  ``matmul+elementwise`` for a fused group whose epilogue (bias, activation) follows;
  ``batch_matmul``: ``linalg.batch_matmul``, one batch per ``scf.forall`` iteration;
  ``gemv`` (``gemv+elementwise``, ``batch_gemv``) when M is at most
  ``MatmulConfig.gemv_rows``: static, or the range of a relax-specialize-ranges variant;
  4-row register tiles up to ``MatmulConfig.small_max_m`` rows (likewise; 6 above);
  B packed per K block when M is at least ``MatmulConfig.pack_min_m`` (likewise) and
  N is a multiple of the register tile's columns wider than one tile, or symbolic
  (:func:`.matmul.packs_b`; batch matmuls alike);
* ``elementwise``: all-parallel ``linalg.generic`` chains (elementwise, broadcast),
  vectorized along the innermost dim with a peeled remainder, small static inner dims that
  every operand reads alike (or not at all) merged first (:mod:`.elementwise`);
  ``elementwise_each`` for a kernel of several results (relax-lift-params' BatchNorm folds
  and weight packings): each generic on its own, the packing in register-transposed tiles;
* ``contraction``: a fill + multiply-accumulate ``linalg.generic`` that is no named matmul
  (decode attention's ``sum(q * K)`` scores and ``sum(p * V)`` mix over a symbolic KV
  length), vectorized along the cache's static innermost dim (:mod:`.contraction`);
* ``rows``: row reductions and normalizations (softmax, RMSNorm, LayerNorm): one
  fused, vectorized pass per row (:mod:`.rows`);
* convolutions (:mod:`.conv`, docs/conv.md): ``depthwise`` for the conv2d legalization's
  direct generic with one input channel per group (+ its fused epilogue; :mod:`.depthwise`),
  ``conv`` for the other direct generics, ``conv_direct`` and ``conv_pack`` for
  relax-conv-gemm's direct kernel (register tiles of pixels x a channel block) and its weight
  packing, ``im2col`` and ``permute_rows`` (the NCHW epilogue) for its GEMM route, whose GEMM
  kernel takes the ``matmul`` schedule; ``conv1x1`` (``conv1x1+elementwise``) for its pointwise
  route's batch matmul (the weight shared by the images): the matmul schedule with (image,
  pixel panel) tasks, the fused epilogue by output rows (:mod:`.pointwise`);
  ``pool`` for max/avg pooling (and a conv epilogue fused before it): rows over threads (:mod:`.pool`).

Element types: f32; ``elementwise``, ``rows`` and ``pool`` kernels (a matmul's or a conv's
epilogue included) also take bf16 tensors, which they compute in f32 and store in 16 bits (a
bf16 matmul or conv2d reaches the f32 schedules as an f32 product cast in its epilogue:
relax-widen-bf16-matmul; an input's cast fused in front of an ``im2col`` stays a loop nest beside
the tiled im2col).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from mlir import ir

from .common import apply
from .contraction import contraction_schedule, vector_dim
from .depthwise import depthwise_schedule
from .conv import (blockable_epilogue, conv_direct_schedule, conv_pack_schedule, conv_schedule, direct_tile,
                   drop_pad_guards, im2col_schedule, merge_copy_into_epilogue, permute_rows_schedule)
from .conv_nhwc import CONV_OPS as CONV_NHWC_OPS, conv_nhwc_schedule
from .elementwise import (collapse_group, collapse_inner_dims, collapsed_shape, each_schedule,
                          elementwise_schedule, feeds_pack, plan_op, prepare_each)
from .pointwise import pointwise_epilogue_schedule
from .pool import pool_schedule
from .matmul import config_for, gemv_schedule, gemv_split, matmul_schedule, packs_b, thread_split
from ....target import Simd, host_simd
from ....transforms.graph import on_tensors  # noqa: F401 (re-exported)
from .rows import rows_schedule

#: elementwise and rows schedules on bf16 tensors (False: their plain loops, for
#: bench/bench_bf16.py --ab, which compares the two in one process)
BF16_SCHEDULES = True

KIND_ATTR = "relax.kernel_kind"  # set by relax-annotate-kernel-kinds
RANGE_ATTR = "relax.range"  # {m_min, m_max} of a variant made by relax-specialize-ranges

#: Ops that only compute sizes or constants: they do not decide a schedule.
_NEUTRAL = {"arith.constant", "tensor.dim", "tensor.empty", "func.return"}


@dataclass
class Schedule:
    name: str
    body: Callable[[ir.Value], None]
    #: run on the kernel (its copy) before ``body``: payload ops the script needs handles to
    #: (a threaded GEMV's run-time column chunk, :func:`.matmul.thread_split`)
    prepare: Optional[Callable[[ir.Operation], None]] = None
    #: rows of B ahead that relax-prefetch prefetches in the kernel's streaming loops (0: none)
    prefetch: int = 0
    #: run on the kernel after ``body``'s script (None: the script is all): a Python step, and
    #: scripts of its own (the matmul's masked tiles: :func:`.common.unmasked_lowering`)
    finish: Optional[Callable[[ir.Operation], None]] = None


def payload_ops(fn: ir.Operation) -> list[ir.Operation]:
    """The kernel's ops that do work (size bookkeeping left out)."""
    block = fn.regions[0].blocks[0]
    return [o.operation for o in block.operations
            if o.operation.name not in _NEUTRAL and not _scalar_arith(o.operation)]


def _scalar_arith(op: ir.Operation) -> bool:
    """Scalar arithmetic (sizes, constants such as a norm's 1/N): not work to schedule."""
    return (op.name.startswith(("arith.", "index.", "math."))
            and not any(isinstance(v.type, ir.ShapedType) for v in list(op.operands) + list(op.results)))


def _static(d: int) -> Optional[int]:
    return None if ir.ShapedType.is_dynamic_size(d) else d


def _select_matmul(fn: ir.Operation, ops: list[ir.Operation], target: Simd,
                   config: Optional[dict] = None, threaded: bool = False) -> Optional[Schedule]:
    if [o.name for o in ops[:3]] == ["tensor.collapse_shape"] * 3 and _kernel_op(fn) == "conv_gemm":
        ops = ops[3:]   # relax-conv-gemm's GEMM: weight, im2col and output viewed as matrices
        if [o.name for o in ops[-2:]] == ["tensor.from_elements", "tensor.reshape"]:
            ops = ops[:-2]
    # relax-conv-gemm's NCHW pointwise kernels, and the conv2d legalization's NHWC 1x1
    # (reshapes of its operands, fill + matmul, the product reshaped back)
    pointwise = "conv1x1" in (_kernel_op(fn) or "") or (
        "conv2d" in (_kernel_op(fn) or "") and bool(ops) and ops[0].name in _OPERAND_RESHAPES)
    if pointwise:   # relax-conv-gemm's 1x1 conv: weight, input and output viewed as matrices
        at = next((i for i, o in enumerate(ops) if o.name == "linalg.fill"), None)
        if at is None:
            return None
        fused = _in_place_epilogue(ops, at) and all(o.name in _OPERAND_RESHAPES for o in ops[:at])
        if fused:   # relax-epilogue-in-place's form: ONE region, the product fused into the epilogue's tasks
            ops, at = ops[at:at + 2], 0
        # the product's reshape to NCHW (its shape operand a constant when every size is static)
        back = at + 2 + (len(ops) > at + 2 and ops[at + 2].name == "tensor.from_elements")
        if fused:
            pass
        elif any(o.name not in _OPERAND_RESHAPES for o in ops[:at]) or len(ops) <= back \
                or ops[back].name not in ("tensor.reshape", "tensor.expand_shape"):
            return None
        # the epilogue's operand reshapes (the bias (O,) -> (O, 1, 1): reshape + copy) stay loops
        epi = [] if fused else [o for o in ops[back + 1:] if o.name not in _OPERAND_RESHAPES]
        out = None if fused else _output_shape(ops[back])
        chain = [i for i, g in enumerate(epi) if _output_shape(g) == out]
        if any(o.name != "linalg.generic" or not _f32_tensors(o) or set(_iterators(o)) != {"parallel"}
               for o in epi) or (epi and chain[-1:] != [len(epi) - 1]):
            return None
        pointwise_tail = pointwise_epilogue_schedule(len(epi), chain, out[-1]) if epi else None
        ops = ops[at:at + 2]
    else:
        fused = False
    names = [o.name for o in ops]
    if len(names) < 2 or names[0] != "linalg.fill" or names[1] not in ("linalg.matmul", "linalg.batch_matmul"):
        return None
    mm = ops[1]
    batch = names[1] == "linalg.batch_matmul"
    # a fused group: elementwise ops on the product (bias, activation; relax-epilogue-in-place
    # makes the first one run in place on it, the product computed in the output)
    epilogue = ops[2:]
    if epilogue and _select_elementwise(epilogue, collapse=False) is None:
        return None
    a, b = (ir.RankedTensorType(v.type) for v in list(mm.operands)[:2])
    if not all(isinstance(t.element_type, ir.F32Type) for t in (a, b)):
        return None
    if batch and a.rank == 3 and a.shape[0] != b.shape[0]:
        return None
    m, k = (_static(d) for d in a.shape[-2:])
    n = _static(b.shape[-1])
    cfg = config_for(target)
    if config is not None:
        from ....tuning.space import matmul_config, matmul_space
        if "prefetch" not in config:  # a record tuned before the knob existed: the default distance
            config = dict(config, prefetch=cfg.prefetch)
        matmul_space(target).check(config)
        cfg = matmul_config(config, base=cfg)
    prepare, prefetch = None, 0
    if _max_rows(fn, m) is not None and _max_rows(fn, m) <= cfg.gemv_rows:
        threaded = threaded and gemv_split(n, k, cfg, batch)
        body, finish = gemv_schedule(n, k, cfg, batch=batch, threaded=threaded, rows=_max_rows(fn, m))
        kind = "batch_gemv" if batch else "gemv"
        if threaded:
            cols = cfg.gemv_tile
            prepare = lambda f: thread_split(f, cols)  # noqa: E731
    else:
        hi = _max_rows(fn, m)
        if not batch and hi is not None and hi <= cfg.small_max_m:
            cfg = dataclasses.replace(cfg, rows=cfg.small_rows)
        lo = m if m is not None else _range(fn, "m_min")
        pack = packs_b(n, k, cfg, batch) and lo is not None and lo >= cfg.pack_min_m
        body, finish = matmul_schedule(m, n, k, cfg, batch=batch, pack=pack, batch_panels=pointwise, epilogue=fused)
        kind = "conv1x1" if pointwise else "batch_matmul" if batch else "matmul"
        prefetch = cfg.prefetch
        if k is not None:   # its work for relax-omp-threads' rule: 2*K FLOPs per output element
            prepare = _mark_flops(2 * k)
        if fused:   # the epilogue is in the matmul's tasks (:func:`.pointwise.epilogue_tile`)
            return Schedule("conv1x1+fused", body, prepare, prefetch, finish)
    if pointwise and pointwise_tail is not None:
        epilogue, tail = True, pointwise_tail
    elif not epilogue:
        return Schedule(kind, body, prepare, prefetch, finish)
    else:
        tail = _select_elementwise(epilogue, collapse=False).body
    if finish is not None:  # the epilogue's script after the matmul's last stage

        def finish_fused(fn: ir.Operation) -> None:
            finish(fn)
            apply(fn, tail)

        return Schedule(kind + "+elementwise", body, prepare, prefetch, finish_fused)

    def fused(fn: ir.Value) -> None:
        body(fn)
        tail(fn)

    return Schedule(kind + "+elementwise", fused, prepare, prefetch)


def _mark_flops(per_output: int) -> Callable[[ir.Operation], None]:
    """A ``prepare`` step recording the kernel's FLOPs per output element for relax-omp-threads
    (:data:`..omp_threads.FLOPS_ATTR`: a compute-bound region of few bytes still gets threads)."""
    from ..omp_threads import FLOPS_ATTR

    def prepare(fn: ir.Operation) -> None:
        fn.attributes[FLOPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), per_output)

    return prepare


def _in_place_epilogue(ops: list[ir.Operation], at: int) -> bool:
    """relax-epilogue-in-place's form of a pointwise conv (:func:`..epilogue_in_place.in_place_collapsed`):
    fill (``ops[at]``), batch matmul, operand reshapes, ONE all-parallel f32 generic whose
    destination is the product, then the expand_shape of its result to NCHW."""
    if len(ops) < at + 4 or ops[at + 1].name != "linalg.batch_matmul" or ops[-1].name != "tensor.expand_shape":
        return False
    mid = ops[at + 2:-1]
    gens = [o for o in mid if o.name == "linalg.generic"]
    if len(gens) != 1 or any(o.name not in _OPERAND_RESHAPES for o in mid if o.name != "linalg.generic"):
        return False
    g = gens[0]
    return (len(g.results) == 1 and g.opview.outputs[0] == ops[at + 1].results[0] and _f32_tensors(g)
            and set(_iterators(g)) == {"parallel"} and ops[-1].operands[0] == g.results[0])


#: Reshaping ops a contraction kernel may start with (the slice and ``expand_dims`` of the
#: probabilities in the mix).
_CONTRACTION_PROLOGUE = {"tensor.reshape", "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
                         "tensor.from_elements", "linalg.copy"}


def _select_contraction(ops: list[ir.Operation]) -> Optional[Schedule]:
    """Reshapes, then one fill and one f32 multiply-accumulate generic (projected-
    permutation maps: no convolution windows) on the fill's result."""
    if len(ops) < 2 or ops[-1].name != "linalg.generic" or ops[-2].name != "linalg.fill":
        return None
    if any(o.name not in _CONTRACTION_PROLOGUE for o in ops[:-2]):
        return None
    gen, fill = ops[-1], ops[-2]
    if not _f32_tensors(gen) or gen.opview.outputs[0] != fill.results[0]:
        return None
    for a in gen.opview.indexing_maps:
        for e in ir.AffineMapAttr(a).value.results:
            if not (isinstance(e, ir.AffineDimExpr)
                    or (isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value == 0)):
                return None
    vd = vector_dim(gen)
    if vd is None:
        return None
    return Schedule("contraction", contraction_schedule(_iterators(gen), *vd))


def _kernel_op(fn: ir.Operation) -> Optional[str]:
    return ir.StringAttr(fn.attributes["relax.kernel_op"]).value if "relax.kernel_op" in fn.attributes else None


def _is_window(op: ir.Operation) -> bool:
    """A generic with a reduction and an input indexed by a sum of loops (a sliding window)."""
    if op.name != "linalg.generic" or "reduction" not in _iterators(op):
        return False
    return any(isinstance(e, ir.AffineBinaryExpr)
               for a in op.opview.indexing_maps for e in ir.AffineMapAttr(a).value.results)


#: What precedes a convolution's generic: the padded copy of the input (fill + copy into
#: the interior slice, or tensor.pad) and the accumulator's fill.
_PADDING = {"linalg.fill", "tensor.extract_slice", "linalg.copy", "tensor.insert_slice", "tensor.pad",
            "tensor.expand_shape", "linalg.transpose"}   # + a strided depthwise conv's phase split


#: Ops a fused conv kernel may hold that only reshape another operand (not the conv's result).
_OPERAND_RESHAPES = {"tensor.reshape", "linalg.copy", "tensor.expand_shape", "tensor.collapse_shape",
                     "tensor.from_elements"}


def _im2col(ops: list[ir.Operation]) -> bool:
    """relax-conv-gemm's im2col kernel: padding, reshapes of the destination, one generic."""
    names = [o.name for o in ops]
    return names.count("linalg.generic") == 1 and set(names) <= _PADDING | {
        "linalg.generic", "tensor.expand_shape", "tensor.collapse_shape"}


def _select_conv_direct(fn: ir.Operation, ops: list[ir.Operation], target: Simd) -> Optional[Schedule]:
    """relax-conv-gemm's direct kernel (f32; ``relax.kernel_op`` naming conv_direct): the conv
    generic on an (N, O/B, OH, OW, B) accumulator, its copy to the (N, O/B, B, OH, OW) view of
    the output and a fused epilogue (all-parallel generics of the NCHW output's shape on the
    copy's collapsed result, which :func:`.conv.merge_copy_into_epilogue` merges with the copy
    before the script), possibly with parameter generics that do not read the conv (an
    unfolded BatchNorm's per-channel scale and shift): :func:`.conv.conv_direct_schedule`."""
    if "conv_direct" not in (_kernel_op(fn) or ""):
        return None
    gens = [o for o in ops if o.name == "linalg.generic"]
    at = [k for k, g in enumerate(gens) if _iterators(g) in (["parallel"] * 5 + ["reduction"],
                                                           ["parallel"] * 5 + ["reduction"] * 2)]
    # (the conv f32; its epilogue may cast to bf16 and compute in bf16: relax-widen-bf16-matmul)
    if len(at) != 1 or not _f32_tensors(gens[at[0]]) or not all(_f32_tensors(g, bf16=True) for g in gens):
        return None
    conv = gens[at[0]]
    n, nb, oh, ow, b = _output_shape(conv)
    if b is None or nb is None:
        return None
    derived, chain = {ir.Value(conv.results[0])}, []
    for o in ops:   # (the copy's result reaches the epilogue through a collapse_shape)
        if o.name == "tensor.collapse_shape" and ir.Value(o.operands[0]) in derived:
            derived.add(ir.Value(o.results[0]))
        elif o.name == "linalg.generic" and (k := gens.index(o)) > at[0] and any(
                ir.Value(v) in derived for v in o.operands):
            derived.update(ir.Value(r) for r in o.results)
            chain.append(k)
    params = [k for k in range(len(gens)) if k != at[0] and k not in chain]
    # the copy to NCHW on the (N, O/B, B, OH, OW) view of the output, then the epilogue: on
    # NCHW, or on that view too where upstream fusion propagated the reshape (identity maps)
    blocked, nchw = [n, nb, b, oh, ow], [n, nb * b, oh, ow]
    shapes = [_output_shape(gens[k]) for k in chain[1:]]
    # a widened bf16 conv's cast back (upstream fusion put it on the view), then the rest of
    # the epilogue on NCHW: those are rebuilt on the view too (merge_copy_into_epilogue)
    mixed = (blocked in shapes and nchw in shapes and shapes == sorted(shapes, key=lambda s: s != blocked)
             and all(blockable_epilogue(gens[k], derived) for k, s in zip(chain[1:], shapes) if s == nchw))
    if (not chain or _output_shape(gens[chain[0]]) != blocked
            or (len({str(sh) for sh in shapes}) > 1 and not mixed)
            or any(_output_shape(gens[k]) not in (blocked, nchw) or set(_iterators(gens[k])) != {"parallel"}
                   for k in chain) or any(k > chain[-1] for k in params)):
        return None
    init = conv.operands[len(conv.opview.inputs)]
    if not isinstance(init, ir.OpResult) or init.owner.name != "linalg.fill":
        return None
    pixels, _ = direct_tile(b, target.lanes, target.registers)
    padded = any(o.name == "tensor.pad" for o in ops)
    n_gens, prepare = len(gens), None
    if mixed:   # the NCHW tail rebuilt on the view; the copy and the cast stay generics of their own
        prepare = merge_copy_into_epilogue
    elif len(chain) > 1 and _output_shape(gens[chain[1]]) == nchw:   # the copy merged into the
        # epilogue, all of it over (n, ob, oi, oh, ow)
        if not all(blockable_epilogue(gens[k], derived) for k in chain[1:]):
            return None
        n_gens, prepare = n_gens - 1, merge_copy_into_epilogue
        chain = [k - 1 for k in chain[1:]]
    return Schedule("conv_direct", conv_direct_schedule(n_gens, pixels, b, len(conv.opview.inputs), ow,
                                                        conv_at=at[0], chain=chain, lanes=target.lanes,
                                                        padded=padded, reductions=_iterators(conv).count("reduction")),
                    prepare=prepare, finish=drop_pad_guards if padded else None)


def _select_conv_pack(fn: ir.Operation, ops: list[ir.Operation], target: Simd) -> Optional[Schedule]:
    """relax-conv-gemm's weight packing (``relax.kernel_op`` ending in conv_pack), possibly
    after fused all-parallel generics: :func:`.conv.conv_pack_schedule`."""
    if not (_kernel_op(fn) or "").endswith("conv_pack"):
        return None
    gens = [o for o in ops if o.name == "linalg.generic"]
    if len(gens) != len(ops) - sum(o.name in _OPERAND_RESHAPES for o in ops) \
            or any(set(_iterators(g)) != {"parallel"} for g in gens) or len(_iterators(gens[-1])) != 3:
        return None
    _, k, block = _output_shape(gens[-1])
    if k is None or block is None:
        return None
    return Schedule("conv_pack", conv_pack_schedule(len(gens), target.lanes, k, block))


def _select_conv(ops: list[ir.Operation]) -> Optional[Schedule]:
    """The padded input, the accumulator's fill, the conv2d legalization's direct generic
    (f32), then all-parallel f32 generics of the output's shape (a fused epilogue): :mod:`.conv`."""
    names = [o.name for o in ops]
    i = next((j for j, o in enumerate(ops) if _is_window(o)), None)
    if i is None or i == 0 or names[i - 1] != "linalg.fill" or not set(names[:i]) <= _PADDING:
        return None
    conv = ops[i]
    if not _f32_tensors(conv):
        return None
    # the epilogue: generics on the conv's result; besides them only reshapes of other
    # operands (a bias (O,) -> (O, 1, 1): tensor.reshape + its copy) that stay outside the rows
    derived, tail = {ir.Value(conv.results[0])}, []
    for o in ops[i + 1:]:
        if any(ir.Value(v) in derived for v in o.operands):
            derived.update(ir.Value(r) for r in o.results)
            tail.append(o)
        elif o.name not in _OPERAND_RESHAPES:
            return None
    shape = _output_shape(conv)
    if len(shape) != 4 or any(o.name != "linalg.generic" or not _f32_tensors(o, bf16=True)
                              or _output_shape(o) != shape or set(_iterators(o)) != {"parallel"} for o in tail):
        return None
    its = _iterators(conv)
    lead = next((j for j, t in enumerate(its) if t != "parallel"), len(its) - 1)
    rank = len(_iterators(tail[-1])) if tail else len(its)
    xmap = ir.AffineMapAttr(conv.opview.indexing_maps[0]).value.results[-1]
    unit = "*" not in str(xmap)   # the input column advances by 1 per output column
    if unit and ir.RankedTensorType(conv.operands[1].type).shape[1] == 1:   # depthwise: its own schedule
        pre = names[:i]
        body, finish = depthwise_schedule(lead, rank, 1 + len(tail), len(its),
                                          out_hw=tuple(shape[2:]), out_nc=tuple(shape[:2]),
                                          in_task=("split" if "linalg.transpose" in pre   # ops/nn.py's _phase_split
                                                   else "pad" if "tensor.pad" in pre else None),
                                          sw=ir.RankedTensorType(conv.operands[0].type).shape[3]
                                          if "linalg.transpose" in pre else 1,
                                          in_w=_input_width(ops[:i]))
        return Schedule("depthwise", body, finish=finish)
    if "linalg.transpose" in names[:i]:
        return None
    return Schedule("conv", conv_schedule(lead, rank, 1 + len(tail), len(its), unit))


def _input_width(pre: list[ir.Operation]):
    """The static width of the input a conv's padding copies (None: symbolic or no padding)."""
    pad = next((o for o in pre if o.name == "tensor.pad"), None)
    if pad is None:
        return None
    w = ir.RankedTensorType(pad.operands[0].type).shape[-1]
    return None if ir.ShapedType.is_dynamic_size(w) else w


def _select_conv_nhwc(ops: list[ir.Operation], target: Simd) -> Optional[Schedule]:
    """A channels-last conv kernel (f32): the padded input (fill + copy into the interior),
    the accumulator's fill, ``linalg.conv_2d_nhwc_hwcf`` or ``depthwise_conv_2d_nhwc_hwc``
    with static channels that fill whole vectors, then all-parallel generics of its output's
    shape (a fused epilogue; other operands' reshapes aside): :mod:`.conv_nhwc`."""
    names = [o.name for o in ops]
    at = [i for i, n in enumerate(names) if n in CONV_NHWC_OPS]
    # (a depthwise weight's collapse to (KH, KW, C) may follow the accumulator's fill)
    if len(at) != 1 or "linalg.fill" not in names[:at[0]] \
            or not set(names[:at[0]]) <= _PADDING | {"tensor.collapse_shape"}:
        return None
    conv = ops[at[0]]
    if not _f32_tensors(conv):
        return None
    shape = _output_shape(conv)
    cin = _static(ir.RankedTensorType(conv.operands[0].type).shape[3])
    if len(shape) != 4 or shape[3] is None or shape[3] % target.lanes or cin is None:
        return None
    tail = ops[at[0] + 1:]
    epi = [o for o in tail if o.name not in _OPERAND_RESHAPES]
    if any(o.name != "linalg.generic" or not _f32_tensors(o) or _output_shape(o) != shape
           or set(_iterators(o)) != {"parallel"} for o in epi):
        return None
    depthwise = conv.name == "linalg.depthwise_conv_2d_nhwc_hwc"
    padded = "linalg.copy" in names[:at[0]]
    return Schedule("conv_nhwc", conv_nhwc_schedule(depthwise, len(epi), padded, shape[2], target.lanes, cin))


def _permute_rows_parts(ops: list[ir.Operation]) -> Optional[tuple[int, int, int]]:
    """``(rank, parameter generics, epilogue generics)`` of a conv GEMM's epilogue kernel, or
    None: ``linalg.transpose`` ops that keep the last dim (rank >= 2; the first op; a block
    ending in a strided shortcut adds its conv's transpose), reshapes of other operands,
    lower-rank generics on other operands only (an unfolded BatchNorm's per-channel scale and
    shift: a few hundred elements, left outside the rows), and all-parallel f32 generics of
    the transposes' output shape on their results."""
    if not ops or ops[0].name != "linalg.transpose":
        return None
    shape = _output_shape(ops[0])
    rank = len(shape)
    derived, gens, params = set(), [], 0
    for o in ops:
        if o.name == "linalg.transpose":
            perm = list(ir.DenseI64ArrayAttr(o.attributes["permutation"]))
            if (len(perm) < 2 or perm[-1] != len(perm) - 1 or not _f32_tensors(o) or _output_shape(o) != shape
                    or gens):
                return None
            derived.add(ir.Value(o.results[0]))
        elif any(ir.Value(v) in derived for v in o.operands):
            if (o.name != "linalg.generic" or not _f32_tensors(o, bf16=True) or _output_shape(o) != shape
                    or set(_iterators(o)) != {"parallel"}):
                return None
            derived.update(ir.Value(r) for r in o.results)
            gens.append(o)
        elif o.name == "linalg.generic" and not gens and len(_output_shape(o)) < rank:
            params += 1
        elif o.name not in _OPERAND_RESHAPES:
            return None
    if len([o for o in ops if o.name == "linalg.generic"]) != len(gens) + params:
        return None
    return rank, params, len(gens)


def _select_permute_rows(ops: list[ir.Operation]) -> Optional[Schedule]:
    """A conv GEMM's epilogue after relax-fuse-ops (:func:`_permute_rows_parts`):
    :func:`.conv.permute_rows_schedule`."""
    parts = _permute_rows_parts(ops)
    if parts is None:
        return None
    rank, params, gens = parts
    return Schedule("permute_rows", permute_rows_schedule(rank, gens, params=params))


def _select_pool(fn: ir.Operation, ops: list[ir.Operation]) -> Optional[Schedule]:
    """The pooling legalization's kernel (f32, or bf16: the tiling is the same, the arithmetic
    emulated in f32, a max exactly and an avg's sums in f32): an optional conv-epilogue prologue (a
    ``linalg.transpose``, then all-parallel generics of its output's shape), the padding
    (fill + copy into the interior slice), then the window's all-parallel rank-4 generics
    over strided slices: :func:`.pool.pool_schedule`."""
    op = _kernel_op(fn) or ""
    while op.endswith("_astype"):   # a cast after the pool (to the next widened conv's f32) joins its column stage
        op = op[:-len("_astype")]
    if not op.endswith(("max_pool2d", "avg_pool2d")):
        return None
    names = [o.name for o in ops]
    transpose = bool(names) and names[0] == "linalg.transpose"
    start = 1 if transpose else 0
    padded = "linalg.fill" in names and "tensor.insert_slice" in names
    edge = names.index("linalg.fill") if padded else next(
        (i for i, n in enumerate(names) if n == "tensor.extract_slice"), None)
    if edge is None or edge < start:
        return None
    pre, rest = ops[start:edge], ops[edge:]
    shape = _output_shape(ops[0]) if transpose else None
    if transpose and not _f32_tensors(ops[0], bf16=True):
        return None
    # reshapes of other operands in the prologue (a bias (O,) -> (1, O, 1, 1): reshape + copy)
    # stay outside the rows, as in permute_rows
    reshapes = [o for o in pre if o.name in _OPERAND_RESHAPES]
    if any(isinstance(v, ir.OpResult) and v.owner.name.startswith("linalg.") and v.owner.name != "linalg.copy"
           for o in reshapes for v in o.operands):
        return None
    pre = [o for o in pre if o.name not in _OPERAND_RESHAPES]
    if pre and (not transpose or any(o.name != "linalg.generic" or _output_shape(o) != shape for o in pre)):
        return None
    allowed = {"linalg.fill", "tensor.extract_slice", "linalg.copy", "tensor.insert_slice", "linalg.generic"}
    if any(o.name not in allowed for o in rest) or [o.name for o in rest].count("linalg.copy") > (1 if padded else 0) \
            or [o.name for o in rest].count("linalg.fill") > 1:
        return None
    pool = [o for o in rest if o.name == "linalg.generic"]
    if not pool or any(not _f32_tensors(o, bf16=True) or set(_iterators(o)) != {"parallel"} or len(_output_shape(o)) != 4
                       for o in pre + pool):
        return None
    return Schedule("pool", pool_schedule(len(pre), transpose, padded, len(pool),
                                          copies_before=[o.name for o in reshapes].count("linalg.copy")))


def _max_rows(fn: ir.Operation, m: Optional[int]) -> Optional[int]:
    """The largest M the kernel runs at: static M, or the ``m_max`` of its range (a
    relax-specialize-ranges variant); None when unbounded."""
    return m if m is not None else _range(fn, "m_max")


def _range(fn: ir.Operation, bound: str) -> Optional[int]:
    """``bound`` (``m_min``, ``m_max``) of the kernel's range of M (a relax-specialize-ranges
    variant), None when it has none."""
    if RANGE_ATTR in fn.attributes:
        rng = ir.DictAttr(fn.attributes[RANGE_ATTR])
        if bound in rng:
            return ir.IntegerAttr(rng[bound]).value
    return None


def pack_min_rows(fn: ir.Operation, target: Optional[Simd] = None) -> Optional[int]:
    """The smallest M from which kernel ``fn``'s matmul schedule packs B (it then wants a
    range variant of its own, relax-specialize-ranges), or None when it never does (or
    ``fn`` is not :func:`on_tensors`)."""
    if not on_tensors(fn):
        return None
    ops = payload_ops(fn)
    mm = next((o for o in ops if o.name in ("linalg.matmul", "linalg.batch_matmul")), None)
    if mm is None:
        return None
    a, b = (ir.RankedTensorType(v.type) for v in list(mm.operands)[:2])
    cfg = config_for(target or host_simd())
    if packs_b(_static(b.shape[-1]), _static(a.shape[-1]), cfg, mm.name == "linalg.batch_matmul"):
        return cfg.pack_min_m
    return None


def small_max_rows(fn: ir.Operation, target: Optional[Simd] = None) -> Optional[int]:
    """The largest M up to which kernel ``fn``'s matmul schedule uses the small-M register
    tiles (``MatmulConfig.small_rows``: a range variant of its own, relax-specialize-ranges),
    or None when it has none (a batch matmul: unmeasured; a kernel not :func:`on_tensors`)."""
    if not on_tensors(fn):
        return None
    mm = next((o for o in payload_ops(fn) if o.name in ("linalg.matmul", "linalg.batch_matmul")), None)
    if mm is None or mm.name == "linalg.batch_matmul":
        return None
    cfg = config_for(target or host_simd())
    return cfg.small_max_m if cfg.small_max_m > cfg.gemv_rows else None


def _iterators(op: ir.Operation) -> list[str]:
    return [str(t).split("<")[-1].rstrip(">") for t in op.opview.iterator_types]


def _f32_tensors(op: ir.Operation, bf16: bool = False) -> bool:
    """Every operand and result an f32 tensor (or bf16 with ``bf16``: computed in f32, stored
    in 16 bits, cast by relax-bf16-casts)."""
    kinds = (ir.F32Type, ir.BF16Type) if bf16 and BF16_SCHEDULES else ir.F32Type
    return all(isinstance(v.type, ir.RankedTensorType) and isinstance(v.type.element_type, kinds)
               for v in list(op.operands) + list(op.results))


def _output_shape(op: ir.Operation) -> list[Optional[int]]:
    return [_static(d) for d in ir.RankedTensorType(op.results[0].type).shape]


def _select_elementwise(ops: list[ir.Operation], target: Optional[Simd] = None,
                        config: Optional[dict] = None, collapse: bool = True) -> Optional[Schedule]:
    """A chain of all-parallel generics on f32 (identity output maps). ``collapse``: small
    static inner dims are merged first (:func:`.elementwise.collapse_group`), so (O, C, 3, 3)
    times a per-O scale runs as (O, C*9) (not for a matmul's epilogue: its script is the
    matmul's)."""
    if not ops or any(o.name != "linalg.generic" or not _f32_tensors(o, bf16=True) for o in ops):
        return None
    if any(set(_iterators(o)) != {"parallel"} for o in ops):
        return None
    shape = _output_shape(ops[-1])
    if not shape or any(_output_shape(o) != shape for o in ops):
        return None
    group = collapse_group(ops) if collapse else None
    prepare = None
    if group is not None:
        shape = collapsed_shape(shape, group)
        n_ops = len(ops)

        def prepare(fn: ir.Operation) -> None:
            gens = [o for o in payload_ops(fn) if o.name == "linalg.generic"]
            if len(gens) != n_ops:
                raise ValueError("elementwise: the kernel's copy has another number of generics")
            collapse_inner_dims([(g, group) for g in gens])
    if shape[-1] is not None and shape[-1] < 16:
        return None  # too narrow to vectorize along; LLVM's loop vectorizer does better
    width = None
    if config is not None:
        from ....tuning.space import elementwise_space
        elementwise_space(target or host_simd()).check(config, inner=shape[-1])
        width = config["width"]
    return Schedule("elementwise", elementwise_schedule(len(shape), shape[-1], len(ops), width), prepare)


def _select_each(ops: list[ir.Operation], target: Simd) -> Optional[Schedule]:
    """A kernel of f32 all-parallel generics, fills and operand reshapes (several results): each
    elementwise generic and each weight packing scheduled on its own (:func:`.elementwise.each_schedule`);
    None when none of them can be."""
    if any(o.name not in ("linalg.generic", "linalg.fill") and o.name not in _OPERAND_RESHAPES for o in ops):
        return None
    gens = [o for o in ops if o.name == "linalg.generic"]
    if any(not _f32_tensors(g) or set(_iterators(g)) != {"parallel"} for g in gens):
        return None
    plans = [plan_op(g) for g in gens]
    plan, groups = [p for p, _ in plans], [g for _, g in plans]
    for i, g in enumerate(gens):   # a BatchNorm's W * s computed in its packing's tiles
        if plan[i] is not None and plan[i][0] == "ew" and feeds_pack(g, groups[i]) is not None:
            plan[i] = ("fused",)
    if all(p is None for p in plan):
        return None
    return Schedule("elementwise_each", each_schedule(plan, target.lanes), prepare_each(plan, groups))


def _select_rows(ops: list[ir.Operation], target: Optional[Simd] = None,
                 config: Optional[dict] = None) -> Optional[Schedule]:
    """fill + reduction-over-the-last-dim generics, then an all-parallel generic (f32)."""
    if not ops or ops[-1].name != "linalg.generic" or set(_iterators(ops[-1])) != {"parallel"}:
        return None
    shape = _output_shape(ops[-1])
    if not shape or not _f32_tensors(ops[-1], bf16=True):
        return None
    rank, reductions = len(shape), []
    if rank < 2:
        return None  # one row: no loop to distribute (tiling it asserts in MLIR 22)
    for o in ops:
        if o.name == "linalg.fill":
            continue
        if o.name != "linalg.generic" or not _f32_tensors(o, bf16=True):
            return None
        it = _iterators(o)
        if it != ["parallel"] * rank and it != ["parallel"] * (rank - 1) + ["reduction"]:
            return None
        reductions.append(it[-1] == "reduction")
    chunk = None
    if config is not None:
        from ....tuning.space import rows_space
        rows_space(target or host_simd()).check(config, row=shape[-1])
        chunk = config["chunk"]
    return Schedule("rows", rows_schedule(rank, shape[-1], [o.name for o in ops], reductions, chunk))


def _uniform_reduction(op: ir.Operation) -> bool:
    """A ``linalg.generic`` with a reduction dim whose yielded value does not depend on any
    input element nor on ``linalg.index`` (``out + c`` once upstream fusion folded a
    constant input away). MLIR 22's vectorizer combines such a value ONCE per vector instead
    of once per reduced element (sum of 1.0 over a row of 2 gave 1.0: long fuzz seed
    43001361); plain loops compute it right."""
    if op.name != "linalg.generic" or "reduction" not in _iterators(op):
        return False
    block = op.regions[0].blocks[0]
    n_in = len(op.opview.inputs)
    varying = {ir.Value(a) for a in list(block.arguments)[:n_in]}
    for o in block.operations:
        o = o.operation
        if o.name == "linalg.index" or any(ir.Value(v) in varying for v in o.operands):
            varying.update(ir.Value(r) for r in o.results)
        if o.name == "linalg.yield":
            return not all(ir.Value(v) in varying for v in o.operands)
    return True


def _empty(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType) and 0 in list(t.shape)


def select(fn: ir.Operation, target: Optional[Simd] = None,
           config: Optional[dict] = None, threaded: bool = False) -> Optional[Schedule]:
    """The schedule for kernel ``fn`` on ``target`` (default: the host), or None when no
    schedule fits it. ``config``: knob values overriding the defaults (a tuned config,
    :mod:`relax_mlir.tuning.space`, for the family of the schedule that fits); an
    invalid one raises ValueError before anything is applied. ``threaded``: the parallel
    loops will run on OpenMP threads (relax-omp-threads), so a GEMV splits its columns in
    one chunk per thread, sized at run time."""
    target = target or host_simd()
    if not on_tensors(fn):
        return None  # a kernel on memrefs: plain loops (the schedules read tensor types)
    ops = payload_ops(fn)
    if any(_empty(v.type) for o in ops for v in list(o.operands) + list(o.results)):
        return None  # a static 0 dim: nothing to tile (tiling it asserts in MLIR 22); loops do nothing
    if any(_uniform_reduction(o) for o in ops):
        return None  # vectorizing it would combine the value once per vector (see _uniform_reduction)
    kind = ir.StringAttr(fn.attributes[KIND_ATTR]).value if KIND_ATTR in fn.attributes else None
    if len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results) != 1:
        # multi-output fused kernels: a fused tiled loop returned them swapped (fuzz seed
        # 13000211); each generic on its own instead (relax-lift-params' weight transforms)
        return _select_each(ops, target) if kind in ("injective", "elementwise", "broadcast") and config is None \
            else None
    if "conv_direct" in (_kernel_op(fn) or "") and config is None:   # (whatever its fused epilogue's kind)
        return _select_conv_direct(fn, ops, target)
    if kind == "output-fusable":
        sched = _select_matmul(fn, ops, target, config, threaded)
        if sched is not None or config is not None:
            return sched
        return _select_conv_nhwc(ops, target) or _select_conv(ops) or _select_contraction(ops)
    if kind == "injective" and _select_conv_pack(fn, ops, target) is not None:
        return _select_conv_pack(fn, ops, target)
    if kind == "injective" and _select_pool(fn, ops) is not None:
        return _select_pool(fn, ops)
    if kind == "injective" and _select_permute_rows(ops) is not None:
        return _select_permute_rows(ops)
    if kind == "injective" and (_kernel_op(fn) or "").endswith("_im2col"):
        gen_at = [j for j, o in enumerate(ops) if o.name == "linalg.generic"]
        if len(gen_at) >= 2:
            k = gen_at[-2] + 1   # the epilogue ends with its last generic; the im2col follows
            head = _permute_rows_parts(ops[:k])
            if head is not None and _im2col(ops[k:]):
                rank, params, gens = head
                return Schedule("permute_rows+im2col",
                                permute_rows_schedule(rank, gens, then_im2col=True, params=params))
    if kind == "injective" and _kernel_op(fn) == "im2col" and _im2col(ops):
        return Schedule("im2col", im2col_schedule())
    if kind == "injective" and _kernel_op(fn) == "astype_im2col" and ops and ops[0].name == "linalg.generic" \
            and set(_iterators(ops[0])) == {"parallel"} and _f32_tensors(ops[0], bf16=True) and _im2col(ops[1:]):
        return Schedule("im2col", im2col_schedule(before=1))   # a widened bf16 conv's input cast first
    if kind in ("elementwise", "broadcast"):
        return _select_elementwise(ops, target, config)
    if kind == "reduction":
        return _select_rows(ops, target, config)
    return None


__all__ = ["Schedule", "select", "apply", "on_tensors", "payload_ops", "pack_min_rows", "small_max_rows"]
