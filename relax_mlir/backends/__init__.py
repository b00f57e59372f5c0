"""Backends, one folder each (docs/architecture.md): what a target adds on top of the
target-independent passes. ``gpu/`` holds the kernel schedule rules shared by the two GPU
targets (cuda, vulkan)."""
