"""relax-fuse-kernels: merge each fusion group's kernels into ONE kernel and ONE call_tir.

For each group marked by relax-fuse-ops (``relax.fusion_group = N``) the pass writes a
new kernel ``func.func private @fused_<members>`` in destination-passing style:

* arguments: the group's inputs (values defined outside it, each once), its outputs
  (member results used outside the group, e.g. by the return or another group), then
  ``index`` scalars for the members' ``tir_vars`` and for the dims of intermediates
  that no argument carries;
* body: one ``func.call`` per member kernel, in program order; an intermediate result
  is written into a ``tensor.empty`` whose dynamic sizes are read with ``tensor.dim``
  from an argument with the same symbolic dim (the ``#relax.shape`` encodings of the
  graph values say which), else passed in as an extra tir_var;
* then, on a scratch module holding only this kernel (public there, so the inliner keeps
  it) and copies of the members,
  upstream ``inline`` (member bodies land in the new kernel), ``canonicalize``,
  ``linalg-fuse-elementwise-ops`` (elementwise producers fuse into their consumers,
  so intermediates disappear where legal), ``canonicalize`` and ``cse``.

The group is then replaced by one ``relax.call_tir`` at the place of its last member
(inputs, outputs and tir_vars as above; ops are re-ordered topologically when an
outside user of an output sat between members). Identical groups share one fused
kernel; member kernels nothing calls any more are erased. The new kernel is marked
``relax.kernel`` and classified again (``relax.kernel_kind``).

Options: ``fuse-linalg=false`` keeps the merged kernel as the plain sequence of the
members' linalg ops (no upstream elementwise fusion), ``enable=false`` does nothing
(groups stay marked), for comparisons.
"""

from __future__ import annotations

from mlir import ir, passmanager

from ..dialects._core import create
from ..shapes import UNKNOWN, Shape, read_tensor_type
from .annotate_kernel_kinds import annotate
from .fuse_ops import GROUP_ATTR
from .graph import body_ops, func_name, functions_by_name, graph_functions
from .registry import Option, emit_error, register_pass

FUSED_PIPELINE = "builtin.module(inline, func.func(canonicalize, linalg-fuse-elementwise-ops, canonicalize, cse))"
PLAIN_PIPELINE = "builtin.module(inline, func.func(canonicalize, cse))"


def _plain_type(t: ir.Type) -> ir.Type:
    """A graph tensor type without its #relax.shape encoding (the kernel-level type)."""
    if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
        return ir.RankedTensorType.get(list(t.shape), t.element_type)
    return t


def _short(kernel: str, op_names: list[str]) -> str:
    """``relax_matmul_f32_Dx64_64x32`` -> ``matmul``; other names stay as they are."""
    if kernel.startswith("relax_"):
        rest = kernel[len("relax_"):]
        for n in op_names:
            if rest == n or rest.startswith(n + "_"):
                return n
    return kernel


class _GroupKernel:
    """Builds the text of one group's fused kernel and the call that replaces the group."""

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
        self.vars: list[str] = []          # tir_vars dims, as attribute text (deduplicated)
        self.var_dims: list = []

    def var(self, d) -> str:
        key = d.to_attr_text() if hasattr(d, "to_attr_text") else str(d)
        if key not in self.vars:
            self.vars.append(key)
            self.var_dims.append(d)
        return f"%v{self.vars.index(key)}"

    def text(self, name: str) -> str:
        lines: list[str] = []
        names: dict = {}
        arg_decls = []
        for i, v in enumerate(self.inputs):
            names[v] = f"%a{i}"
            arg_decls.append((f"%a{i}", _plain_type(v.type)))
        for i, v in enumerate(self.outputs):
            arg_decls.append((f"%o{i}", _plain_type(v.type)))
        sized = [(n, v) for (n, _), v in zip(arg_decls, self.inputs + self.outputs)]
        consts: dict[int, str] = {}

        def const(k: int) -> str:
            if k not in consts:
                consts[k] = f"%c{k}"
                lines.append(f"  %c{k} = arith.constant {k} : index")
            return consts[k]

        def dim_value(d) -> str:
            """An index value for symbolic dim ``d``: tensor.dim of an argument, else a tir_var."""
            key = d.to_attr_text() if hasattr(d, "to_attr_text") else str(d)
            for n, v in sized:
                sig = read_tensor_type(v.type)
                for j, e in enumerate(sig.shape):
                    if e is not UNKNOWN and (e.to_attr_text() if hasattr(e, "to_attr_text") else str(e)) == key \
                            and ir.RankedTensorType(v.type).is_dynamic_dim(j):
                        c = const(j)
                        t = f"%d{len(lines)}"
                        lines.append(f"  {t} = tensor.dim {n}, {c} : {_plain_type(v.type)}")
                        return t
            return self.var(d)

        n_tmp = 0
        for k, m in enumerate(self.members):
            callee = ir.FlatSymbolRefAttr(m.attributes["callee"]).value
            fn = self.kernels[callee]
            ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            params = list(ftype.inputs)
            args = []
            for v in m.operands:
                args.append((names[v], _plain_type(v.type)))
            for r in m.results:
                if any(r == o for o in self.outputs):
                    args.append((f"%o{[i for i, o in enumerate(self.outputs) if o == r][0]}", _plain_type(r.type)))
                    continue
                t = ir.RankedTensorType(_plain_type(r.type))
                sig = read_tensor_type(r.type)
                sizes = []
                for j in range(t.rank):
                    if t.is_dynamic_dim(j):
                        if sig.shape[j] is UNKNOWN:
                            raise ValueError(f"intermediate result of @{callee} has an unknown dim '?'")
                        sizes.append(dim_value(sig.shape[j]))
                n_tmp += 1
                e = f"%e{n_tmp}"
                lines.append(f"  {e} = tensor.empty({', '.join(sizes)}) : {t}")
                args.append((e, t))
            if "tir_vars" in m.attributes:
                for d in Shape.from_attr(m.attributes["tir_vars"]):
                    args.append((self.var(d), ir.IndexType.get()))
            if len(args) != len(params):
                raise ValueError(f"@{callee} takes {len(params)} arguments, its call passes {len(args)}")
            call_args = []
            for (a, t), p in zip(args, params):
                if str(t) != str(p):
                    n_tmp += 1
                    c = f"%cast{n_tmp}"
                    lines.append(f"  {c} = tensor.cast {a} : {t} to {p}")
                    a = c
                call_args.append(a)
            res = [f"%r{k}_{i}" for i in range(len(m.results))]
            rtypes = list(ftype.results)
            lhs = (", ".join(res) + " = ") if res else ""
            lines.append(f"  {lhs}func.call @{callee}({', '.join(call_args)}) : "
                         f"({', '.join(str(p) for p in params)}) -> ({', '.join(str(t) for t in rtypes)})")
            for i, (r, rt) in enumerate(zip(m.results, rtypes)):
                want = _plain_type(r.type)
                if str(want) != str(rt):
                    n_tmp += 1
                    c = f"%cast{n_tmp}"
                    lines.append(f"  {c} = tensor.cast {res[i]} : {rt} to {want}")
                    names[r] = c
                else:
                    names[r] = res[i]
        ret = [names[o] for o in self.outputs]
        rtypes = [str(_plain_type(o.type)) for o in self.outputs]
        lines.append(f"  return {', '.join(ret)} : {', '.join(rtypes)}")
        decls = [f"{n}: {t}" for n, t in arg_decls] + [f"{v}: index" for v in
                                                        (f"%v{i}" for i in range(len(self.vars)))]
        head = (f"func.func @{name}({', '.join(decls)}) -> ({', '.join(rtypes)}) "
                "attributes {relax.kernel} {")
        return "\n".join([head] + lines + ["}"])


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
    for i, v in enumerate(ret.operands):
        if not isinstance(v, ir.OpResult) or n_inputs + i >= len(args):
            continue
        op = v.owner.operation if hasattr(v.owner, "operation") else v.owner
        if not op.name.startswith("linalg.") or "operandSegmentSizes" not in op.attributes:
            continue
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if len(seg) != 2 or v.result_number >= seg[1]:
            continue
        k = seg[0] + v.result_number
        init = op.operands[k]
        dest = args[n_inputs + i]
        if isinstance(init, ir.OpResult) and init.owner.name == "tensor.empty" and init.type == dest.type:
            op.operands[k] = dest


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


@register_pass("relax-fuse-kernels",
               "Merge each relax.fusion_group into one kernel (inlined members + upstream linalg "
               "elementwise fusion) called by one call_tir.",
               options=[Option("enable", bool, True, "merge groups (false: leave the module as it is)"),
                        Option("fuse-linalg", bool, True,
                               "run linalg-fuse-elementwise-ops on merged kernels (false: keep one "
                               "linalg op per member)")])
def relax_fuse_kernels(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    from ..ops.registry import OPS

    op_names = sorted(OPS, key=len, reverse=True)
    kernels = functions_by_name(module)
    taken = set(kernels)
    by_text: dict[str, str] = {}
    members_used: set[str] = set()
    block = module.regions[0].blocks[0]
    pipeline = FUSED_PIPELINE if opts.fuse_linalg else PLAIN_PIPELINE
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
            gk = _GroupKernel(members, kernels)
            if not gk.outputs:  # dead code: nothing to fuse for
                for m in members:
                    del m.attributes[GROUP_ATTR]
                continue
            try:
                body = gk.text("{NAME}")
            except ValueError as e:
                emit_error(members[0], f"in @{func_name(f)}: cannot fuse group {gid}: {e}")
                continue
            callees = [ir.FlatSymbolRefAttr(m.attributes["callee"]).value for m in members]
            if body in by_text:
                name = by_text[body]
            else:
                base = "fused_" + "_".join(_short(c, op_names) for c in callees)
                if len(base) > 80:
                    base = base[:80]
                name, i = base, 0
                while name in taken:
                    i += 1
                    name = f"{base}_{i}"
                taken.add(name)
                uniq = list(dict.fromkeys(callees))
                scratch_text = "\n".join([str(kernels[c]) for c in uniq] + [body.replace("@{NAME}", "@" + name)])
                scratch = ir.Module.parse(scratch_text)
                passmanager.PassManager.parse(pipeline).run(scratch.operation)
                fused = _find(scratch, name)
                _restore_destinations(fused, len(gk.inputs))
                passmanager.PassManager.parse("builtin.module(func.func(canonicalize))").run(scratch.operation)
                fused = _find(scratch, name)
                fused.detach_from_parent()
                fused.attributes["sym_visibility"] = ir.StringAttr.get("private")
                block.append(fused)
                annotate(fused)
                kernels[name] = fused
                by_text[body] = name
            members_used.update(callees)
            last = members[-1]
            attrs = {"callee": ir.FlatSymbolRefAttr.get(name)}
            if gk.var_dims:
                attrs["tir_vars"] = Shape(gk.var_dims).to_attr()
            new = create("call_tir", list(gk.inputs), [o.type for o in gk.outputs], attrs,
                         loc=ir.Location.fused([m.location for m in members]), ip=ir.InsertionPoint(last))
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
