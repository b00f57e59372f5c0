"""relax-spirv-bf16-storage: bf16 kept as 16-bit integers in the vulkan target's kernels.

The pinned SPIR-V target has no bfloat16 type, and ``convert-gpu-to-spirv`` widens a type it
cannot represent to 32 bits (a ``memref<?xbf16>`` became an f32 runtime array: the kernel read
two bf16 values as one f32). The vulkan pipeline therefore computes bf16 in f32 with upstream
passes first (``math-extend-to-supported-types``, ``arith-emulate-unsupported-floats``) and
writes every f32 <-> bf16 conversion as integer operations (relax-bf16-casts: round to nearest
even, subnormals kept, the cpu target's bits). What is left of bf16 in a ``gpu.module`` is
storage: buffers, workgroup memory, loads and stores (scalar and vector), ``select``s, loop
values, constants and the ``i16 <-> bf16`` bitcasts those conversions begin and end with.

This pass only retypes that storage to ``i16`` (the same 16 bits; ``StorageBuffer16BitAccess``
as for f16): the kernels' signatures, block arguments and results; a bf16 constant becomes the
i16 constant of its bits; a bitcast between i16 and (former) bf16 disappears. A launch passes
a bf16 buffer as the i16 buffer the kernel now declares (an ``unrealized_conversion_cast`` on
the host: both are the same LLVM descriptor, which ``reconcile-unrealized-casts`` drops). An
op still computing on bf16 here (none that the pipeline emits) is an error naming it.
"""

from __future__ import annotations

import struct

from mlir import ir
from mlir.dialects import arith

from ...transforms.registry import emit_error, register_pass
from ...transforms.retype import nested_ops, retype_block_arguments, retype_results, retype_signature

#: ops that only move, select or view values: retyping their bf16 operands and results to i16
#: keeps their meaning (everything else on bf16 computes, and is refused)
_STORAGE_DIALECTS = ("memref.", "scf.", "cf.", "gpu.")
_STORAGE_OPS = {"arith.bitcast", "arith.constant", "arith.select", "vector.load", "vector.store",
                "vector.transfer_read", "vector.transfer_write", "vector.broadcast", "vector.splat",
                "vector.extract", "vector.insert", "vector.extract_strided_slice",
                "vector.insert_strided_slice", "vector.shape_cast", "vector.from_elements",
                "vector.extractelement", "vector.insertelement", "vector.shuffle", "vector.maskedload",
                "vector.maskedstore"}


def _has_bf16(t: ir.Type) -> bool:
    if isinstance(t, ir.ShapedType):
        return isinstance(ir.ShapedType(t).element_type, ir.BF16Type)
    return isinstance(t, ir.BF16Type)


def _i16(t: ir.Type) -> ir.Type:
    """``t`` with bf16 (its element type) as i16; other types unchanged."""
    i16 = ir.IntegerType.get_signless(16)
    if isinstance(t, ir.BF16Type):
        return i16
    if isinstance(t, ir.MemRefType) and _has_bf16(t):
        m = ir.MemRefType(t)
        return ir.MemRefType.get(list(m.shape), i16, m.layout, m.memory_space)
    if isinstance(t, ir.VectorType) and _has_bf16(t):
        v = ir.VectorType(t)
        return ir.VectorType.get(list(v.shape), i16, scalable=v.scalable_dims)
    return t


def _bits(value: float) -> int:
    """The bf16 bits of a value a bf16 attribute holds (exact in f32; NaN as the quiet NaN)."""
    if value != value:
        return 0x7FC0
    return struct.unpack("<I", struct.pack("<f", value))[0] >> 16


def _int_attr(attr: ir.Attribute, t: ir.Type) -> ir.Attribute | None:
    """The i16 form of a bf16 constant's value (scalar or splat), None when it is neither."""
    i16 = ir.IntegerType.get_signless(16)
    if isinstance(attr, ir.FloatAttr):
        return ir.IntegerAttr.get(i16, _bits(ir.FloatAttr(attr).value))
    if isinstance(attr, ir.DenseElementsAttr) and ir.DenseElementsAttr(attr).is_splat:
        v = ir.DenseElementsAttr(attr).get_splat_value()
        return ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(i16, _bits(ir.FloatAttr(v).value)))
    return None


def _bf16_value(attr: ir.Attribute) -> bool:
    """A constant's value is bf16 (a scalar, or a vector / tensor of them)."""
    return isinstance(attr, (ir.FloatAttr, ir.DenseElementsAttr)) and _has_bf16(attr.type)


#: ops of those dialects that compute on their values
_COMPUTING = {"gpu.subgroup_reduce", "gpu.all_reduce", "memref.atomic_rmw", "memref.generic_atomic_rmw"}


def _computes(op: ir.Operation) -> bool:
    if (op.name.startswith(_STORAGE_DIALECTS) and op.name not in _COMPUTING) or op.name in _STORAGE_OPS:
        return False
    return any(_has_bf16(v.type) for v in list(op.operands) + list(op.results))


def _refused(ops: list) -> bool:
    """Report every op of a kernel that still computes on bf16; True when there is one."""
    bad = [op for op in ops if _computes(op)]
    for op in bad:
        emit_error(op.location, f"'{op.name}' on bf16 is not supported on the vulkan target (bf16 is storage "
                                "there, computed in f32)")
    return bool(bad)


def _retype(ops: list) -> bool:
    """Retype the bf16 storage among ``ops`` (one ``gpu.module``'s); False on a constant it
    cannot express (reported)."""
    for op in ops:
        if op.name == "gpu.func":
            retype_signature(op, _i16)
        else:
            retype_block_arguments(op, _i16)
        retype_results(op, _i16)
    for op in ops:
        if op.name == "arith.constant" and _bf16_value(op.attributes["value"]):
            new = _int_attr(op.attributes["value"], op.results[0].type)
            if new is None:
                emit_error(op.location, "a non-splat bf16 vector constant is not supported on the vulkan target")
                return False
            with ir.InsertionPoint(op), op.location:
                c = arith.ConstantOp(op.results[0].type, new).result
            op.results[0].replace_all_uses_with(c)
            op.erase()
        elif op.name == "arith.bitcast" and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    return True


def _arguments(op: ir.Operation) -> list:
    return [a for region in op.regions for block in region.blocks for a in block.arguments]


def _retype_launches(module: ir.Operation, kernels: set) -> None:
    """Host launches of the retyped kernels (``kernels``: gpu.module names) pass their bf16
    operands as the i16 ones the kernels now declare."""
    for op in nested_ops(module):
        if op.name != "gpu.launch_func" or \
                ir.SymbolRefAttr(op.attributes["kernel"]).value[0] not in kernels:
            continue
        for i, v in enumerate(op.operands):
            if not _has_bf16(v.type):
                continue
            with ir.InsertionPoint(op), op.location:
                if isinstance(v.type, ir.BF16Type):
                    new = arith.BitcastOp(_i16(v.type), v).result
                else:
                    new = ir.Operation.create("builtin.unrealized_conversion_cast", results=[_i16(v.type)],
                                              operands=[v]).result
            op.operands[i] = new


@register_pass("relax-spirv-bf16-storage",
               "bf16 in GPU kernels (after its arithmetic became f32 and integer ops) stored as i16 for SPIR-V.")
def relax_spirv_bf16_storage(module: ir.Operation, opts) -> None:
    kernels = {}   # gpu.module name -> its ops, for those holding bf16
    for region in module.regions:   # gpu.modules sit in the module's body
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                if op.name != "gpu.module":
                    continue
                ops = nested_ops(op)
                # a bf16 value is a result or a kernel argument / attribution (a loop's block
                # argument starts from one of those)
                if any(_has_bf16(v.type) for o in ops
                       for v in (*o.results, *(_arguments(o) if o.name == "gpu.func" else ()))):
                    kernels[ir.StringAttr(op.attributes["sym_name"]).value] = ops
    if any([_refused(ops) for ops in kernels.values()]) or not all(_retype(ops) for ops in kernels.values()):
        return
    if kernels:
        _retype_launches(module, set(kernels))
