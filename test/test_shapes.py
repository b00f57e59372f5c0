"""The shapes package: canonical printing, simplification, the prover, parsing, the
#relax.shape attribute, the tensor type encoding, solve_for and match_shapes.

The random test at the end builds expressions over 2-3 symbols, checks that the
canonical text parses back to itself and that it evaluates like Python does.
"""

from __future__ import annotations

import random

import pytest
from mlir import ir

import relax_mlir
from relax_mlir.shapes import (UNKNOWN, Dim, Shape, ShapeSyntaxError, Truth, dim_max, dim_min,
                               parse_dim, prove_equal, prove_le, read_tensor_type, solve_for,
                               tensor_type)
from relax_mlir.shapes.match import match_shapes


# -- canonical printing and simplification ------------------------------------------

@pytest.mark.parametrize("a, b", [
    ("n+n", "2*n"),
    ("n + m", "m+n"),
    ("2*(n+m)", "2*m + 2*n"),
    ("n*m", "m*n"),
    ("(n + 1) - 1", "n"),
    ("min(n, m)", "min(m, n)"),
    ("max(4, n)", "max(n, 4)"),
])
def test_equal_shapes_print_equal(a, b):
    assert str(parse_dim(a)) == str(parse_dim(b))
    assert parse_dim(a) == parse_dim(b)
    assert hash(parse_dim(a)) == hash(parse_dim(b))


@pytest.mark.parametrize("text, canonical", [
    ("n+n", "2*n"),
    ("n + m", "m + n"),
    ("(2*n)//2", "n"),
    ("4*n//8", "n // 2"),
    ("(n*4 + 8) // 4", "n + 2"),
    ("(n + 1) // 2", "(n + 1) // 2"),
    ("n % 3", "n % 3"),
    ("(2*n) % 2", "0"),
    ("(n*m)//(2*k)", "m*n // (2*k)"),
    ("n - 1", "n - 1"),
    ("3 + 4", "7"),
    ("7 // 2", "3"),
    ("-(n // 2) + m", "m - (n // 2)"),
])
def test_canonical_form(text, canonical):
    d = parse_dim(text)
    assert str(d) == canonical
    assert str(parse_dim(str(d))) == canonical


def test_static_dims():
    d = parse_dim("3*4")
    assert d.is_static and d.value == 12
    assert Dim.of(5).is_static
    assert not parse_dim("n").is_static
    with pytest.raises(ValueError):
        parse_dim("n").value
    with pytest.raises(TypeError):
        Dim.of(True)


def test_arithmetic_operators():
    n, m = Dim.of("n"), Dim.of("m")
    assert n + n == "2*n"
    assert (n * 4) // 8 == "n // 2"
    assert (2 * n) % 2 == 0
    assert n - n == 0
    assert 10 - n == "10 - n"
    assert (n + m) * 2 == "2*m + 2*n"
    assert dim_min(n, m) == "min(m, n)"
    assert dim_max(n, 3) == "max(3, n)"
    assert n.symbols == frozenset({"n"})
    assert (n * m + 1).symbols == frozenset({"m", "n"})


@pytest.mark.parametrize("text, canonical", [
    ("((h - 1) // 2) // 2", "(h - 1) // 4"),                 # strided windows in a chain
    ("((h - 1) // 2 + 1 + 2 - 3) // 2 + 1", "(h - 1) // 4 + 1"),
    ("(h // 2 - 1) // 2", "(h - 2) // 4"),
    ("(h // 3 + 2*n) // 2", "n + h // 6"),                   # the integral rest joins the inner floor
    ("(2*(h // 3)) // 2", "h // 3"),                         # exact: cancels, no merge needed
    ("(h // 2 + h // 3) // 2", "(h // 3 + h // 2) // 2"),    # two floors: kept
    ("(3*(h // 2)) // 4", "3*(h // 2) // 4"),                # a multiple of a floor: kept
    ("(h // 2) // n", "(h // 2) // n"),                      # a symbolic divisor: kept
])
def test_nested_floor_division_folds(text, canonical):
    """(floor(u) + r) // c == (u + r) // c for an integer c > 0 and an integral r."""
    d = parse_dim(text)
    assert str(d) == canonical
    for h in range(0, 40):
        for n in (1, 2, 5):
            assert d.evaluate({"h": h, "n": n}) == eval(text.replace("h", str(h)).replace("n", str(n)))


# -- the prover -----------------------------------------------------------------------

@pytest.mark.parametrize("a, b, want", [
    ("2*n", "n+n", Truth.TRUE),
    ("n", "n+1", Truth.FALSE),
    ("n", "m", Truth.UNKNOWN),
    ("4*n", "5*n", Truth.UNKNOWN),          # equal at n = 0
    ("(2*n)//2", "n", Truth.TRUE),
    ("n*m", "m*n", Truth.TRUE),
    ("n + 2", "n", Truth.FALSE),
    (4, "4", Truth.TRUE),
    (4, 5, Truth.FALSE),
])
def test_prove_equal(a, b, want):
    assert prove_equal(a, b) is want
    assert prove_equal(b, a) is want


@pytest.mark.parametrize("a, b, want", [
    ("n", "n+1", Truth.TRUE),
    ("n+1", "n", Truth.FALSE),
    ("n", "m", Truth.UNKNOWN),
    ("n", "2*n", Truth.TRUE),               # sizes are >= 0
    ("0", "n", Truth.TRUE),
    ("n", "n", Truth.TRUE),
    (3, 2, Truth.FALSE),
    ("n + m", "n", Truth.UNKNOWN),
])
def test_prove_le(a, b, want):
    assert prove_le(a, b) is want


def test_truth_is_not_a_bool():
    with pytest.raises(TypeError):
        bool(prove_equal("n", "m"))


# -- substitution and evaluation ----------------------------------------------------------

def test_subs_and_evaluate():
    d = parse_dim("2*n + m // 4")
    assert d.subs({"n": 3}) == "m // 4 + 6"
    assert d.subs({"n": "k + 1"}) == "2*k + m // 4 + 2"
    assert d.subs({"n": Dim.of("m")}) == "2*m + m // 4"
    assert d.evaluate({"n": 3, "m": 9}) == 8
    with pytest.raises(KeyError):
        d.evaluate({"n": 3})
    s = Shape(["n", 4, "n*m"])
    assert s.evaluate({"n": 2, "m": 3}) == (2, 4, 6)
    assert s.subs({"m": 1}) == Shape(["n", 4, "n"])
    assert s.numel() == "4*m*n*n"
    assert Shape(["n", UNKNOWN]).numel() is None


# -- parse errors ------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["n +", "n**2", "f(n)", "", "   ", "n / 2", "1.5", "n; m",
                                  "min(n)", "max(n, m, k=1)", "n // 0", "n % 0", "lambda: 1"])
def test_parse_errors(text):
    with pytest.raises(ShapeSyntaxError):
        parse_dim(text)


def test_shape_syntax_error_is_value_error():
    assert issubclass(ShapeSyntaxError, ValueError)


# -- the #relax.shape attribute ---------------------------------------------------------------

@pytest.mark.parametrize("text, dims", [
    ('#relax.shape<["n", 4096]>', ["n", 4096]),
    ('#relax.shape<["2*n", "n + m"]>', ["2*n", "m + n"]),
    ('#relax.shape<["?", 3]>', [UNKNOWN, 3]),
    ("#relax.shape<[]>", []),
    ('#relax.shape<[4 : i64, "n"]>', [4, "n"]),
])
def test_attr_text_round_trip(text, dims):
    s = Shape.from_attr_text(text)
    assert s == Shape(dims)
    assert Shape.from_attr_text(s.to_attr_text()) == s
    assert s.to_attr_text() == Shape(dims).to_attr_text()


def test_attr_text_canonical():
    s = Shape(["n+n", 4, "?"])
    assert s.to_attr_text() == '#relax.shape<["2*n", 4, "?"]>'
    assert str(s) == "(2*n, 4, ?)"
    assert s.has_unknown and s.rank == 3
    assert str(Shape(["n"])) == "(n,)"


@pytest.mark.parametrize("text", ['#relax.shape<["n", 4>', "#relax.shape<n>", '["n" 4',
                                  '#relax.shape<["n +"]>', "#relax.shape<[abc]>", '#relax.shape<["n]>'])
def test_attr_text_errors(text):
    with pytest.raises(ShapeSyntaxError):
        Shape.from_attr_text(text)


@pytest.fixture
def ctx():
    c = relax_mlir.make_context()
    with c, ir.Location.unknown():
        yield c


def test_attr_round_trip_through_mlir(ctx):
    s = Shape(["n", 4, "?", "m // 2"])
    a = s.to_attr()
    assert str(a) == '#relax.shape<["n", 4, "?", "m // 2"]>'
    assert Shape.from_attr(a) == s


# -- tensor types --------------------------------------------------------------------------------

def test_tensor_type_write_read(ctx):
    t = tensor_type(["n", 4], "f32")
    assert str(t) == 'tensor<?x4xf32, #relax.shape<["n", 4]>>'
    sig = read_tensor_type(t)
    assert sig.shape == Shape(["n", 4]) and sig.dtype == "f32" and sig.rank == 2
    # fully static: a plain tensor type
    assert str(tensor_type([2, 3], "i64")) == "tensor<2x3xi64>"
    assert read_tensor_type(ir.Type.parse("tensor<2x3xi64>")).shape == Shape([2, 3])
    # no encoding: dynamic dims are unknown
    assert read_tensor_type(ir.Type.parse("tensor<?x3xf32>")).shape == Shape([UNKNOWN, 3])
    # canonical form on the way in
    t2 = ir.Type.parse('tensor<?x?xf16, #relax.shape<["n+n", "m + n"]>>')
    assert read_tensor_type(t2).shape == Shape(["2*n", "m+n"])
    assert tensor_type(read_tensor_type(t2).shape, "f16") == ir.Type.parse(
        'tensor<?x?xf16, #relax.shape<["2*n", "m + n"]>>')


@pytest.mark.parametrize("text", [
    'tensor<?x5xf32, #relax.shape<["n", 4]>>',      # static dims disagree
    'tensor<?x?xf32, #relax.shape<["n", 4]>>',      # static in the attribute, ? in the type
    'tensor<3x4xf32, #relax.shape<["n", 4]>>',      # symbolic in the attribute, static in the type
    'tensor<?xf32, #relax.shape<["n", 4]>>',        # rank differs
])
def test_tensor_type_disagreement(ctx, text):
    with pytest.raises(ShapeSyntaxError):
        read_tensor_type(ir.Type.parse(text))


# -- solve_for and match_shapes ------------------------------------------------------------------

def test_solve_for_linear():
    sol = solve_for(parse_dim("2*k"), parse_dim("n"), ["k"])
    assert sol is not None
    binding, conds = sol
    assert binding == {"k": parse_dim("n // 2")}
    assert [(str(a), str(b)) for a, b in conds] == [("n % 2", "0")]

    binding, conds = solve_for(parse_dim("k + 1"), parse_dim("n"), ["k"])
    assert binding == {"k": parse_dim("n - 1")} and conds == []

    binding, conds = solve_for(parse_dim("2*k"), parse_dim("4*n"), ["k"])
    assert binding == {"k": parse_dim("2*n")} and conds == []    # exact: no condition

    assert solve_for(parse_dim("k*k"), parse_dim("n"), ["k"]) is None
    assert solve_for(parse_dim("k*j"), parse_dim("n"), ["k", "j"]) is None
    assert solve_for(parse_dim("n"), parse_dim("n"), ["k"]) == ({}, [])


def test_match_shapes():
    m = match_shapes([Shape(["b", "2*k"])], [Shape(["n", "m"])], {"b", "k"})
    assert m.error is None and not m.unresolved
    assert m.bindings == {"b": parse_dim("n"), "k": parse_dim("m // 2")}
    assert [(str(a), str(b)) for a, b, _ in m.checks] == [("m % 2", "0")]

    m = match_shapes([Shape(["n", 4])], [Shape(["n", 5])], set())
    assert m.error is not None
    m = match_shapes([Shape(["n"])], [Shape(["n", 5])], set())
    assert m.error is not None and "rank" in m.error
    m = match_shapes([Shape(["a", "b"])], [Shape(["n", "n"])], {"a"})
    assert m.bindings == {"a": parse_dim("n")}
    assert [(str(a), str(b)) for a, b, _ in m.checks] == [("b", "n")]
    m = match_shapes([Shape(["a*b"])], [Shape(["n"])], {"a", "b"})
    assert m.unresolved == {"a", "b"}


# -- random expressions: round trip and evaluation ---------------------------------------------------

_ENV = {"min": min, "max": max, "__builtins__": {}}


def _gen(r: random.Random, depth: int, syms: list[str]) -> str:
    """A random expression in the attribute syntax that is also Python syntax."""
    if depth == 0 or r.random() < 0.2:
        return r.choice(syms) if r.random() < 0.65 else str(r.randint(0, 9))
    kind = r.choice(["+", "-", "*", "//", "%", "min", "max", "//s", "%s", "neg"])
    a = _gen(r, depth - 1, syms)
    if kind in ("min", "max"):
        return f"{kind}({a}, {_gen(r, depth - 1, syms)})"
    if kind in ("//", "%"):
        return f"({a}) {kind} {r.randint(1, 8)}"
    if kind in ("//s", "%s"):        # a symbolic divisor that is never 0
        return f"({a}) {kind[:-1]} ({r.choice(syms)} + {r.randint(1, 3)})"
    if kind == "neg":
        return f"{r.randint(0, 20)} - ({a})"
    return f"({a}) {kind} ({_gen(r, depth - 1, syms)})"


def test_random_expressions_round_trip_and_evaluate():
    r = random.Random(20240611)
    checked = 0
    for _ in range(350):
        syms = ["n", "m", "k"][: r.randint(2, 3)]
        text = _gen(r, r.randint(1, 4), syms)
        d = parse_dim(text)
        printed = str(d)
        again = parse_dim(printed)
        assert str(again) == printed, f"{text!r} prints {printed!r}, which reparses as {again}"
        assert Shape.from_attr_text(Shape([d]).to_attr_text()) == Shape([d])
        for _ in range(6):
            values = {s: r.randint(0, 24) for s in syms}
            want = eval(text, _ENV, dict(values))
            assert d.evaluate(values) == want, f"{text!r} -> {printed!r} at {values}"
            assert again.evaluate(values) == want, f"{printed!r} at {values}"
            checked += 1
    assert checked >= 2000


def test_random_prover_is_sound():
    """TRUE / FALSE answers must hold at every sampled assignment."""
    r = random.Random(7)
    for _ in range(120):
        syms = ["n", "m"][: r.randint(1, 2)]
        a, b = _gen(r, r.randint(0, 3), syms), _gen(r, r.randint(0, 3), syms)
        if r.random() < 0.3:
            b = f"({a}) + 0 * ({b})"
        eq, le = prove_equal(a, b), prove_le(a, b)
        for _ in range(8):
            values = {s: r.randint(0, 30) for s in syms}
            va, vb = eval(a, _ENV, dict(values)), eval(b, _ENV, dict(values))
            if eq is not Truth.UNKNOWN:
                assert (va == vb) == (eq is Truth.TRUE), f"prove_equal({a!r}, {b!r}) = {eq} at {values}"
            if le is not Truth.UNKNOWN:
                assert (va <= vb) == (le is Truth.TRUE), f"prove_le({a!r}, {b!r}) = {le} at {values}"


def test_sympy_mod_squaring_workaround():
    """sympy 1.14 squares an inner Mod in Mod(c*Mod(x, r), q); we must not."""
    d = parse_dim("((n % (m + 2)) * 16) % 7")
    for n in range(12):
        for m in range(5):
            assert d.evaluate({"n": n, "m": m}) == ((n % (m + 2)) * 16) % 7
    d = parse_dim("(128 * (n % 3)) % 356")
    assert [d.evaluate({"n": i}) for i in range(6)] == [0, 128, 256, 0, 128, 256]


def test_slash_gets_a_floor_division_hint():
    from relax_mlir.shapes.expr import ShapeSyntaxError, parse_dim

    with pytest.raises(ShapeSyntaxError) as e:
        parse_dim("n /2")
    assert str(e.value) == "malformed dimension expression 'n /2': '/' is not integer division; use '//' (n // 2)"
    with pytest.raises(ShapeSyntaxError, match=r"use '//' \(2\*n // m\)"):
        parse_dim("2*n / m")


def test_oversized_expressions_are_syntax_errors_not_crashes():
    from relax_mlir.shapes.expr import MAX_DIM_DEPTH, MAX_DIM_TEXT, ShapeSyntaxError, parse_dim

    with pytest.raises(ShapeSyntaxError, match=f"of 1001 characters is too long \\(at most {MAX_DIM_TEXT}\\)"):
        parse_dim("n" * 1001)
    with pytest.raises(ShapeSyntaxError, match=f"nested more than {MAX_DIM_DEPTH} deep"):
        parse_dim("-" * 65 + "n")
    assert str(parse_dim("-" * 62 + "n")) == "n"  # 63 levels: fine
    with pytest.raises(ShapeSyntaxError, match="expands to more than 4096 terms"):
        parse_dim("*".join(f"(a{i} + b{i})" for i in range(13)))
    assert str(parse_dim("*".join(f"(a{i} + 1)" for i in range(2)))) == "a0*a1 + a0 + a1 + 1"


def test_subs_with_a_large_mapping_touches_only_its_symbols():
    from relax_mlir.shapes import Dim

    mapping = {f"s{i}": i for i in range(20000)}
    mapping["n"] = 2
    assert Dim.of("n + 1").subs(mapping).value == 3
    assert str(Dim.of("m + 1").subs(mapping)) == "m + 1"
