"""Random bad call arguments to compiled executables: wrong dtypes, ranks and shapes,
broken relations between symbolic dims, non-arrays, odd layouts (Fortran order,
strided views, byte-swapped), huge virtual sizes, sizes beyond `relax.upper_bounds`
(a ShapeError, never a silent result) and wrong arity. A call either
returns numpy's result or raises TypeError, ShapeError (a ValueError), ValueError or
MemoryError, or IndexOutOfRangeError (an IndexError) exactly where numpy's take raises
IndexError (@gather, take's default mode; @gather_clip clamps); any other exception or a
signal is a bug."""

from __future__ import annotations

import random
import traceback

import numpy as np

SRC = {
    "add": ('tensor<?x4xf32, #relax.shape<["n", 4]>>',) * 2,
    "rowsum": ('tensor<?x?xi32, #relax.shape<["n", "m"]>>',),
    "gather": ('tensor<?xui8, #relax.shape<["k"]>>', 'tensor<?xi64, #relax.shape<["j"]>>'),
    "gather_clip": ('tensor<?xui8, #relax.shape<["k"]>>', 'tensor<?xi64, #relax.shape<["j"]>>'),
    "even": ('tensor<?x3xf32, #relax.shape<["2*k", 3]>>',),
    "bounded": ('tensor<?x2xf32, #relax.shape<["n", 2]>>',),
    "unbounded": ('tensor<?x2xf32, #relax.shape<["n", 2]>>',),
}
#: relax.upper_bounds of @bounded (a static arena sized at n = 4: larger n is a ShapeError)
#: and of @unbounded (2**40: the arena is capped, the intermediate allocated per call)
BOUND = 4
TEXT = """
func.func @add(%x: {a0}, %y: {a1}) -> {a0} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({a0}, {a1}) -> {a0}
  return %0 : {a0}
}}
func.func @rowsum(%x: {r0}) -> tensor<?xi32, #relax.shape<["n"]>> attributes {{relax.function}} {{
  %0 = "relax.sum"(%x) {{axes = array<i64: 1>}} : ({r0}) -> tensor<?xi32, #relax.shape<["n"]>>
  return %0 : tensor<?xi32, #relax.shape<["n"]>>
}}
func.func @gather(%x: {g0}, %i: {g1}) -> tensor<?xui8, #relax.shape<["j"]>> attributes {{relax.function}} {{
  %0 = "relax.take"(%x, %i) {{axis = 0 : i64}} : ({g0}, {g1}) -> tensor<?xui8, #relax.shape<["j"]>>
  return %0 : tensor<?xui8, #relax.shape<["j"]>>
}}
func.func @gather_clip(%x: {g0}, %i: {g1}) -> tensor<?xui8, #relax.shape<["j"]>> attributes {{relax.function}} {{
  %0 = "relax.take"(%x, %i) {{axis = 0 : i64, mode = "clip"}} : ({g0}, {g1}) -> tensor<?xui8, #relax.shape<["j"]>>
  return %0 : tensor<?xui8, #relax.shape<["j"]>>
}}
func.func @even(%x: {e0}) -> {e0} attributes {{relax.function}} {{
  %0 = "relax.negative"(%x) : ({e0}) -> {e0}
  return %0 : {e0}
}}
func.func @bounded(%x: {b0}) -> tensor<?xf32, #relax.shape<["n"]>> attributes {{relax.function, relax.upper_bounds = {{n = {bound} : i64}}}} {{
  %0 = "relax.sum"(%x) {{axes = array<i64: 1>}} : ({b0}) -> tensor<?xf32, #relax.shape<["n"]>>
  %1 = "relax.negative"(%0) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %1 : tensor<?xf32, #relax.shape<["n"]>>
}}
func.func @unbounded(%x: {b0}) -> tensor<?xf32, #relax.shape<["n"]>> attributes {{relax.function, relax.upper_bounds = {{n = 1099511627776 : i64}}}} {{
  %0 = "relax.sum"(%x) {{axes = array<i64: 1>}} : ({b0}) -> tensor<?xf32, #relax.shape<["n"]>>
  %1 = "relax.negative"(%0) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %1 : tensor<?xf32, #relax.shape<["n"]>>
}}
""".format(a0=SRC["add"][0], a1=SRC["add"][1], r0=SRC["rowsum"][0], g0=SRC["gather"][0], g1=SRC["gather"][1],
           e0=SRC["even"][0], b0=SRC["bounded"][0], bound=BOUND)

_EXE = []


def executable():
    if not _EXE:
        import relax_mlir
        _EXE.append(relax_mlir.compile(TEXT))
    return _EXE[0]


def reference(fn: str, args):
    if fn == "add":
        return np.add(args[0], args[1])
    if fn == "rowsum":
        return np.sum(args[0], axis=1, dtype=np.int32)
    if fn == "gather":
        x, i = args
        try:
            return np.take(x, i, axis=0, mode="raise")
        except IndexError:
            return "IndexError"     # out of range: must raise IndexOutOfRangeError
    if fn == "gather_clip":
        x, i = args
        if x.shape[0] == 0:
            return np.zeros(i.shape, np.uint8)
        i = np.where(i < 0, i + x.shape[0], i)
        return x[np.clip(i, 0, x.shape[0] - 1)]
    if fn in ("bounded", "unbounded"):
        x = args[0]
        if x.ndim != 2 or x.shape[1] != 2 or not np.issubdtype(x.dtype, np.floating):
            return None
        if fn == "bounded" and x.shape[0] > BOUND:
            return "ShapeError"     # beyond relax.upper_bounds: must be refused
        return np.negative(np.sum(x, axis=1, dtype=np.float32))
    return np.negative(args[0])


GOOD = {
    "add": lambda r, n: [np.float32(r.random()) + np.zeros((n, 4), np.float32), np.ones((n, 4), np.float32)],
    "rowsum": lambda r, n: [np.arange(n * 3, dtype=np.int32).reshape(n, 3)],
    "gather": lambda r, n: [np.arange(n, dtype=np.uint8), np.array([0, -1, 5, n], np.int64)],
    "gather_clip": lambda r, n: [np.arange(n, dtype=np.uint8), np.array([0, -1, 5, n], np.int64)],
    "even": lambda r, n: [np.ones((2 * n, 3), np.float32)],
    "bounded": lambda r, n: [np.arange(n * 2, dtype=np.float32).reshape(n, 2)],
    "unbounded": lambda r, n: [np.arange(n * 2, dtype=np.float32).reshape(n, 2)],
}
ODD_DTYPES = [np.float64, np.float16, np.int32, np.int64, np.uint8, np.bool_, np.complex64, object, "U3",
              np.dtype(">f4"), np.dtype(">i4")]


def bad_value(r: random.Random, good: np.ndarray):
    """One argument derived from a valid one ``good``."""
    k = r.randrange(16)
    if k == 0:
        return good.astype(r.choice(ODD_DTYPES))
    if k == 1:
        return good.reshape(good.shape + (1,))
    if k == 2:
        return good.reshape(-1) if good.ndim > 1 else good.reshape(1, -1)
    if k == 3:
        return np.asarray(good[0]) if good.size else np.zeros((), good.dtype)
    if k == 4:
        return r.choice([None, "abc", 3, 2.5, object(), [1, 2], {"a": 1}, b"\x00" * 8, np.float32(1)])
    if k == 5:
        return good.tolist()
    if k == 6:
        return np.asfortranarray(good) if good.ndim > 1 else good[::-1]
    if k == 7:
        big = np.concatenate([good, good], axis=0) if good.ndim else good
        return big[::2]                      # a strided view
    if k == 8:
        shape = list(good.shape)
        if shape:
            shape[r.randrange(len(shape))] = r.choice([0, 1, 2 ** 31, 2 ** 40])
        return np.broadcast_to(np.zeros((), good.dtype), tuple(shape))   # huge, no memory
    if k == 9:
        shape = list(good.shape) or [1]
        shape[r.randrange(len(shape))] += r.choice([1, 2, 5])
        return np.zeros(shape, good.dtype)
    if k == 10:
        return good.view([("a", good.dtype)]) if good.ndim else good
    if k == 11:
        a = good.copy()
        a.flags.writeable = False
        return a
    if k == 12:
        return np.ma.masked_array(good)
    if k == 13:
        return good.byteswap().view(good.dtype.newbyteorder())
    if k == 14:
        return np.zeros(good.shape[:-1] + (0,), good.dtype) if good.ndim else good
    return good


ALLOWED = (TypeError, ValueError, MemoryError)     # ShapeError is a ValueError


def run_badcalls(seed: int, count: int = 30) -> dict:
    from relax_mlir import IndexOutOfRangeError
    exe = executable()
    r = random.Random(seed)
    calls = 0
    for i in range(count):
        fn = r.choice(sorted(GOOD))
        args = GOOD[fn](r, r.choice([0, 1, 3, 5]))
        how = r.random()
        if how < 0.1:
            args = args + [args[0]] if r.random() < 0.5 else args[:-1]
        else:
            for j in r.sample(range(len(args)), r.randint(1, len(args))):
                args[j] = bad_value(r, args[j])
        calls += 1
        try:
            got = exe[fn](*args)
        except ALLOWED:
            continue
        except IndexOutOfRangeError:
            try:
                want = reference(fn, [np.asarray(a) for a in args])
            except Exception:
                want = None
            if isinstance(want, str) and want == "IndexError":
                continue
            return {"calls": calls, "error": f"exe[{fn!r}] raised IndexOutOfRangeError for {_describe(args)}, "
                    f"where numpy gives {want!r}:\n{traceback.format_exc()[-1500:]}"}
        except Exception:
            return {"calls": calls, "error": f"exe[{fn!r}] raised a disallowed exception for "
                    f"{_describe(args)}:\n{traceback.format_exc()[-2500:]}"}
        # accepted: the arguments were usable; the result must be numpy's on them
        try:
            want = reference(fn, [np.asarray(a) for a in args])
        except Exception:
            want = None
        if isinstance(want, str):
            why = "indices out of range" if want == "IndexError" else "beyond its relax.upper_bounds"
            return {"calls": calls, "error": f"exe[{fn!r}] accepted {_describe(args)}, {why} "
                    f"(a {want} was due), and returned {np.asarray(got)!r}"}
        if want is not None:
            g = np.asarray(got)
            if g.shape != want.shape or not np.array_equal(g, want.astype(g.dtype), equal_nan=g.dtype.kind == "f"):
                return {"calls": calls, "error": f"exe[{fn!r}] accepted {_describe(args)} and returned a wrong "
                        f"result: {g!r}, numpy: {want!r}"}
    return {"calls": calls, "error": None}


def _describe(args) -> str:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(f"ndarray(shape={a.shape}, dtype={a.dtype}, strides={a.strides})")
        else:
            out.append(f"{type(a).__name__}: {a!r}"[:80])
    return "(" + ", ".join(out) + ")"
