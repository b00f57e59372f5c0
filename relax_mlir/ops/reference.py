"""The op reference, generated from the op table: ``relax-opt --list-ops`` and ``docs/ops.md``."""

from __future__ import annotations
