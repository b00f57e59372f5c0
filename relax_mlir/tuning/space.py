"""Knob spaces of the schedules, declared as data (MetaSchedule's search space).

Each schedule family (``matmul``, ``elementwise``, ``rows``) declares its knobs: a name
and the values the search may try, sized for a :class:`~relax_mlir.backends.cpu.schedules.target.Simd`.
A *config* is a plain dict knob name -> value (JSON- and SQLite-friendly); it is what
:func:`relax_mlir.backends.cpu.schedules.select` accepts as an override and what the tuning database
stores. :meth:`Space.check` rejects a combination the schedule cannot build, or that is
known to be useless (more accumulators than registers), before anything is applied:
the search never measures it and the compiler never applies it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from ..target import Simd

Config = dict


@dataclass(frozen=True)
class Knob:
    name: str
    values: tuple[int, ...]
    help: str = ""
    #: False: a choice that changes results (TF32), never the tuner's: samples take the first
    #: value, neighbours keep the config's
    tuned: bool = True


@dataclass(frozen=True)
class Space:
    """The knobs of one schedule family on one target, and the rule for valid combinations.
    ``extents``: the static sizes the rule needs (``inner``: the innermost extent of an
    elementwise chain; ``row``: a row kernel's row length; None when symbolic)."""

    family: str
    knobs: tuple[Knob, ...]
    rule: Callable[[Config, Simd, dict], Optional[str]]
    target: Simd

    def check(self, cfg: Config, **extents) -> None:
        """Raise ValueError when ``cfg`` is not a valid point of this space."""
        names = {k.name for k in self.knobs}
        if set(cfg) != names:
            raise ValueError(f"{self.family} config needs exactly the knobs {sorted(names)}, got {sorted(cfg)}")
        for k in self.knobs:
            v = cfg[k.name]
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{self.family} knob {k.name} must be a positive integer, got {v!r}")
        why = self.rule(cfg, self.target, extents)
        if why:
            raise ValueError(f"invalid {self.family} config {cfg}: {why}")

    def valid(self, cfg: Config, **extents) -> bool:
        try:
            self.check(cfg, **extents)
        except ValueError:
            return False
        return True

    def size(self) -> int:
        n = 1
        for k in self.knobs:
            n *= len(k.values)
        return n

    def sample(self, rng: random.Random, **extents) -> Optional[Config]:
        """A random valid config (None when 200 draws found none)."""
        for _ in range(200):
            cfg = {k.name: rng.choice(k.values) if k.tuned else k.values[0] for k in self.knobs}
            if self.valid(cfg, **extents):
                return cfg
        return None

    def neighbors(self, cfg: Config, **extents) -> list[Config]:
        """Valid configs one knob step away (the next smaller or larger declared value)."""
        out = []
        for k in (k for k in self.knobs if k.tuned):
            vals = list(k.values)
            i = vals.index(cfg[k.name]) if cfg[k.name] in vals else None
            steps = [vals[j] for j in (i - 1, i + 1) if 0 <= j < len(vals)] if i is not None else vals
            for v in steps:
                c = dict(cfg, **{k.name: v})
                if c != cfg and self.valid(c, **extents):
                    out.append(c)
        return out


# -- matmul -------------------------------------------------------------------------

def _matmul_rule(cfg: Config, t: Simd, extents: dict) -> Optional[str]:
    lanes = t.lanes
    if cfg["cols"] % lanes or cfg["gemv_cols"] % lanes:
        return f"cols and gemv_cols must be multiples of the {lanes} f32 lanes"
    acc = cfg["rows"] * cfg["cols"] // lanes
    if acc + cfg["cols"] // lanes + 1 > t.registers:
        return (f"{cfg['rows']} x {cfg['cols'] // lanes} accumulators + {cfg['cols'] // lanes} B vectors + 1 "
                f"broadcast exceed {t.registers} registers")
    small = cfg["small_rows"] * cfg["cols"] // lanes
    if small + cfg["cols"] // lanes + 1 > t.registers:
        return (f"{cfg['small_rows']} x {cfg['cols'] // lanes} accumulators of the small-M tile + "
                f"{cfg['cols'] // lanes} B vectors + 1 broadcast exceed {t.registers} registers")
    if cfg["gemv_cols"] // lanes > t.registers:
        return f"a {cfg['gemv_cols']}-column GEMV tile needs more than {t.registers} accumulators"
    if cfg["panel_n"] % cfg["cols"] or cfg["panel_n"] % cfg["gemv_cols"] and cfg["gemv_cols"] < cfg["panel_n"]:
        return "panel_n must be a multiple of cols (and of gemv_cols when wider)"
    return None


def matmul_space(t: Simd) -> Space:
    lanes = t.lanes
    return Space("matmul", (
        Knob("rows", (2, 3, 4, 5, 6, 7, 8), "rows of the main register tile (the M cascade's first size; then 1)"),
        # 3 vectors per row measured 10-20x slower than 2 or 4 (MLP, AVX-512): left out
        Knob("cols", tuple(lanes * k for k in (1, 2, 4)), "columns of the register tile"),
        Knob("gemv_cols", tuple(lanes * k for k in (4, 8, 16)), "columns of the 1-row (GEMV) tile"),
        Knob("panel_n", (64, 128, 192, 256, 384, 512, 1024), "N panel (scf.forall: the thread split)"),
        Knob("block_k", (32, 64, 128, 256, 512), "K block"),
        # measured (K=512, N=2048, M = 128 and 512, one thread): 512 and 256 best, 128 3-8 % slower
        Knob("pack_block_k", (128, 256, 512, 1024),
             "K block of the large-M variant that packs B (B's rows a multiple of 4 KB apart, or N symbolic)"),
        # measured (AVX-512, one thread, M = 8 and 16): 4 rows 0.5-1.2 of numpy, 6 rows 0.75-1.8
        Knob("small_rows", (2, 3, 4, 5, 6, 8), "rows of the small-M variant's register tile (M <= small_max_m)"),
        # measured (AVX-512, one thread, B in place): 2-8 k steps 10-30 % faster than none at M = 16
        Knob("prefetch", (1, 2, 4, 8, 16), "k steps ahead that the register-tiled k loops prefetch B's rows "
                                           "(relax-prefetch; rows read in place, not the packed panel)"),
    ), _matmul_rule, t)


def matmul_config(cfg: Config, base=None):
    """The MatmulConfig of a (checked) config dict; fields that are not knobs (the
    target's lanes, the GEMV variant's row limit) come from ``base`` (default: the
    dataclass defaults)."""
    import dataclasses
    from ..backends.cpu.schedules.matmul import MatmulConfig
    return dataclasses.replace(base or MatmulConfig(), rows=(cfg["rows"], 1), cols=cfg["cols"],
                               gemv_cols=cfg["gemv_cols"], panel_n=cfg["panel_n"], block_k=cfg["block_k"],
                               pack_block_k=cfg["pack_block_k"], small_rows=(cfg["small_rows"], 1),
                               prefetch=cfg["prefetch"])


def matmul_default(t: Simd) -> Config:
    """The untuned schedule's choice (config_for), as a config dict."""
    from ..backends.cpu.schedules.matmul import config_for
    c = config_for(t)
    return {"rows": c.rows[0], "cols": c.cols, "gemv_cols": c.gemv_cols, "panel_n": c.panel_n, "block_k": c.block_k,
            "pack_block_k": c.pack_block_k, "small_rows": c.small_rows[0], "prefetch": c.prefetch}


# -- elementwise --------------------------------------------------------------------

def _elementwise_rule(cfg: Config, t: Simd, extents: dict) -> Optional[str]:
    inner = extents.get("inner")
    if cfg["width"] % t.lanes:
        return f"width must be a multiple of the {t.lanes} f32 lanes"
    if inner is not None and inner < cfg["width"]:
        return f"width {cfg['width']} exceeds the innermost extent {inner}"
    return None


def elementwise_space(t: Simd) -> Space:
    return Space("elementwise", (
        Knob("width", tuple(w for w in (8, 16, 32, 64, 128, 256) if w % t.lanes == 0),
             "elements per vectorized step along the innermost dim (width / lanes vectors: the unroll)"),
    ), _elementwise_rule, t)


def elementwise_default(t: Simd, inner: Optional[int] = None) -> Config:
    from ..backends.cpu.schedules.elementwise import vector_width
    return {"width": vector_width(inner)}


# -- rows -------------------------------------------------------------------------

def _rows_rule(cfg: Config, t: Simd, extents: dict) -> Optional[str]:
    row = extents.get("row")
    if cfg["chunk"] % t.lanes:
        return f"chunk must be a multiple of the {t.lanes} f32 lanes"
    if row is not None and row % cfg["chunk"]:
        return f"a static row of {row} must be a multiple of the chunk (the chunk loop is not peeled)"
    return None


def rows_space(t: Simd) -> Space:
    return Space("rows", (
        Knob("chunk", tuple(c for c in (8, 16, 32, 64, 128, 256) if c % t.lanes == 0),
             "lanes per step of the per-row loop (partial-accumulator width)"),
    ), _rows_rule, t)


def rows_default(t: Simd, row: Optional[int] = None) -> Optional[Config]:
    from ..backends.cpu.schedules.rows import CHUNK
    if row is None:
        return {"chunk": CHUNK}
    c = CHUNK if row % CHUNK == 0 else 16 if row % 16 == 0 else 0
    return {"chunk": c} if c else None


SPACES: dict[str, Callable[[Simd], Space]] = {
    "matmul": matmul_space,
    "elementwise": elementwise_space,
    "rows": rows_space,
}


def family(schedule_name: str) -> str:
    """The knob family of a schedule name (``batch_matmul+elementwise`` -> ``matmul``)."""
    base = schedule_name.split("+")[0]
    return "matmul" if base in ("matmul", "batch_matmul") else base


def space_for(schedule_name: str, t: Simd) -> Space:
    fam = family(schedule_name)
    if fam not in SPACES:
        raise ValueError(f"no knob space for schedule '{schedule_name}'")
    return SPACES[fam](t)
