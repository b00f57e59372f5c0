"""Dialects defined by relax-mlir (declared in Python, loaded through IRDL)."""
