"""relax-spirv-vector-buffers: vector loads and stores of a storage buffer as loads and
stores of its elements, the buffer retyped to a runtime array of vectors.

MLIR 22's ``convert-vector-to-spirv`` lowers ``vector.load`` / ``vector.store`` of a
``memref<?xf32>`` (a ``!spirv.rtarray<f32>`` storage buffer) to an ``AccessChain`` to the
first scalar and a pointer ``Bitcast`` to ``!spirv.ptr<vector<4xf32>>``. Vulkan shaders
use the Logical addressing model, where a pointer may not come from a bitcast: spirv-val
rejects the module ("OpLoad Pointer ... is not a logical pointer") and drivers may not
run it. The legal form declares the buffer as a runtime array of the vector type:

    %p = AccessChain %buf[0, %i] ; %q = Bitcast %p to ptr<vector<4xf32>> ; Load %q ["Aligned", 16]
    ->  %buf : ptr<struct<(rtarray<vector<4xf32>, stride=16>)>>
        %q = AccessChain %buf[0, %i >> 2] ; Load %q ["Aligned", 16]

A scalar access of the same buffer becomes a component access ``AccessChain %buf[0, %i >>
2, %i & 3]`` (logical too; in bounds of the runtime array only when the bound range is a
multiple of 16 bytes, as the runtimes' power-of-two buffers are: relax-gpu-vector-elementwise
never mixes the two on one buffer). The rewrite is exact only when every vector access starts
at an element index that is a multiple of the vector length: the pass retypes an
argument only when each of its vector loads and stores carries the ``Aligned`` memory
access with an alignment of the whole vector (16 bytes: what relax-gpu-vector-elementwise
emits behind its run-time guard), which, with the buffer's binding aligned to 16 bytes,
says exactly that. Buffers without vector accesses are left as they are.

Runs on the ``spirv.func`` arguments that ``convert-gpu-to-spirv`` emits (before
``spirv-lower-abi-attrs`` turns them into global variables).
"""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import spirv

from ...transforms.graph import outermost
from ...transforms.registry import register_pass

_BUFFER = re.compile(r"!spirv\.ptr<!spirv\.struct<\(!spirv\.rtarray<([^,<>]+), stride=(\d+)> \[0\]\)>, StorageBuffer>")
_VECTOR_PTR = re.compile(r"!spirv\.ptr<vector<(\d+)x([^,<>]+)>, StorageBuffer>")


def _aligned(user: ir.Operation, nbytes: int) -> bool:
    """A spirv.Load / spirv.Store through the pointer, aligned to the whole vector."""
    if user.name not in ("spirv.Load", "spirv.Store") or "alignment" not in user.attributes:
        return False
    return ir.IntegerAttr(user.attributes["alignment"]).value % nbytes == 0


def _vector_width(arg: ir.Value, elem: str, stride: int):
    """The vector length of the argument's vector accesses (None: leave it alone)."""
    width = None
    for u in arg.uses:
        chain = u.owner
        if chain.name != "spirv.AccessChain" or len(chain.operands) != 3 or chain.operands[0] != arg:
            return None
        for cu in chain.results[0].uses:
            cast = cu.owner
            if cast.name != "spirv.Bitcast":
                continue
            m = _VECTOR_PTR.fullmatch(str(cast.results[0].type))
            if m is None or m.group(2) != elem or (width is not None and int(m.group(1)) != width):
                return None
            width = int(m.group(1))
            if width & (width - 1) or not all(_aligned(x.owner, width * stride) for x in cast.results[0].uses):
                return None
    return width


def _retype(arg: ir.Value, elem: str, stride: int, width: int) -> None:
    arg.set_type(ir.Type.parse(f"!spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<{width}x{elem}>, "
                               f"stride={width * stride}> [0])>, StorageBuffer>"))
    vec_ptr = ir.Type.parse(f"!spirv.ptr<vector<{width}x{elem}>, StorageBuffer>")
    for chain in [u.owner for u in arg.uses]:
        ip, loc = ir.InsertionPoint(chain), chain.location
        zero, i = chain.operands[1], chain.operands[2]
        shift = spirv.ConstantOp(i.type, ir.IntegerAttr.get(i.type, width.bit_length() - 1), ip=ip, loc=loc)
        q = spirv.ShiftRightLogicalOp(i, shift.result, ip=ip, loc=loc).result
        casts = [u.owner for u in chain.results[0].uses if u.owner.name == "spirv.Bitcast"]
        if casts:
            vec = spirv.AccessChainOp(vec_ptr, arg, [zero, q], ip=ip, loc=loc).result
            for c in casts:
                c.results[0].replace_all_uses_with(vec)
                c.erase()
        if len(list(chain.results[0].uses)):
            mask = spirv.ConstantOp(i.type, ir.IntegerAttr.get(i.type, width - 1), ip=ip, loc=loc)
            r = spirv.BitwiseAndOp(i, mask.result, ip=ip, loc=loc).result
            comp = spirv.AccessChainOp(chain.results[0].type, arg, [zero, q, r], ip=ip, loc=loc).result
            chain.results[0].replace_all_uses_with(comp)
        chain.erase()


@register_pass("relax-spirv-vector-buffers",
               "SPIR-V kernels: storage buffers read or written as vectors (AccessChain + pointer Bitcast, "
               "illegal in Vulkan's logical addressing) retyped to runtime arrays of the vector type.")
def relax_spirv_vector_buffers(module: ir.Operation, opts) -> None:
    for f in outermost(module, "spirv.func"):
        if not len(f.regions[0].blocks):
            continue
        changed = False
        for arg in f.regions[0].blocks[0].arguments:
            m = _BUFFER.fullmatch(str(arg.type))
            if m is None:
                continue
            elem, stride = m.group(1), int(m.group(2))
            width = _vector_width(arg, elem, stride)
            if width is not None:
                _retype(arg, elem, stride, width)
                changed = True
        if changed:
            ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
            f.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([a.type for a in f.regions[0].blocks[0].arguments], ft.results))
