// RUN: relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-convert-layout{layout=NCWH})'

// expected-error@below {{layout must be 'NHWC', got 'NCWH'}}
module {
}
