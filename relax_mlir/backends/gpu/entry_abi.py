"""relax-spirv-entry-abi: the workgroup size of each outlined kernel, for SPIR-V.

``convert-gpu-to-spirv`` needs ``spirv.entry_point_abi = #spirv.entry_point_abi<
workgroup_size = [x, y, z]>`` on every ``gpu.func`` kernel (it does not read the block
size the launch passes). This pass copies the constant block sizes of the
``gpu.launch_func`` ops into that attribute; a kernel launched with a dynamic block size
or with two different ones is an error.

It also copies the gpu.module's SPIR-V target (``spirv-attach-target``) into a
``spirv.target_env`` attribute of the module, where passes that convert single dialects
(``convert-math-to-spirv``) look for the capabilities they may use (without it they
assume plain Shader: f16 and i64 math would be emulated or refused).
"""

from __future__ import annotations

from mlir import ir

from ...transforms.registry import emit_error, register_pass

ABI_ATTR = "spirv.entry_point_abi"


def _const(v: ir.Value):
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def launch_sizes(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value], list[ir.Value]]:
    """(grid x y z, block x y z, kernel operands) of a gpu.launch_func."""
    lf = op.opview
    grid = [lf.gridSizeX, lf.gridSizeY, lf.gridSizeZ]
    block = [lf.blockSizeX, lf.blockSizeY, lf.blockSizeZ]
    return grid, block, list(lf.kernelOperands)


def kernel_ref(op: ir.Operation) -> tuple[str, str]:
    """(gpu.module name, gpu.func name) a gpu.launch_func calls."""
    ref = ir.SymbolRefAttr(op.attributes["kernel"])
    return ref.value[0], ref.value[1]


@register_pass("relax-spirv-entry-abi",
               "Set spirv.entry_point_abi (workgroup size) on gpu.func kernels from the constant "
               "block sizes of their gpu.launch_func (run after gpu-kernel-outlining).")
def relax_spirv_entry_abi(module: ir.Operation, opts) -> None:
    sizes: dict[tuple[str, str], list[int]] = {}
    failed = []

    def visit(op):
        o = op.operation
        if o.name == "gpu.launch_func":
            _, block, _ = launch_sizes(o)
            ws = [_const(v) for v in block]
            key = kernel_ref(o)
            if any(w is None for w in ws) or sizes.get(key, ws) != ws:
                failed.append((o, key))
            sizes[key] = ws
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for o, key in failed:
        emit_error(o, f"kernel @{key[0]}::@{key[1]} needs one constant block size for SPIR-V")
        return
    for top in module.regions[0].blocks[0].operations:
        top = top.operation
        if top.name != "gpu.module":
            continue
        mod = ir.StringAttr(top.attributes["sym_name"]).value
        targets = top.attributes["targets"] if "targets" in top.attributes else None
        if targets is not None and len(ir.ArrayAttr(targets)) and "spirv.target_env" in str(ir.ArrayAttr(targets)[0]):
            top.attributes["spirv.target_env"] = ir.ArrayAttr(targets)[0]
        for f in top.regions[0].blocks[0].operations:
            f = f.operation
            if f.name != "gpu.func":
                continue
            ws = sizes.get((mod, ir.StringAttr(f.attributes["sym_name"]).value))
            if ws is not None:
                f.attributes[ABI_ATTR] = ir.Attribute.parse(
                    f"#spirv.entry_point_abi<workgroup_size = [{ws[0]}, {ws[1]}, {ws[2]}]>")
