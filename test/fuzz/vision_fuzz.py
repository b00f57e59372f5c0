"""Random small CNNs written in PyTorch through the importer, compiled ONCE, checked against eager.

One case = one ``torch.nn.Module`` generated as Python source (printed with a failure): a chain
of conv2d (kernel 1-7, square or not, stride 1-3, padding as ints, ``'same'``, asymmetric via
``F.pad``, the reflect / replicate / circular modes, dilation 1-3, groups 1 / depthwise /
grouped, channels 1, odd, and multiples of 8/16/32, bias or not), BatchNorm2d with random
statistics, ReLU / ReLU6 / GELU / SiLU, residual blocks (shape-keeping, and strided with a 1x1
shortcut), channel concatenation, max / avg pooling (padding, ``ceil_mode``,
``count_include_pad``), adaptive avg / max pooling, and a head (flatten + linear after an
adaptive pool, a mean, or the feature map itself).

The input ``x`` (batch, C, H, W) is exported with ``torch.export`` with a dynamic batch and
dynamic H / W: plain ``Dim``\\ s or derived ones (``f * h``, f in 2..32), bounds from the
smallest size every window accepts up to a maximum sized to keep a run cheap. Compiled once
(``relax_mlir.compile``, cpu target, default options and schedules), then run at the smallest
sizes, an odd size (97x131 where the bounds allow), the declared bounds and a random size,
each compared with the module run eagerly: ``|got - want| <= 1e-4 (|want| + max|want|)``
(rel err 1e-4 in f32). A size just past a bound must raise ``relax_mlir.ShapeError``.

Outcomes: ``refused`` (a ``CompileError`` naming an op the program contains and the importer
does not convert), ``export_skipped`` (torch.export refused the generated module: counted,
not ours); anything else raised while importing / compiling / running, a wrong shape or value,
a missing bound check, a crash or a hang (runner.py's worker) is a failure.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

#: channel counts: 1, odd, and the direct kernel's block multiples
CHANNELS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 48, 64]
ACTS = {"relu": "F.relu({x})", "relu6": "F.relu6({x})", "gelu": "F.gelu({x})", "silu": "F.silu({x})",
        "gelu_tanh": "F.gelu({x}, approximate='tanh')", "leaky": "F.leaky_relu({x}, 0.1)",
        "hardswish": "F.hardswish({x})", "hardsigmoid": "F.hardsigmoid({x})",
        "relu6_module": "torch.nn.ReLU6()({x})"}
#: activations without a conversion, inserted rarely: the import must be a refusal naming them
RARE_ACTS = {"elu": "F.elu({x})", "softplus": "F.softplus({x})", "mish": "F.mish({x})"}
#: multiply-accumulates at the declared bounds (one run): keeps a case to seconds
MAC_BUDGET = 4e8
TOL = 1e-4


@dataclass(frozen=True)
class Win:
    """A window op on one spatial axis: effective kernel, stride, padding left/right, ceil mode,
    and the padding mode's constraint (reflect: pad < n, circular: pad <= n)."""
    k: int
    s: int
    pl: int
    pr: int
    ceil: bool = False
    mode: str = "zeros"

    def out(self, n: int) -> int:
        """Output size, or 0 when the input of size n is invalid."""
        if n < 1:
            return 0
        if self.mode == "reflect" and max(self.pl, self.pr) >= n:
            return 0
        if self.mode == "circular" and max(self.pl, self.pr) > n:
            return 0
        p = n + self.pl + self.pr
        if p < self.k:
            return 0
        if not self.ceil:
            return (p - self.k) // self.s + 1
        o = -(-(p - self.k) // self.s) + 1
        if (o - 1) * self.s >= n + self.pl:
            o -= 1
        return o


@dataclass(frozen=True)
class Adaptive:
    size: int

    def out(self, n: int) -> int:
        return self.size if n >= 1 else 0


@dataclass
class Val:
    name: str
    c: int
    key: tuple          # (H transforms, W transforms): equal keys = equal sizes for every input
    flat: bool = False  # a (batch, features) value
    chain: Optional[tuple] = None   # (H, W) real transforms from x (validity and cost)


@dataclass
class Program:
    seed: int
    src: str
    cin: int
    ops: list
    hwin: list          # the H transforms of every value computed (validity of a size)
    wwin: list
    outputs: list
    dyn_batch: bool
    hspec: tuple        # ("static", n) | ("dim", lo, hi) | ("derived", f, lo, hi) (lo/hi of the root)
    wspec: tuple
    bmax: int
    rare: Optional[str] = None
    flops: float = 0.0
    oblivious: bool = False   # export under torch's backed_size_oblivious (no 0/1 specialization guards)


def _apply(ts, n: int) -> int:
    for t in ts:
        n = t.out(n)
        if n < 1:
            return 0
    return n


class Gen:
    def __init__(self, seed: int, attempt: int = 0):
        self.r = random.Random(seed if not attempt else seed * 7919 + attempt)
        self.seed = seed
        self.init: list[str] = []
        self.lines: list[str] = []
        self.vals: list[Val] = []
        self.nmod = 0
        self.ops: list[str] = []
        self.hwin: list = []      # every transform chain reached (a size is valid if all are)
        self.wwin: list = []
        self.macs: list = []      # (macs per output pixel, value) for the cost estimate
        self.rare: Optional[str] = None

    def mod(self, text: str, prefix: str = "m") -> str:
        n = f"{prefix}{self.nmod}"
        self.nmod += 1
        self.init.append(f"self.{n} = {text}")
        return f"self.{n}"

    def new(self, expr: str, c: int, key: tuple, op: str, macs: float = 0.0, flat: bool = False,
            chain: Optional[tuple] = None) -> Val:
        v = Val(f"v{len(self.lines)}", c, key, flat, chain or key)
        self.lines.append(f"{v.name} = {expr}")
        self.vals.append(v)
        self.ops.append(op)
        self.hwin.append(v.chain[0])
        self.wwin.append(v.chain[1])
        if macs:
            self.macs.append((macs, v.chain))
        return v

    def chan(self) -> int:
        return self.r.choice(CHANNELS)

    # -- ops ----------------------------------------------------------------------------------
    def conv(self, x: Val, cout: Optional[int] = None, keep: bool = False, stride: Optional[int] = None,
             k: Optional[int] = None) -> Val:
        """A conv2d; ``keep``: a shape-keeping one (odd kernel, stride 1, symmetric padding);
        ``stride``: the canonical strided form (odd kernel, padding d*(k-1)/2)."""
        r = self.r
        cin = x.c
        g_kind = r.choices(["1", "dw", "grouped"], [6, 3, 2])[0]
        if g_kind == "dw" and cout is None:
            groups, cout = cin, cin * r.choice([1, 1, 1, 2])
        elif g_kind == "dw" and cout % cin == 0:
            groups = cin
        elif g_kind == "grouped":
            cout = cout or self.chan()
            gs = [g for g in range(2, cin + 1) if cin % g == 0 and cout % g == 0]
            groups = r.choice(gs) if gs else 1
        else:
            groups, cout = 1, cout or self.chan()
        if groups == 1:
            g_kind = "1"
        bias = r.random() < 0.6
        dil = (r.choice([1, 1, 1, 1, 2, 3]), r.choice([1, 1, 1, 1, 2, 3]))
        pad_expr, pre, mode = None, None, "zeros"
        if keep or stride:
            kk = k or r.choice([1, 3, 3, 3, 5, 7])
            ks = (kk, kk) if r.random() < 0.8 else (kk, r.choice([1, 3, 5]))
            s = (stride or 1, stride or 1)
            pads = [dil[i] * (ks[i] - 1) // 2 for i in range(2)]
            padding = (pads[0], pads[1])
            if keep and r.random() < 0.3:
                pad_expr = "'same'"
            if r.random() < 0.15:
                mode = r.choice(["reflect", "replicate", "circular"])
            wins = [Win(dil[i] * (ks[i] - 1) + 1, s[i], pads[i], pads[i], mode=mode) for i in range(2)]
        else:
            ks = (r.randint(1, 7), r.randint(1, 7)) if r.random() < 0.3 else (r.randint(1, 7),) * 2
            s = (r.choice([1, 1, 2, 2, 3]),) * 2 if r.random() < 0.8 else (r.randint(1, 3), r.randint(1, 3))
            how = r.choices(["int", "same", "asym", "mode"], [5, 2, 2, 1])[0]
            if how == "same" and s == (1, 1):
                pad_expr = "'same'"
                tot = [dil[i] * (ks[i] - 1) for i in range(2)]
                wins = [Win(tot[i] + 1, 1, tot[i] // 2, tot[i] - tot[i] // 2) for i in range(2)]
                padding = None
            elif how == "asym":
                p4 = [r.randint(0, 3) for _ in range(4)]   # F.pad: (left, right, top, bottom)
                pre = f"F.pad({{x}}, ({p4[0]}, {p4[1]}, {p4[2]}, {p4[3]}))"
                padding = (0, 0)
                wins = [Win(dil[0] * (ks[0] - 1) + 1, s[0], p4[2], p4[3]),
                        Win(dil[1] * (ks[1] - 1) + 1, s[1], p4[0], p4[1])]
            else:
                padding = (r.randint(0, ks[0]), r.randint(0, ks[1]))
                if how == "mode":
                    mode = r.choice(["reflect", "replicate", "circular"])
                wins = [Win(dil[i] * (ks[i] - 1) + 1, s[i], padding[i], padding[i], mode=mode) for i in range(2)]
        if pad_expr is None:
            pad_expr = f"({padding[0]}, {padding[1]})"
        m = self.mod(f"torch.nn.Conv2d({cin}, {cout}, ({ks[0]}, {ks[1]}), stride=({s[0]}, {s[1]}), "
                     f"padding={pad_expr}, dilation=({dil[0]}, {dil[1]}), groups={groups}, bias={bias}"
                     + (f", padding_mode='{mode}'" if mode != "zeros" else "") + ")", "c")
        src = pre.format(x=x.name) if pre else x.name
        key = (x.key[0] + (wins[0],), x.key[1] + (wins[1],))
        if keep:   # stride 1, symmetric padding d*(k-1)/2: the size is kept exactly
            key = x.key
        elif stride:
            key = (x.key[0] + (("down", stride),), x.key[1] + (("down", stride),))
        macs = cout * (cin // groups) * ks[0] * ks[1]
        same = "/same" if pad_expr == "'same'" else ""
        return self.new(f"{m}({src})", cout, key, f"conv{ks[0]}x{ks[1]}/s{s[0]}{s[1]}/d{dil[0]}{dil[1]}/g{g_kind}"
                        f"{'/' + mode if mode != 'zeros' else ''}{'/asym' if pre else ''}{same}", macs,
                        chain=self._then(x, wins))

    @staticmethod
    def _then(x: Val, wins) -> tuple:
        """x's real transforms followed by ``wins`` (H, W)."""
        return (x.chain[0] + (wins[0],), x.chain[1] + (wins[1],))

    def bn(self, x: Val) -> Val:
        m = self.mod(f"torch.nn.BatchNorm2d({x.c})", "bn")
        return self.new(f"{m}({x.name})", x.c, x.key, "bn", chain=x.chain)

    def act(self, x: Val) -> Val:
        r = self.r
        if self.rare is None and r.random() < 0.03:
            name = r.choice(sorted(RARE_ACTS))
            self.rare = name
            tpl = RARE_ACTS[name]
        else:
            name = r.choice(sorted(ACTS))
            tpl = ACTS[name]
        return self.new(tpl.format(x=x.name), x.c, x.key, name, flat=x.flat, chain=x.chain)

    def pool(self, x: Val) -> Val:
        r = self.r
        kind = r.choices(["max", "avg", "amax", "aavg"], [4, 3, 1, 2])[0]
        if kind in ("amax", "aavg"):
            o = (r.randint(1, 4), r.randint(1, 4)) if r.random() < 0.5 else (r.randint(1, 3),) * 2
            fn = "adaptive_max_pool2d" if kind == "amax" else "adaptive_avg_pool2d"
            wins = (Adaptive(o[0]), Adaptive(o[1]))
            return self.new(f"F.{fn}({x.name}, ({o[0]}, {o[1]}))", x.c,
                            (x.key[0] + (wins[0],), x.key[1] + (wins[1],)), f"{kind}{o[0]}x{o[1]}",
                            chain=self._then(x, wins))
        k = (r.randint(1, 4),) * 2 if r.random() < 0.8 else (r.randint(1, 4), r.randint(1, 4))
        s = (r.choice([1, 2, 2, 3]),) * 2 if r.random() < 0.8 else (r.randint(1, 3), r.randint(1, 3))
        if r.random() < 0.3:
            s = None   # the default: stride = kernel
        st = s or k
        p = (r.randint(0, k[0] // 2), r.randint(0, k[1] // 2))
        ceil = r.random() < 0.25
        dil = (1, 1)
        if kind == "max" and r.random() < 0.2:
            dil = (r.randint(1, 2), r.randint(1, 2))
        extra = ", ceil_mode=True" if ceil else ""
        if kind == "max":
            extra += f", dilation=({dil[0]}, {dil[1]})" if dil != (1, 1) else ""
            call = f"F.max_pool2d({x.name}, ({k[0]}, {k[1]}), {('(%d, %d)' % s) if s else 'None'}, ({p[0]}, {p[1]}){extra})"
        else:
            cip = r.random() < 0.5
            extra += "" if cip else ", count_include_pad=False"
            call = f"F.avg_pool2d({x.name}, ({k[0]}, {k[1]}), {('(%d, %d)' % s) if s else 'None'}, ({p[0]}, {p[1]}){extra})"
        wins = [Win(dil[i] * (k[i] - 1) + 1, st[i], p[i], p[i], ceil=ceil) for i in range(2)]
        return self.new(call, x.c, (x.key[0] + (wins[0],), x.key[1] + (wins[1],)),
                        f"{kind}pool{k[0]}x{k[1]}/s{st[0]}{st[1]}/p{p[0]}{p[1]}{'/ceil' if ceil else ''}",
                        macs=k[0] * k[1] * x.c / 8, chain=self._then(x, wins))

    def residual(self, x: Val) -> Val:
        """A residual block: shape-keeping convs added to x, or a strided block whose 1x1
        (strided) shortcut conv meets the main path's (h - 1) // s + 1."""
        r = self.r
        if r.random() < 0.6:
            y = x
            for i in range(r.randint(1, 2)):
                y = self.conv(y, cout=x.c, keep=True)
                if r.random() < 0.6:
                    y = self.bn(y)
                if r.random() < 0.7 and i == 0:
                    y = self.act(y)
            return self.new(f"{y.name} + {x.name}", x.c, x.key, "residual", chain=y.chain)
        s = r.choice([1, 2, 2, 3])
        cout = self.chan()
        y = self.conv(x, cout=cout, stride=s)
        if r.random() < 0.6:
            y = self.bn(y)
        y = self.act(y)
        y = self.conv(y, cout=cout, keep=True)
        sc = self.conv(x, cout=cout, stride=s, k=1)
        if r.random() < 0.5:
            sc = self.bn(sc)
        return self.new(f"{y.name} + {sc.name}", cout, y.key, "residual-down", chain=y.chain)

    def concat(self, x: Val) -> Val:
        a = self.conv(x, keep=True)
        b = self.conv(x, keep=True) if self.r.random() < 0.5 else x
        return self.new(f"torch.cat(({a.name}, {b.name}), 1)", a.c + b.c, x.key, "cat", chain=a.chain)

    def head(self, x: Val) -> Val:
        r = self.r
        kind = r.choices(["gap", "adaptive", "mean", "none"], [4, 2, 2, 2])[0]
        if kind == "none":
            return x
        n = r.choice([1, 3, 10, 16])
        if kind == "mean":
            f = self.new(f"{x.name}.mean((2, 3))", x.c, ((), ()), "mean-hw", flat=True, chain=x.chain)
            feats = x.c
        else:
            o = 1 if kind == "gap" else r.randint(2, 3)
            fn = r.choice(["adaptive_avg_pool2d", "adaptive_max_pool2d"]) if kind == "adaptive" else "adaptive_avg_pool2d"
            p = self.new(f"F.{fn}({x.name}, {o})", x.c, ((Adaptive(o),), (Adaptive(o),)), f"{fn}{o}",
                         chain=self._then(x, (Adaptive(o), Adaptive(o))))
            f = self.new(f"torch.flatten({p.name}, 1)", x.c * o * o, p.key, "flatten", flat=True, chain=p.chain)
            feats = x.c * o * o
        lin = self.mod(f"torch.nn.Linear({feats}, {n}, bias={r.random() < 0.8})", "fc")
        v = self.new(f"{lin}({f.name})", n, f.key, "linear", macs=feats * n, flat=True,
                     chain=((Adaptive(1),), (Adaptive(1),)))
        if r.random() < 0.3:
            v = self.act(v)
        return v

    # -- the program --------------------------------------------------------------------------
    def build(self) -> Program:
        r = self.r
        cin = r.choice([1, 3, 3, 3, 4, 8])
        x = Val("x", cin, ((), ()), chain=((), ()))
        self.vals.append(x)
        cur = x
        if r.random() < 0.5:       # a stem: a big strided conv, often BN + act, often a max pool
            cur = self.conv(cur, cout=r.choice([8, 16, 32, 3, 5]), stride=r.choice([1, 2, 2]), k=r.choice([3, 5, 7]))
            if r.random() < 0.6:
                cur = self.bn(cur)
            cur = self.act(cur)
            if r.random() < 0.4:
                cur = self.pool(cur)
        for _ in range(r.randint(1, 5)):
            op = r.choices(["conv", "bn", "act", "pool", "residual", "concat"], [6, 2, 3, 2, 3, 1])[0]
            if op == "conv":
                cur = self.conv(cur)
            elif op == "bn":
                cur = self.bn(cur)
            elif op == "act":
                cur = self.act(cur)
            elif op == "pool":
                cur = self.pool(cur)
            elif op == "residual":
                cur = self.residual(cur)
            else:
                cur = self.concat(cur)
        outs = [self.head(cur)]
        # the feature map as a second output (a head-less program draws once more first)
        if (outs[0].flat or r.random() >= 0.3) and r.random() < 0.25 and cur is not outs[0]:
            outs.append(cur)
        dyn_batch = r.random() < 0.8
        hspec = self._spec(self.hwin)
        wspec = self._spec(self.wwin)
        src = ["class M(torch.nn.Module):", "    def __init__(self):", "        super().__init__()"]
        src += ["        " + line for line in self.init]
        src += ["", "    def forward(self, x):"]
        src += ["        " + line for line in self.lines]
        src += [f"        return ({', '.join(v.name for v in outs)},)"]
        p = Program(self.seed, "\n".join(src), cin, self.ops, self.hwin, self.wwin, outs, dyn_batch, hspec, wspec,
                    bmax=r.choice([2, 4, 8]) if dyn_batch else r.choice([1, 2, 3]), rare=self.rare)
        self._fit(p)
        if p.bmax < 2:
            p.dyn_batch = False      # a Dim needs max >= 2
        p.oblivious = r.random() < 0.3
        return p

    def _spec(self, chains) -> tuple:
        """H or W: static, a Dim with bounds, or a derived ``f * h``; the minimum is the smallest
        size every window of the chains accepts (from there up to the maximum)."""
        r = self.r
        kind = r.choices(["static", "dim", "derived"], [1, 6, 3])[0]
        hi = r.choice([32, 48, 64, 97, 131, 160, 256])
        lo = _min_valid(chains, 1, 512)
        if lo is None:
            raise _Invalid()     # no input size makes every window valid: build() draws again
        if kind == "static":
            return ("static", max(lo, r.choice([1, 7, 16, 33, 64])))
        if kind == "dim":
            return ("dim", lo, max(hi, lo + 1))
        f = r.choice([2, 4, 8, 16, 32])
        rlo = _min_valid_scaled(chains, f)
        return ("derived", f, rlo, max(rlo + 1, hi // f, 2))

    def _fit(self, p: Program) -> None:
        """Shrink the bounds until a run at them costs <= MAC_BUDGET multiply-accumulates."""
        for _ in range(40):
            p.flops = cost(self.macs, p, hmax(p.hspec), hmax(p.wspec), p.bmax)
            if p.flops <= MAC_BUDGET:
                return
            if p.bmax > 1:
                p.bmax //= 2
                continue
            hs, ws = p.hspec, p.wspec
            big = "h" if hmax(hs) >= hmax(ws) else "w"
            spec = hs if big == "h" else ws
            if spec[0] == "static" or hmax(spec) <= hmin(spec) + 1:
                spec = ws if big == "h" else hs
                big = "w" if big == "h" else "h"
            if spec[0] == "static" or hmax(spec) <= hmin(spec) + 1:
                return
            if spec[0] == "dim":
                spec = ("dim", spec[1], max(spec[1] + 1, hmax(spec) * 3 // 4))
            else:
                spec = ("derived", spec[1], spec[2], max(spec[2] + 1, spec[3] * 3 // 4))
            if big == "h":
                p.hspec = spec
            else:
                p.wspec = spec


def _valid(chains, n: int) -> bool:
    return all(_apply(c, n) >= 1 for c in chains)


def _min_valid(chains, lo: int, hi: int) -> Optional[int]:
    """The smallest n such that every size in [n, hi] is valid (None: none is)."""
    n = None
    for m in range(hi, lo - 1, -1):
        if not _valid(chains, m):
            break
        n = m
    return n


def _min_valid_scaled(chains, f: int) -> int:
    n = None
    for m in range(512 // f, 0, -1):
        if not _valid(chains, f * m):
            break
        n = m
    return n or 1


def hmin(spec) -> int:
    return spec[1] if spec[0] in ("static", "dim") else spec[1] * spec[2]


def hmax(spec) -> int:
    return spec[1] if spec[0] == "static" else spec[2] if spec[0] == "dim" else spec[1] * spec[3]


def cost(macs, p: Program, h: int, w: int, b: int) -> float:
    total = 0.0
    for m, key in macs:
        oh = _apply(key[0], h) if key[0] else h
        ow = _apply(key[1], w) if key[1] else w
        total += m * max(oh, 1) * max(ow, 1) * b
    return total


class _Invalid(Exception):
    pass


def build(seed: int) -> Program:
    """The program of ``seed`` (a draw whose windows no input size satisfies, e.g. a kernel
    larger than an adaptive pool's output, is drawn again from the seed's next stream)."""
    for attempt in range(50):
        try:
            return Gen(seed, attempt).build()
        except _Invalid:
            continue
    raise RuntimeError(f"vision fuzz seed {seed}: no valid program in 50 draws")


def _module(p: Program):
    import torch
    import torch.nn.functional as F
    ns = {"torch": torch, "F": F}
    exec(compile(p.src, f"<vision-fuzz seed {p.seed}>", "exec"), ns)
    torch.manual_seed(p.seed)
    model = ns["M"]()
    g = torch.Generator().manual_seed(p.seed)
    with torch.no_grad():     # batch norm statistics that are not the identity
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return model.eval()


def _dims(p: Program, mins: Optional[dict] = None):
    """The ``dynamic_shapes`` of x (``mins`` overrides a Dim's minimum: torch's suggested fix)."""
    from torch.export import Dim
    mins = mins or {}
    d = {}
    if p.dyn_batch:
        d[0] = Dim("batch", min=mins.get("batch", 1), max=p.bmax)
    for axis, name, spec in ((2, "h", p.hspec), (3, "w", p.wspec)):
        if spec[0] == "dim":
            d[axis] = Dim(name, min=mins.get(name, spec[1]), max=spec[2])
        elif spec[0] == "derived":
            d[axis] = spec[1] * Dim(name, min=mins.get(name, spec[2]), max=spec[3])
    return {"x": d or None}


def _sizes(p: Program, r: random.Random) -> list:
    """(batch, H, W) to run: the smallest, an odd one (97x131 where it fits), the bounds, a random one."""
    def axis(spec, want):
        if spec[0] == "static":
            return spec[1]
        if spec[0] == "dim":
            n = min(max(want, spec[1]), spec[2])
            return n if n % 2 or n == spec[1] or n == spec[2] else n - 1
        f, lo, hi = spec[1:]
        m = min(max(want // f, lo), hi)
        m = m if m % 2 or m == lo else m - 1
        return f * max(m, lo)

    def rnd(spec):
        if spec[0] == "static":
            return spec[1]
        if spec[0] == "dim":
            return r.randint(spec[1], spec[2])
        return spec[1] * r.randint(spec[2], spec[3])
    bmin = getattr(p, "batch_min", 1) if p.dyn_batch else p.bmax
    out = [(bmin, hmin(p.hspec), hmin(p.wspec)),
           (max(bmin, min(3, p.bmax)), axis(p.hspec, 97), axis(p.wspec, 131)),
           (p.bmax, hmax(p.hspec), hmax(p.wspec)),
           (r.randint(bmin, p.bmax), rnd(p.hspec), rnd(p.wspec))]
    seen, uniq = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def _export(p: Program, model):
    """torch.export at a mid size; when torch narrows a Dim's range (its guards: a window that
    needs a larger input than our bound), retry once with its suggested minimum."""
    import torch

    def mid(spec, pick):
        if spec[0] == "static":
            return spec[1]
        lo, hi = (spec[1], spec[2]) if spec[0] == "dim" else (spec[2], spec[3])
        n = max(lo, min(hi, pick))
        n = n if n >= 2 else min(2, hi)
        return n if spec[0] == "dim" else spec[1] * n
    b = min(2, p.bmax) if p.dyn_batch else p.bmax
    # an example well inside the range: torch specializes a size that is 1 in the example
    ex = torch.randn(b, p.cin, mid(p.hspec, 37 if p.hspec[0] == "dim" else 64 // p.hspec[1]),
                     mid(p.wspec, 45 if p.wspec[0] == "dim" else 80 // p.wspec[1]))
    import torch.fx.experimental._config as fx_config

    mins: dict = {}
    for attempt in range(4):
        ds = _dims(p, mins)
        try:
            with fx_config.patch(backed_size_oblivious=p.oblivious):
                ep = torch.export.export(model, (ex,), dynamic_shapes=ds)
            _narrow(p, ep)
            return ep, ds, mins
        except Exception as e:   # noqa: BLE001
            msg = str(e)
            fixes = dict((n, int(lo)) for n, lo in re.findall(r"(\w+) = Dim\('\w+', min=(\d+)", msg))
            fixes.update((n, int(lo)) for n, lo in re.findall(r"_?(\w+) = Dim\('_?\w+', min=(\d+)", msg))
            new = {n: lo for n, lo in fixes.items() if n in ("batch", "h", "w") and lo > mins.get(n, 0)}
            if "marked batch as dynamic but your code specialized it" in msg and p.dyn_batch and attempt < 3:
                p.dyn_batch, p.bmax = False, b     # torch fixed the batch at the example's
                continue
            if not new and not p.oblivious and "Constraints violated" in msg and attempt < 3:
                p.oblivious = True   # torch's 0/1 specialization guards a strided size (!= 1, == 1)
                continue
            if attempt == 3 or not new:
                raise
            mins.update(new)
            for n, lo in new.items():   # the run sizes follow the narrowed bounds
                if n == "batch":
                    continue
                spec = p.hspec if n == "h" else p.wspec
                if spec[0] == "dim":
                    spec = ("dim", max(lo, spec[1]), max(spec[2], lo))
                elif spec[0] == "derived":
                    spec = ("derived", spec[1], max(lo, spec[2]), max(spec[3], lo))
                if n == "h":
                    p.hspec = spec
                else:
                    p.wspec = spec
            if "batch" in new:
                p.batch_min = new["batch"]


def _narrow(p: Program, ep) -> None:
    """Follow the ranges torch.export settled on (its guards narrow a Dim without an error,
    e.g. a derived ``4 * w`` to w >= 2): the run sizes stay inside what the program accepts."""
    (x,) = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name == "x"]
    shape = x.meta["val"].shape
    for axis in (0, 2, 3):
        e = getattr(getattr(shape[axis], "node", None), "expr", None)
        if e is None or not getattr(e, "free_symbols", None):
            if axis == 0 and p.dyn_batch:
                p.dyn_batch, p.bmax = False, int(shape[0])
            elif axis and (p.hspec if axis == 2 else p.wspec)[0] != "static":   # torch specialized it
                if axis == 2:
                    p.hspec = ("static", int(shape[axis]))
                else:
                    p.wspec = ("static", int(shape[axis]))
            continue
        vr = ep.range_constraints.get(next(iter(e.free_symbols)))
        if vr is None:
            continue
        lo, hi = int(vr.lower), int(vr.upper) if vr.upper.is_finite else None
        if axis == 0:
            p.batch_min = max(getattr(p, "batch_min", 1), lo)
            p.bmax = min(p.bmax, hi) if hi else p.bmax
            continue
        spec = p.hspec if axis == 2 else p.wspec
        if spec[0] == "dim":
            spec = ("dim", max(spec[1], lo), min(spec[2], hi) if hi else spec[2])
        elif spec[0] == "derived":
            spec = ("derived", spec[1], max(spec[2], lo), min(spec[3], hi) if hi else spec[3])
        if axis == 2:
            p.hspec = spec
        else:
            p.wspec = spec


def guards_fail(guards: list, x) -> Optional[str]:
    """The first of torch.export's guards (Python source over ``L['x']``) that ``x`` breaks:
    a size outside the program's domain, which the executable must refuse (ShapeError)."""
    ns = {"L": {"x": x}, "max": max, "min": min, "abs": abs, "math": math}
    for g in guards:
        try:
            ok = eval(g, ns)    # noqa: S307  torch's own guard code
        except Exception:       # noqa: BLE001  not evaluable here: not judged
            continue
        if not ok:
            return g
    return None


def metadata_breaks(ep, x) -> Optional[str]:
    """The first node of torch's exported graph whose stated shape (its metadata, symbols
    bound from x's sizes) differs from the shape eager execution gives at x: torch
    specialized that size at the example (e.g. an output of 1), so its program does not
    cover x and the executable may refuse it (a ShapeError from the stated shape)."""
    import torch
    import torch.fx

    (ph,) = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name == "x"]
    env = {}
    for d, n in zip(ph.meta["val"].shape, x.shape):
        e = getattr(getattr(d, "node", None), "expr", None)
        if e is None or not e.free_symbols:
            if int(d) != n:
                return f"x: {int(d)} != {n}"
            continue
        f, sym = e.as_coeff_Mul()
        if n % int(f):
            return f"x: {n} is not a multiple of {f}"
        env[sym] = n // int(f)
    gm = ep.module()
    found = []

    class Check(torch.fx.Interpreter):
        def run_node(self, node):
            out = super().run_node(node)
            val = node.meta.get("val")
            if not found and node.op == "call_function" and isinstance(out, torch.Tensor) and hasattr(val, "shape"):
                want = []
                for d in val.shape:
                    e = getattr(getattr(d, "node", None), "expr", None)
                    want.append(int(d) if e is None else int(e.subs(env)))
                if list(out.shape) != want:
                    found.append(f"{node.name}: torch states {want}, eager {list(out.shape)}")
            return out
    with torch.no_grad():
        Check(gm).run(x)
    return found[0] if found else None


def compare(got: np.ndarray, want: np.ndarray, exact: np.ndarray) -> Optional[str]:
    """``got`` within rel err 1e-4 of the f64 result ``exact`` (of max|exact|, elementwise), or
    within 10x torch's own f32 error where cancellation makes the result tiny."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    g, w = got.astype(np.float64), exact.astype(np.float64)
    fin = np.isfinite(w)      # -inf where a max pool window holds only padding (torch's too)
    off = (np.isfinite(g) != fin) | (~fin & ~((g == w) | (np.isnan(g) & np.isnan(w))))
    if off.any():
        i = tuple(np.argwhere(off)[0])
        return f"non-finite mismatch at {i}: got {got[i]!r}, f64 {exact[i]!r}"
    g, w = np.where(fin, g, 0.0), np.where(fin, w, 0.0)
    scale = float(np.abs(w).max()) if w.size else 0.0
    noise = float(np.abs(np.where(fin, want.astype(np.float64), 0.0) - w).max()) if w.size else 0.0
    bad = np.abs(g - w) > TOL * (np.abs(w) + scale) + 10 * noise + 1e-30
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return (f"at {i}: got {got[i]!r}, want {want[i]!r}, f64 {exact[i]!r} (|diff| {abs(g[i] - w[i]):.3g}, "
                f"torch f32's max error {noise:.3g}, max|want| {scale:.3g}, "
                f"{int(bad.sum())} of {bad.size} off, max rel {float(np.abs(g - w).max()) / max(scale, 1e-30):.3g})")
    return None


def describe(p: Program) -> str:
    return (f"x: (batch{'<=' if p.dyn_batch else '='}{p.bmax}, {p.cin}, H {p.hspec}, W {p.wspec})"
            f"{', backed_size_oblivious' if p.oblivious else ''}\n{p.src}")


def run_vision(seed: int, n_sizes: int = 4) -> dict:
    """Generate, export, import and compile CNN ``seed`` once; run it at up to ``n_sizes`` sizes.

    Returns {"calls", "export_skipped", "refused", "error", "ops", "sizes"}."""
    import torch

    import relax_mlir
    from relax_mlir.errors import CompileError
    from relax_mlir.frontend.torch import CompiledModule, full_stack_traces, import_program, supported_ops
    from worker import record

    p = build(seed)
    record(describe(p))
    res = {"calls": 0, "export_skipped": 0, "error": None, "ops": p.ops, "sizes": []}
    model = _module(p)
    try:
        with full_stack_traces():
            ep, ds, mins = _export(p, model)
    except Exception as e:   # noqa: BLE001  torch.export refused the generated module: not ours
        res["export_skipped"] = 1
        res["export_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        return res
    record(describe(p))
    sup = set(supported_ops())
    from relax_mlir.frontend.torch import _oblivious_retrace
    with _oblivious_retrace(ep):    # as the importer re-traces (a re-trace may specialize ep's ShapeEnv)
        decomposed = ep.run_decompositions({})
    present = {str(n.target) for n in decomposed.graph.nodes
               if n.op == "call_function" and str(n.target).startswith("aten.")}
    missing = sorted(present - sup)
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            prog = import_program(ep, dynamic_shapes=ds)
        exe = relax_mlir.compile(prog.module)
    except CompileError as e:
        msg = str(e)
        if missing and any(m.rsplit(".", 1)[0] in msg or m in msg for m in missing):
            res["refused"] = missing
            return res
        # a converter's own limit ("aten.X.overload: ... (supported: ...)") naming the op and the line
        m = re.match(r"(aten\.\w+\.\w+): (.*?) at <vision-fuzz seed", msg, re.S)
        if m and m.group(1) in present and "supported" in m.group(2):
            res["refused"] = [m.group(1)]
            res["refusal"] = msg[:300]
            return res
        res["error"] = (f"compile raised {type(e).__name__} "
                        f"{'(no unsupported op in the program)' if not missing else f'not naming {missing}'}: "
                        f"{msg[:2000]}\n{describe(p)}")
        return res
    except Exception as e:   # noqa: BLE001
        import traceback
        res["error"] = (f"import/compile raised {type(e).__name__} (not a CompileError): "
                        f"{traceback.format_exc()[-2500:]}\n{describe(p)}")
        return res
    if missing:
        res["error"] = f"compiled a program with ops without a conversion {missing}\n{describe(p)}"
        return res
    unchecked = [str(g) for g in getattr(prog, "unchecked_guards", [])]
    res["unchecked_guards"] = [g[:200] for g in unchecked]
    cm = CompiledModule(prog, exe)
    import copy
    model64 = copy.deepcopy(model).double()
    r = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    sizes = _sizes(p, r)[:n_sizes]
    bmin = getattr(p, "batch_min", 1)
    guards = list(getattr(ep, "_guards_code", None) or [])
    res["guard_refused"] = 0
    for b, h, w in sizes:
        b = max(b, bmin) if p.dyn_batch else b
        x = torch.randn(b, p.cin, h, w, generator=gen)
        broken = guards_fail(guards, x)
        if broken is not None:      # torch's program does not cover this size: refused at run time
            try:
                cm(x)
            except relax_mlir.ShapeError:
                res["guard_refused"] += 1
                continue
            except Exception as e:   # noqa: BLE001
                res["error"] = (f"at (b, h, w) = {(b, h, w)}, outside torch's guard {broken!r}: "
                                f"{type(e).__name__} (not a ShapeError): {str(e)[:800]}\n{describe(p)}")
                return res
            if broken not in unchecked:
                res["error"] = (f"no ShapeError at (b, h, w) = {(b, h, w)}, outside torch's guard {broken!r}"
                                f"\n{describe(p)}")
                return res
        with torch.no_grad():
            want = model(x)
            exact = model64(x.double())
        try:
            got = cm(x)
        except relax_mlir.ShapeError as e:
            off = metadata_breaks(ep, x)
            if off is not None:     # torch's graph states a size this input does not have
                res["specialized_refused"] = res.get("specialized_refused", 0) + 1
                continue
            res["error"] = (f"run at (b, h, w) = {(b, h, w)} raised ShapeError, torch's exported program "
                            f"covers the size: {str(e)[:1500]}\n{describe(p)}")
            return res
        except Exception as e:   # noqa: BLE001
            res["error"] = f"run at (b, h, w) = {(b, h, w)} raised {type(e).__name__}: {str(e)[:1500]}\n{describe(p)}"
            return res
        got = got if isinstance(got, (tuple, list)) else (got,)
        if len(got) != len(want):
            res["error"] = f"{len(got)} results, torch {len(want)}\n{describe(p)}"
            return res
        res["calls"] += 1
        res["sizes"].append([b, h, w])
        for i, (g, wnt, ex) in enumerate(zip(got, want, exact)):
            err = compare(np.asarray(g), wnt.numpy(), ex.numpy())
            if err:
                res["error"] = f"result #{i} at (b, h, w) = {(b, h, w)}: {err}\n{describe(p)}"
                return res
    # a size past a declared bound is refused at run time, naming the size
    past = None
    if p.hspec[0] == "dim":
        past = (bmin, hmax(p.hspec) + 1, hmin(p.wspec))
    elif p.hspec[0] == "derived":
        past = (bmin, hmin(p.hspec) + 1, hmin(p.wspec))   # not a multiple of f
    elif p.dyn_batch:
        past = (p.bmax + 1, hmin(p.hspec), hmin(p.wspec))
    if past is not None:
        try:
            cm(torch.zeros(*past[:1], p.cin, *past[1:]))
            res["error"] = f"no ShapeError at (b, h, w) = {past}, past the bounds\n{describe(p)}"
        except relax_mlir.ShapeError:
            res["bound_checked"] = 1
        except Exception as e:   # noqa: BLE001
            res["error"] = (f"at (b, h, w) = {past}, past the bounds: {type(e).__name__} (not a ShapeError): "
                            f"{str(e)[:800]}\n{describe(p)}")
    return res


if __name__ == "__main__":      # python test/fuzz/vision_fuzz.py SEED: the module's source and the run
    import json
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    seed = int(sys.argv[1])
    print(describe(build(seed)))
    if "--print" not in sys.argv:
        print(json.dumps(run_vision(seed), indent=1))
