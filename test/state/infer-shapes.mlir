// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// relax.state_read: rows [begin, end) of a declared state, the state's row shape and
// dtype; relax.state_write: no result. A row range not provably ordered becomes a
// relax.assert (checked at run time); the capacity is the session's, checked when
// the call runs (relax-lower-host).

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>, len = tensor<16xi64>}, relax.upper_bounds = {cap = 64 : i64}} {
  // CHECK-LABEL: func.func @step
  func.func @step(%new: tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>, %pos: tensor<?x0xi8, #relax.shape<["p", 0]>>) -> tensor<?x2x4xf32> attributes {relax.function} {
    // CHECK: %[[P:.*]] = "relax.state_read"() {end = "p", state = "k"} : () -> tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
    %past = "relax.state_read"() {state = "k", end = "p"} : () -> tensor<?x2x4xf32>
    // CHECK: "relax.state_write"(%arg0) {offset = "p", state = "k"} : (tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>) -> ()
    "relax.state_write"(%new) {state = "k", offset = "p"} : (tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>) -> ()
    // CHECK: "relax.state_read"() {begin = "p", end = "p + s", state = "k"} : () -> tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>
    %mine = "relax.state_read"() {state = "k", begin = "p", end = "p + s"} : () -> tensor<?x2x4xf32>
    // a static state and a static range
    // CHECK: "relax.state_read"() {begin = 3 : i64, end = 5 : i64, state = "len"} : () -> tensor<2xi64>
    %l = "relax.state_read"() {state = "len", begin = 3, end = 5} : () -> tensor<?xi64>
    // 0 <= s - 1 and s - 1 <= p cannot be proven
    // CHECK: "relax.assert"() {dims = #relax.shape<[0, "s - 1"]>, message = "relax.state_read: begin: 0 <= s - 1", predicate = "le"}
    // CHECK-NEXT: "relax.assert"() {dims = #relax.shape<["s - 1", "p"]>, message = "relax.state_read: row range [begin, end): s - 1 <= p", predicate = "le"}
    // CHECK-NEXT: "relax.state_read"() {begin = "s - 1", end = "p", state = "k"} : () -> tensor<?x2x4xf32, #relax.shape<["p - s + 1", 2, 4]>>
    %odd = "relax.state_read"() {state = "k", begin = "s - 1", end = "p"} : () -> tensor<?x2x4xf32>
    // CHECK: return %[[P]] : tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
    return %past : tensor<?x2x4xf32>
  }
}
