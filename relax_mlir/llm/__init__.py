"""LLMs on relax-mlir: the Llama-family decoder built with :mod:`relax_mlir.frontend.nn`,
compiled once for every prompt length, with a KV cache (:class:`CausalLM`)."""

from .causal_lm import CausalLM, KVCache, compile_model, sample
from .model import LlamaModel, LMConfig

__all__ = ["CausalLM", "KVCache", "LMConfig", "LlamaModel", "compile_model", "sample"]
