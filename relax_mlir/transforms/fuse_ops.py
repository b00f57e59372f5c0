"""relax-fuse-ops: group graph-level call_tir ops into fusion groups by their kernels' kinds.

The rules are Apache TVM Relax's (FuseOps), applied to the dataflow graph of each
graph function, with the kinds of :mod:`annotate_kernel_kinds` (kernels without
``relax.kernel_kind`` are classified on the fly). Groups start as single call_tir ops
and merge along producer -> consumer edges, visiting consumers in program order:

phase 1
  * a producer group of kind <= broadcast (an elementwise/broadcast chain) joins the
    consumer's group when every consuming op is elementwise, broadcast, injective or a
    reduction: chains fuse, and a reduction takes its elementwise prologue;
  * an output-fusable group (a contraction and its epilogue so far) takes a consumer
    group of kind <= broadcast: matmul + bias add + activation; with ``quant-epilogue``
    (the GPU targets: their quantized GEMV applies it at the store) so does a reduction
    group anchored on a ``relax.quantized_matmul`` kernel (the down projection + the
    residual add), which keeps its prologue too;
phase 2
  * an injective producer group (kind <= injective) joins the consumer's group when
    every consuming op is at most injective (reshape/transpose/slice chains fuse into
    their elementwise or injective consumers).

Reductions and contractions never join their consumers except as above, opaque kernels
and non-call_tir ops never join anything, and a group holds at most one reduction or
contraction. A merge is refused when it would create a cycle between groups (some
path leaves the producer group and re-enters the consumer group through another
group). A value of a group used outside it simply stays an output of the group (a
group can have several outputs, at most :data:`MAX_OUTPUTS`: a merge that would give more
is refused, e.g. the weight-side chains of many folded BatchNorms joined through one shared
epsilon constant). A group holding relax-conv-gemm's im2col kernel gets one output at most
(:func:`_holds_im2col`: the cpu schedules take single-output kernels).

Groups of two or more ops are marked ``relax.fusion_group = N : i64`` (numbered across
the module); relax-fuse-kernels turns each into one call_tir of one fused kernel. Shapes
play no part in the decision, so everything works with symbolic shapes.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects._core import RESULT_SLOTS
from .annotate_kernel_kinds import BROADCAST, INJECTIVE, OPAQUE, OUTPUT_FUSABLE, REDUCTION, kernel_kind
from .graph import body_ops, entry_block, functions_by_name, graph_functions
from .registry import Option, register_pass

#: The most results a fused group may return (the call_tir result slots of the dialect).
MAX_OUTPUTS = RESULT_SLOTS

GROUP_ATTR = "relax.fusion_group"


class _Graph:
    """The call graph of one function body: nodes are its top-level ops (not the return)."""

    def __init__(self, f: ir.Operation, kernels: dict[str, ir.Operation]):
        ops = body_ops(f)
        self.ops = [o for o in ops if o.name != "func.return"]
        self.index = {o: i for i, o in enumerate(self.ops)}
        self.kind: list[int] = []
        self.im2col: list[bool] = []   # relax-conv-gemm's im2col kernels (relax.kernel_op "im2col")
        self.qmm: list[bool] = []      # relax.quantized_matmul kernels (relax.kernel_op "quantized_matmul")
        for o in self.ops:
            self.kind.append(_callee_kind(o, kernels) if o.name == "relax.call_tir" else OPAQUE)
            self.im2col.append(o.name == "relax.call_tir" and _callee_op(o, kernels) == "im2col")
            self.qmm.append(o.name == "relax.call_tir" and _callee_op(o, kernels) == "quantized_matmul")
        block = entry_block(f)
        self.users: list[list[int]] = [[] for _ in self.ops]
        self.producers: list[list[int]] = [[] for _ in self.ops]
        for i, o in enumerate(self.ops):
            for v in o.operands:
                p = self._top_index(v, block)
                if p is not None and p not in self.producers[i]:
                    self.producers[i].append(p)
                    self.users[p].append(i)
        # Nested uses (an op with a region reading an outer value) count as uses by its top op.
        for i, o in enumerate(self.ops):
            for r in o.results:
                for use in r.uses:
                    u = self._top_of(use.owner, block)
                    if u is not None and u != i and u not in self.users[i]:
                        self.users[i].append(u)
                        self.producers[u].append(i)
        self.parent = list(range(len(self.ops)))
        self.gkind = list(self.kind)
        self.size = [1] * len(self.ops)

    def _top_of(self, op, block: ir.Block) -> Optional[int]:
        op = op.operation if hasattr(op, "operation") else op
        while op is not None:
            if op in self.index:
                return self.index[op]
            parent = op.parent
            op = parent.operation if parent is not None and hasattr(parent, "operation") else parent
            if op is not None and op.name == "func.func":
                return None
        return None

    def _top_index(self, v: ir.Value, block: ir.Block) -> Optional[int]:
        if isinstance(v, ir.OpResult):
            return self._top_of(v.owner, block)
        return None

    # union-find
    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def members(self, g: int) -> list[int]:
        return [i for i in range(len(self.ops)) if self.find(i) == g]

    def succ_groups(self, g: int) -> set[int]:
        return {self.find(u) for m in self.members(g) for u in self.users[m]} - {g}

    def makes_cycle(self, gp: int, gc: int) -> bool:
        """A path gp -> G -> ... -> gc through some other group G."""
        stack = [s for s in self.succ_groups(gp) if s != gc]
        seen = set(stack)
        while stack:
            g = stack.pop()
            for s in self.succ_groups(g):
                if s == gc:
                    return True
                if s not in seen and s != gp:
                    seen.add(s)
                    stack.append(s)
        return False

    def outputs(self, gp: int, gc: int) -> int:
        """Results the union of groups gp and gc would return: values of its ops used by an op
        outside it or by the function's return."""
        inside = set(self.members(gp)) | set(self.members(gc))
        n = 0
        for m in inside:
            o = self.ops[m]
            if any(u not in inside for u in self.users[m]) or any(
                    (use.owner.operation if hasattr(use.owner, "operation") else use.owner).name == "func.return"
                    for r in o.results for use in r.uses):
                n += len(o.results)
        return n

    def union(self, gp: int, gc: int) -> None:
        self.parent[gp] = gc
        self.gkind[gc] = max(self.gkind[gc], self.gkind[gp])
        self.size[gc] += self.size[gp]


def _edge_kinds(g: _Graph, gp: int, gc: int) -> list[int]:
    """Kinds of the ops of group gc that use a value of group gp."""
    return [g.kind[u] for m in g.members(gp) for u in g.users[m] if g.find(u) == gc]


def _can_merge(g: _Graph, gp: int, gc: int, phase: int, quant_epilogue: bool = False) -> bool:
    kp, kc = g.gkind[gp], g.gkind[gc]
    edges = _edge_kinds(g, gp, gc)
    if not edges or kp == OPAQUE or kc == OPAQUE:
        return False
    if phase == 0:
        if kp <= BROADCAST:
            return all(k <= INJECTIVE or k == REDUCTION for k in edges)
        if kp == OUTPUT_FUSABLE or (quant_epilogue and kp == REDUCTION and _holds_quantized_matmul(g, gp)):
            return kc <= BROADCAST
        return False
    return kp <= INJECTIVE and all(k <= INJECTIVE for k in edges)


def fuse_function(f: ir.Operation, kernels: dict[str, ir.Operation], max_size: int,
                  quant_epilogue: bool = False) -> list[list[ir.Operation]]:
    """The groups (of two ops or more) of one graph function, each in program order;
    ``quant_epilogue``: quantized matmuls take elementwise epilogues (see the module doc)."""
    g = _Graph(f, kernels)
    for phase in (0, 1):
        changed = True
        while changed:
            changed = False
            for c in range(len(g.ops)):
                if g.kind[c] == OPAQUE:
                    continue
                for p in g.producers[c]:
                    gp, gc = g.find(p), g.find(c)
                    if gp == gc or g.size[gp] + g.size[gc] > max_size:
                        continue
                    if (_can_merge(g, gp, gc, phase, quant_epilogue) and not g.makes_cycle(gp, gc)
                            and g.outputs(gp, gc) <= (1 if _holds_im2col(g, gp, gc) else MAX_OUTPUTS)):
                        g.union(gp, gc)
                        changed = True
    groups: dict[int, list[ir.Operation]] = {}
    for i, o in enumerate(g.ops):
        groups.setdefault(g.find(i), []).append(o)
    return [ms for ms in sorted(groups.values(), key=lambda ms: g.index[ms[0]]) if len(ms) > 1]


def _holds_im2col(g: _Graph, gp: int, gc: int) -> bool:
    """Does the union of gp and gc hold an im2col kernel? Such a group must have ONE output:
    the cpu schedules (``permute_rows+im2col``) take single-output kernels only, and a
    multi-output one (a conv epilogue whose result also feeds a residual add, or two im2cols
    of one activation) would run as plain loops on one thread (measured: a fifth of
    ResNet-18 at batch 8)."""
    return any(g.im2col[m] for m in g.members(gp) + g.members(gc))


def _holds_quantized_matmul(g: _Graph, gp: int) -> bool:
    """Is group gp (a reduction group) anchored on a relax.quantized_matmul kernel?"""
    return any(g.qmm[m] for m in g.members(gp))


def _callee_op(op: ir.Operation, kernels: dict[str, ir.Operation]) -> Optional[str]:
    """The called kernel's ``relax.kernel_op`` (None without one)."""
    fn = kernels.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    if fn is None or "relax.kernel_op" not in fn.attributes:
        return None
    return ir.StringAttr(fn.attributes["relax.kernel_op"]).value


def _callee_kind(op: ir.Operation, kernels: dict[str, ir.Operation]) -> int:
    fn = kernels.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    return kernel_kind(fn) if fn is not None else OPAQUE


def _feeds_reduction(op: ir.Operation, kernels: dict[str, ir.Operation], depth: int = 4) -> bool:
    """``op`` is a reduction's call_tir, or an elementwise/broadcast one whose results reach
    one within ``depth`` call_tir steps (the chain phase 1 fuses into it)."""
    kind = _callee_kind(op, kernels)
    if kind == REDUCTION:
        return True
    if kind > BROADCAST or depth == 0:
        return False
    for r in op.results:
        for use in r.uses:
            u = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if u.name == "relax.call_tir" and u.parent == op.parent and _feeds_reduction(u, kernels, depth - 1):
                return True
    return False


def _follows_anchor(op: ir.Operation, kernels: dict[str, ir.Operation], depth: int = 4) -> bool:
    """``op`` is an elementwise/broadcast call_tir reading, within ``depth`` such steps, the
    result of an output-fusable one (a conv's or matmul's epilogue: phase 0 fuses it there)."""
    if _callee_kind(op, kernels) > BROADCAST or depth == 0:
        return False
    for v in op.operands:
        d = v.owner.operation if isinstance(v, ir.OpResult) and hasattr(v.owner, "operation") else (
            v.owner if isinstance(v, ir.OpResult) else None)
        if d is None or d.name != "relax.call_tir" or d.parent != op.parent:
            continue
        if _callee_kind(d, kernels) == OUTPUT_FUSABLE or _follows_anchor(d, kernels, depth - 1):
            return True
    return False


def rematerialize_scalars(f: ir.Operation, kernels: dict[str, ir.Operation]) -> None:
    """A call_tir without operands producing a 0-d tensor (a scalar fill: an importer's
    constant, shared by every layer after CSE) gets a copy of its own for each user that is
    a reduction (softmax, norms) or an elementwise prologue of one, or an epilogue of a conv
    or matmul (ReLU6's bounds), placed before that user: the anchor's group
    then takes its own copy, where a shared one joins the first consumer's group and stays
    an extra output of it (a multi-output kernel, which no schedule takes: plain loops).
    Other users share it (a copy per elementwise user only multiplies the host code's
    allocations)."""
    for op in body_ops(f):
        if op.name != "relax.call_tir" or len(op.operands) or len(op.results) != 1:
            continue
        t = op.results[0].type
        if not isinstance(t, ir.RankedTensorType) or t.rank != 0:
            continue
        users = []
        for use in op.results[0].uses:
            u = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if u.name == "relax.call_tir" and u.parent == op.parent:
                users.append((u, use.operand_number))
        reducing = [(u, n) for u, n in users if _feeds_reduction(u, kernels) or _follows_anchor(u, kernels)]
        if len(users) < 2 or not reducing:
            continue
        # the other users keep the original; when every user is a reduction's, one of them
        keep = reducing[0][0] if len(reducing) == len(users) else None
        clones: list[tuple[ir.Operation, ir.Operation]] = []   # (user, its copy)
        for u, n in reducing:
            if keep is not None and u == keep:
                continue
            clone = next((c for w, c in clones if w == u), None)
            if clone is None:
                clone = op.clone(ip=ir.InsertionPoint(u))
                clones.append((u, clone))
            u.operands[n] = clone.results[0]


@register_pass("relax-fuse-ops",
               "Group call_tir ops into fusion groups (relax.fusion_group) by kernel kind, "
               "with Relax's FuseOps rules.",
               options=[Option("enable", bool, True, "group ops (false: leave the module as it is)"),
                        Option("max-group-size", int, 256, "most call_tir ops in one group"),
                        Option("quant-epilogue", bool, False,
                               "a relax.quantized_matmul kernel takes an elementwise epilogue (residual "
                               "or bias add, activation) as a contraction does (the GPU targets)")])
def relax_fuse_ops(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    kernels = functions_by_name(module)
    n = 0
    for f in graph_functions(module):
        rematerialize_scalars(f, kernels)
        for op in body_ops(f):
            if GROUP_ATTR in op.attributes:
                del op.attributes[GROUP_ATTR]
        for members in fuse_function(f, kernels, max(1, opts.max_group_size), opts.quant_epilogue):
            for op in members:
                op.attributes[GROUP_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n)
            n += 1
