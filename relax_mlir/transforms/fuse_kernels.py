"""relax-fuse-kernels: merge each fusion group's kernels into ONE kernel and ONE call_tir.

For each group marked by relax-fuse-ops (``relax.fusion_group = N``) the pass builds,
with the typed upstream builders (``func.FuncOp``, ``func.CallOp``, ``tensor.EmptyOp``,
``tensor.DimOp``, ``tensor.CastOp``), a new kernel in destination-passing style:

* arguments: the group's inputs (values defined outside it, each once), its outputs
  (member results used outside the group, e.g. by the return or another group), then
  ``index`` scalars for the members' ``tir_vars`` and for the dims of intermediates
  that no argument carries;
* body: one ``func.call`` per member kernel, in program order; an intermediate result
  is written into a ``tensor.empty`` whose dynamic sizes are read with ``tensor.dim``
  from an argument with the same symbolic dim (the ``#relax.shape`` encodings of the
  graph values say which), else passed in as an extra tir_var;
* then, in a scratch module holding only this kernel (public there, so the inliner keeps
  it) and clones of the members, upstream ``inline`` (member bodies land in the new
  kernel) and ``canonicalize``; every all-parallel ``linalg.generic`` that reads its
  ``outs`` is made to read them as inputs (:func:`read_inits_as_inputs`: else upstream
  fusion into a broadcasting consumer re-reads, and re-accumulates, the init); then
  ``linalg-fuse-elementwise-ops`` (elementwise producers fuse into their consumers, so
  intermediates disappear where legal), ``canonicalize`` and ``cse``.

The group is then replaced by one ``relax.call_tir`` at the place of its last member
(inputs, outputs and tir_vars as above; ops are re-ordered topologically when an
outside user of an output sat between members); member kernels nothing calls any more
are erased. The new kernel is marked ``relax.kernel``, classified again
(``relax.kernel_kind``) and records its members' ops in ``relax.kernel_op``.

Kernel identity is structural (:func:`~.kernel_hash.structural_hash`): groups whose
unfused kernels hash alike share one fused kernel without fusing again, and a fused
kernel equal to one made before (other member names, same IR) is not added twice. Names
are only for reading: ``fused_`` + the members' ``relax.kernel_op`` (recorded by
relax-legalize: ``fused_matmul_add_relu``), or their symbols for hand-written kernels.

Options (the GPU pipelines turn the first three on; :mod:`.fuse_multi_output`): after
upstream fusion ``unit-reshapes=true`` folds reshapes that only add or drop unit dims into
their readers' indexing maps (upstream fusion then takes the producer), ``multi-use=true``
merges an elementwise consumer into a producer whose result is used elsewhere too (one loop
nest writes both, where upstream keeps two), ``siblings=true`` merges independent
all-parallel loop nests over provably equal domains (the graph's symbolic shapes of the
kernel's arguments say which dims are equal; they are part of the fused-kernel cache key);
``fuse-linalg=false`` keeps the merged kernel as the plain sequence of the
members' linalg ops (no upstream elementwise fusion), ``enable=false`` does nothing
(groups stay marked), for comparisons.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir, passmanager
from mlir.dialects import arith, func, linalg, tensor

from ..dialects._core import create
from ..ops.kernels import KERNEL_ATTR
from .graph import on_tensors
from ..shapes import UNKNOWN, Dim, Shape, read_tensor_type
from .annotate_kernel_kinds import annotate
from .dispatch_split import CANDIDATE_ATTR, SPLIT_ATTR
from .fuse_multi_output import fold_unit_reshapes, fuse_multi_use_producers, merge_siblings
from .fuse_ops import GROUP_ATTR
from .graph import body_ops, func_name, function_type, functions_by_name, graph_functions
from .kernel_hash import structural_hash
from .legalize import KERNEL_OP_ATTR
from .registry import Option, emit_error, register_pass

#: Before any fusion: the members' bodies inlined into the draft kernel.
INLINE_PIPELINE = "builtin.module(inline, func.func(canonicalize))"
FUSED_PIPELINE = "builtin.module(func.func(linalg-fuse-elementwise-ops, canonicalize, cse))"
PLAIN_PIPELINE = "builtin.module(func.func(cse))"
#: The symbol of a group's kernel while it is built (in a scratch module of its own).
DRAFT_NAME = "fused"


def _plain_type(t: ir.Type) -> ir.Type:
    """A graph tensor type without its #relax.shape encoding (the kernel-level type)."""
    if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
        return ir.RankedTensorType.get(list(t.shape), t.element_type)
    return t


def kernel_op_name(fn: ir.Operation, symbol: str) -> str:
    """What a kernel computes, for readable fused names: the op kinds relax-legalize (or
    this pass) recorded in ``relax.kernel_op``, else the kernel's own symbol."""
    if KERNEL_OP_ATTR in fn.attributes:
        return ir.StringAttr(fn.attributes[KERNEL_OP_ATTR]).value
    return symbol


class _FuseError(ValueError):
    """A group that cannot be merged into one kernel (reported at its first member)."""


class _GroupKernel:
    """One fusion group: its inputs and outputs, and the builder of its fused kernel."""

    def __init__(self, members: list[ir.Operation], kernels: dict[str, ir.Operation]):
        self.members = members
        mset = set(members)
        self.kernels = kernels
        self.inputs: list[ir.Value] = []
        self.outputs: list[ir.Value] = []
        for m in members:
            for v in m.operands:
                owner = v.owner if isinstance(v, ir.OpResult) else None
                if (owner is None or owner.operation not in mset) and not any(v == x for x in self.inputs):
                    self.inputs.append(v)
        for m in members:
            for r in m.results:
                if any(_top(u.owner, mset) not in mset for u in r.uses):
                    self.outputs.append(r)
        self.var_dims: list[Dim] = []       # the call's tir_vars, in argument order

    def build(self, name: str, ip: ir.InsertionPoint) -> ir.Operation:
        """The fused kernel ``@name`` at ``ip``: one ``func.call`` per member (the callees
        are looked up by name where the kernel lands), in destination-passing style."""
        index = ir.IndexType.get()
        in_types = [_plain_type(v.type) for v in self.inputs + self.outputs]
        out_types = [_plain_type(v.type) for v in self.outputs]
        fn = func.FuncOp(name, (in_types, out_types), ip=ip)
        fn.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
        block = fn.add_entry_block()
        args = list(block.arguments)
        sized = list(zip(args, self.inputs + self.outputs))
        values: dict = {v: a for v, a in zip(self.inputs, args)}
        out_args = {o: a for o, a in zip(self.outputs, args[len(self.inputs):])}
        var_args: dict[Dim, ir.Value] = {}
        consts: dict[int, ir.Value] = {}

        with ir.InsertionPoint(block):
            def const(k: int) -> ir.Value:
                if k not in consts:
                    consts[k] = arith.ConstantOp(index, k).result
                return consts[k]

            def var(d: Dim) -> ir.Value:
                if d not in var_args:
                    var_args[d] = block.add_argument(index, fn.location)
                    self.var_dims.append(d)
                return var_args[d]

            def dim_value(d: Dim) -> ir.Value:
                """``d`` as an index: tensor.dim of an argument with that dim, else a tir_var."""
                for a, v in sized:
                    t = ir.RankedTensorType(_plain_type(v.type))
                    for j, e in enumerate(read_tensor_type(v.type).shape):
                        if e is not UNKNOWN and e == d and t.is_dynamic_dim(j):
                            return tensor.DimOp(a, const(j)).result
                return var(d)

            def cast(v: ir.Value, to: ir.Type) -> ir.Value:
                return v if v.type == to else tensor.CastOp(to, v).result

            for m in self.members:
                callee = ir.FlatSymbolRefAttr(m.attributes["callee"]).value
                ftype = function_type(self.kernels[callee])
                call_args = [values[v] for v in m.operands]
                for r in m.results:
                    if r in out_args:
                        call_args.append(out_args[r])
                        continue
                    t = ir.RankedTensorType(_plain_type(r.type))
                    shape = read_tensor_type(r.type).shape
                    sizes: list = []
                    for j in range(t.rank):
                        if not t.is_dynamic_dim(j):
                            sizes.append(t.get_dim_size(j))
                        elif shape[j] is UNKNOWN:
                            raise _FuseError(f"intermediate result of @{callee} has an unknown dim '?'")
                        else:
                            sizes.append(dim_value(shape[j]))
                    call_args.append(tensor.EmptyOp(sizes, t.element_type).result)
                if "tir_vars" in m.attributes:
                    call_args += [var(d) for d in Shape.from_attr(m.attributes["tir_vars"])]
                params = list(ftype.inputs)
                if len(call_args) != len(params):
                    raise _FuseError(f"@{callee} takes {len(params)} arguments, its call passes {len(call_args)}")
                call = func.CallOp(list(ftype.results), ir.FlatSymbolRefAttr.get(callee),
                                   [cast(a, p) for a, p in zip(call_args, params)])
                for r, res in zip(m.results, call.results):
                    values[r] = cast(res, _plain_type(r.type))
            func.ReturnOp([values[o] for o in self.outputs])
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], out_types))
        return fn.operation


def _top(op, mset) -> ir.Operation:
    op = op.operation if hasattr(op, "operation") else op
    cur = op
    while cur is not None:
        if cur in mset:
            return cur
        p = cur.parent
        cur = p.operation if p is not None and hasattr(p, "operation") else p
    return op


def _toposort(f: ir.Operation) -> None:
    """Re-order a function body so every op follows the ops defining its operands."""
    ops = [o for o in body_ops(f)]
    pos = {o: i for i, o in enumerate(ops)}
    done: set = set()
    order: list[ir.Operation] = []

    def deps(o: ir.Operation):
        out = []
        stack = [o]
        while stack:
            x = stack.pop()
            for v in x.operands:
                if isinstance(v, ir.OpResult):
                    d = _top(v.owner, pos)
                    if d in pos and d is not o and d != o:
                        out.append(d)
            for r in x.regions:
                for b in r.blocks:
                    stack.extend(y.operation for y in b.operations)
        return out

    def visit(o: ir.Operation):
        if o in done:
            return
        done.add(o)
        for d in sorted(deps(o), key=lambda x: pos[x]):
            visit(d)
        order.append(o)

    for o in ops:
        visit(o)
    if order == ops:
        return
    term = ops[-1]
    for o in order:
        if o != term:
            o.move_before(term)


def _restore_destinations(fn: ir.Operation, n_inputs: int) -> None:
    """Write results into the output arguments again (destination-passing style).

    Upstream elementwise fusion replaces an ``outs`` operand the payload never reads by a
    fresh ``tensor.empty``; when such a value is returned, point it back at the kernel's
    output argument (same type) so the kernel still writes where the caller said.
    """
    block = fn.regions[0].blocks[0]
    ret = [o.operation for o in block.operations][-1]
    args = list(block.arguments)
    seen = set()
    for i, v in enumerate(ret.operands):
        if n_inputs + i >= len(args):
            continue
        dest = args[n_inputs + i]
        if (isinstance(v, ir.BlockArgument) or v in seen) and v != dest and v.type == dest.type:
            # An input returned as it is (a reduction over no axes of a 0-d value folds to
            # its operand), or one value returned twice: the caller reads this result from
            # its output buffer, so copy it there (it read a workspace slot that a later
            # kernel reused: long fuzz program seed 42000493).
            with ir.InsertionPoint(ret), ret.location:
                ret.operands[i] = linalg.copy(v, outs=[dest])
            continue
        seen.add(v)
        if not isinstance(v, ir.OpResult):
            continue
        op = v.owner.operation if hasattr(v.owner, "operation") else v.owner
        if op.name == "tensor.collapse_shape":
            _restore_through_collapse(op, dest)
            continue
        init, k = _empty_init(v)
        if init is not None and init.type == dest.type:
            op.operands[k] = dest


def _empty_init(v: ir.Value):
    """(the ``tensor.empty`` init, its operand index) of the linalg op whose result ``v`` is;
    (None, None) otherwise."""
    if not isinstance(v, ir.OpResult):
        return None, None
    op = v.owner.operation if hasattr(v.owner, "operation") else v.owner
    if not op.name.startswith("linalg.") or "operandSegmentSizes" not in op.attributes:
        return None, None
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    if len(seg) != 2 or v.result_number >= seg[1]:
        return None, None
    k = seg[0] + v.result_number
    init = op.operands[k]
    if isinstance(init, ir.OpResult) and init.owner.name == "tensor.empty":
        return init, k
    return None, None


def _restore_through_collapse(collapse: ir.Operation, dest: ir.Value) -> None:
    """A returned ``tensor.collapse_shape`` of a linalg result written into a ``tensor.empty``
    (an im2col fused after a conv epilogue writes its (C, KH, KW, ...) view of the output):
    write into ``expand_shape(dest)`` instead, with the collapse's reassociation and the
    empty's sizes, else the kernel fills a fresh buffer and the caller copies it over."""
    src = collapse.operands[0]
    init, k = _empty_init(src)
    if init is None or init.type != src.type or collapse.results[0].type != dest.type:
        return
    empty = init.owner.operation if hasattr(init.owner, "operation") else init.owner
    owner = src.owner.operation if hasattr(src.owner, "operation") else src.owner
    t = ir.RankedTensorType(src.type)
    reassoc = collapse.attributes["reassociation"]
    # the member kernel's own view of its destination, when it is still there (in the block, before the op)
    block_ops = [o.operation for o in owner.block.operations]
    before = block_ops[:block_ops.index(owner)]
    view = next((o.results[0] for o in before if o.name == "tensor.expand_shape" and o.operands[0] == dest
                 and o.results[0].type == t and o.attributes["reassociation"] == reassoc), None)
    if view is None:
        with ir.InsertionPoint(empty), empty.location:
            view = tensor.expand_shape(t, dest, reassoc, list(empty.operands), list(t.shape))
    owner.operands[k] = view


def _all_parallel(op: ir.Operation) -> bool:
    its = ir.ArrayAttr(op.attributes["iterator_types"])
    return all(str(t) == "#linalg.iterator_type<parallel>" for t in its)


def read_inits_as_inputs(fn: ir.Operation) -> int:
    """Make every all-parallel ``linalg.generic`` read its ``outs`` values as inputs.

    Why: upstream ``linalg-fuse-elementwise-ops`` keeps a producer's init as an output of
    the fused op when the producer's payload reads it, indexed through the consumer's map.
    When the consumer broadcasts the producer's result (a 0-d ``sum``/``max``/``mean``
    over no axes feeding a 1-d add; a reduction over ``axes = []`` feeding a 2-d one),
    that map drops loop dims, so the fused op re-reads an element it wrote in an earlier
    iteration and accumulates once more per broadcast iteration (x + 3*dot for
    x + 2*dot). In an all-parallel generic whose init map is a permutation each output
    element is visited once, so reading it equals reading the init tensor: pass that
    tensor as an extra input instead (same map) and nothing reads the ``outs`` any
    more. Returns how many generics were rewritten.
    """
    todo: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.generic" and len(op.results) and _all_parallel(op):
            todo.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    done = 0
    for op in todo:
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        n_in, n_out = seg
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        read = [k for k in range(n_out)
                if len(list(args[n_in + k].uses)) and maps[n_in + k].is_permutation]
        if not read:
            continue
        ins, outs = list(op.operands)[:n_in], list(op.operands)[n_in:]
        new_maps = maps[:n_in] + [maps[n_in + k] for k in read] + maps[n_in:]
        new = linalg.GenericOp([r.type for r in op.results], ins + [outs[k] for k in read], outs,
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                               op.attributes["iterator_types"], loc=op.location, ip=ir.InsertionPoint(op))
        for name in list(op.attributes):
            if name not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
                new.operation.attributes[name] = op.attributes[name]
        types = [a.type for a in args[:n_in]] + [args[n_in + k].type for k in read] + [a.type for a in args[n_in:]]
        block = new.regions[0].blocks.append(*types, arg_locs=[a.location for a in args[:n_in]]
                                             + [args[n_in + k].location for k in read]
                                             + [a.location for a in args[n_in:]])
        nargs = list(block.arguments)
        for i in range(n_in):
            args[i].replace_all_uses_with(nargs[i])
        for j, k in enumerate(read):
            args[n_in + k].replace_all_uses_with(nargs[n_in + j])
        for k in range(n_out):
            args[n_in + k].replace_all_uses_with(nargs[n_in + len(read) + k])
        for o in list(body.operations):
            block.append(o.operation)
        for old, rep in zip(op.results, new.results):
            old.replace_all_uses_with(rep)
        op.erase()
        done += 1
    return done


def _find(module: ir.Module, name: str) -> ir.Operation:
    return [o.operation for o in module.body.operations
            if ir.StringAttr(o.attributes["sym_name"]).value == name][0]


def _referenced_callees(module: ir.Operation) -> set[str]:
    out: set[str] = set()

    def walk(op: ir.Operation):
        if "callee" in op.attributes:
            a = op.attributes["callee"]
            if isinstance(a, ir.FlatSymbolRefAttr):
                out.add(a.value)
        for r in op.regions:
            for b in r.blocks:
                for x in b.operations:
                    walk(x.operation)

    walk(module)
    return out


def _fuse(scratch: ir.Module, draft_name: str, members: list[ir.Operation], fuse_linalg: bool,
          n_inputs: int, multi_use: bool = False, arg_dims: Optional[dict] = None,
          unit_reshapes: bool = False) -> ir.Operation:
    """Inline the members into the draft kernel and fuse their linalg ops (upstream passes).

    ``scratch`` holds only the draft (public, so the inliner keeps it); copies of the
    member kernels are added beside it and go away once inlined.
    """
    for fn in members:
        fn.clone(ir.InsertionPoint(scratch.body))
    passmanager.PassManager.parse(INLINE_PIPELINE).run(scratch.operation)
    if fuse_linalg:
        read_inits_as_inputs(_find(scratch, draft_name))
    passmanager.PassManager.parse(FUSED_PIPELINE if fuse_linalg else PLAIN_PIPELINE).run(scratch.operation)
    if fuse_linalg and unit_reshapes and fold_unit_reshapes(_find(scratch, draft_name)):
        passmanager.PassManager.parse(FUSED_PIPELINE).run(scratch.operation)
    if fuse_linalg and multi_use and fuse_multi_use_producers(_find(scratch, draft_name)):
        passmanager.PassManager.parse(FUSED_PIPELINE).run(scratch.operation)
    if fuse_linalg and arg_dims is not None and merge_siblings(_find(scratch, draft_name), arg_dims):
        passmanager.PassManager.parse(FUSED_PIPELINE).run(scratch.operation)
    _restore_destinations(_find(scratch, draft_name), n_inputs)
    passmanager.PassManager.parse("builtin.module(func.func(canonicalize))").run(scratch.operation)
    return _find(scratch, draft_name)


def _arg_dims(values: list[ir.Value]) -> dict:
    """(argument number, dim) -> the symbolic dim (text) of the fused kernel's tensor
    arguments' dynamic dims (the graph's ``#relax.shape`` encodings)."""
    out: dict = {}
    for i, v in enumerate(values):
        if not isinstance(v.type, ir.RankedTensorType):
            continue
        for j, d in enumerate(read_tensor_type(v.type).shape):
            if d is not UNKNOWN and not d.is_static:
                out[i, j] = str(d)
    return out


def _dims_pattern(arg_dims: dict) -> str:
    """Which argument dims are equal, with the symbols renamed by first appearance."""
    names: dict = {}
    return ";" + ",".join(f"{i}.{j}={names.setdefault(d, len(names))}" for (i, j), d in sorted(arg_dims.items()))


def _fresh_name(base: str, taken: set[str]) -> str:
    base = base[:80]
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    taken.add(name)
    return name


@register_pass("relax-fuse-kernels",
               "Merge each relax.fusion_group into one kernel (inlined members + upstream linalg "
               "elementwise fusion) called by one call_tir.",
               options=[Option("enable", bool, True, "merge groups (false: leave the module as it is)"),
                        Option("fuse-linalg", bool, True,
                               "run linalg-fuse-elementwise-ops on merged kernels (false: keep one "
                               "linalg op per member)"),
                        Option("multi-use", bool, False,
                               "also merge an elementwise consumer into a producer whose result has other "
                               "uses (one loop nest writing both; the GPU pipelines: a launch per loop nest)"),
                        Option("siblings", bool, False,
                               "also merge independent all-parallel loop nests of one kernel whose iteration "
                               "domains are equal (one loop nest writing all their outputs)"),
                        Option("unit-reshapes", bool, False,
                               "fold a reshape that only adds or drops unit dims into the indexing map of "
                               "the generic reading it, so that upstream fusion takes its producer")])
def relax_fuse_kernels(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    kernels = functions_by_name(module)
    taken = set(kernels)
    by_draft: dict[str, str] = {}    # structural hash of a group's unfused kernel -> fused symbol
    by_fused: dict[str, str] = {}    # structural hash of a fused kernel -> its symbol
    members_used: set[str] = set()
    block = module.regions[0].blocks[0]
    for f in graph_functions(module):
        groups: dict[int, list[ir.Operation]] = {}
        for op in body_ops(f):
            if GROUP_ATTR in op.attributes:
                groups.setdefault(ir.IntegerAttr(op.attributes[GROUP_ATTR]).value, []).append(op)
        for gid, members in groups.items():
            if len(members) < 2:
                del members[0].attributes[GROUP_ATTR]
                continue
            bad = [m for m in members if m.name != "relax.call_tir"
                   or ir.FlatSymbolRefAttr(m.attributes["callee"]).value not in kernels]
            if bad:
                emit_error(bad[0], f"in @{func_name(f)}: fusion group {gid} holds an op that is not "
                                   "a call_tir of a kernel in this module")
                continue
            memref = [m for m in members if not on_tensors(kernels[ir.FlatSymbolRefAttr(m.attributes["callee"]).value])]
            if memref:   # relax-fuse-ops never groups them (opaque); a hand-made group may
                emit_error(memref[0], f"in @{func_name(f)}: cannot fuse group {gid}: kernel "
                                      f"@{ir.FlatSymbolRefAttr(memref[0].attributes['callee']).value} is not on tensors")
                continue
            gk = _GroupKernel(members, kernels)
            if not gk.outputs:  # dead code: nothing to fuse for
                for m in members:
                    del m.attributes[GROUP_ATTR]
                continue
            loc = ir.Location.fused([m.location for m in members])
            callees = [ir.FlatSymbolRefAttr(m.attributes["callee"]).value for m in members]
            with loc:
                scratch = ir.Module.create()
                try:
                    draft = gk.build(DRAFT_NAME, ir.InsertionPoint(scratch.body))
                except _FuseError as e:
                    emit_error(members[0], f"in @{func_name(f)}: cannot fuse group {gid}: {e}")
                    continue
                arg_dims = _arg_dims(gk.inputs + gk.outputs) if opts.siblings else None
                # sibling merges depend on which dims are equal: part of the key
                key = structural_hash(draft) + (_dims_pattern(arg_dims) if arg_dims is not None else "")
                if key in by_draft:
                    name = by_draft[key]
                else:
                    fused = _fuse(scratch, DRAFT_NAME, [kernels[c] for c in dict.fromkeys(callees)],
                                  opts.fuse_linalg, len(gk.inputs), opts.multi_use, arg_dims,
                                  opts.unit_reshapes)
                    # relax-dispatch-library's run-time split stays with its matmul
                    # (and the tuner's mark, CANDIDATE_ATTR)
                    for c in callees:
                        for a in (SPLIT_ATTR, CANDIDATE_ATTR):
                            if a in kernels[c].attributes:
                                fused.attributes[a] = kernels[c].attributes[a]
                    same = structural_hash(fused)
                    if same in by_fused:   # another group fused to the very same kernel
                        name = by_fused[same]
                    else:
                        what = "_".join(kernel_op_name(kernels[c], c) for c in callees)
                        name = _fresh_name("fused_" + what, taken)
                        fused.detach_from_parent()
                        fused.attributes["sym_name"] = ir.StringAttr.get(name)
                        fused.attributes["sym_visibility"] = ir.StringAttr.get("private")
                        fused.attributes[KERNEL_OP_ATTR] = ir.StringAttr.get(what)
                        block.append(fused)
                        annotate(fused)
                        kernels[name] = fused
                        by_fused[same] = name
                    by_draft[key] = name
            members_used.update(callees)
            last = members[-1]
            attrs = {"callee": ir.FlatSymbolRefAttr.get(name)}
            if gk.var_dims:
                attrs["tir_vars"] = Shape(gk.var_dims).to_attr()
            new = create("call_tir", list(gk.inputs), [o.type for o in gk.outputs], attrs,
                         loc=loc, ip=ir.InsertionPoint(last))
            for old, rep in zip(gk.outputs, new.results):
                old.replace_all_uses_with(rep)
            for m in reversed(members):
                m.erase()
            _toposort(f)
    still = _referenced_callees(module)
    for n in members_used - still:
        fn = kernels.get(n)
        if fn is not None:
            fn.erase()
