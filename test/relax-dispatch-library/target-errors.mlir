// RUN: %relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-dispatch-library)'

// A malformed relax.target is a diagnostic at the module, not a crash.
// expected-error @+1 {{unknown target kind 'tpu' (kinds: cpu, cuda, vulkan)}}
module attributes {relax.target = {kind = "tpu"}} {
}
