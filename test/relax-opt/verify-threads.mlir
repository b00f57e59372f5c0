// A multithreaded MLIRContext verifies ops that are isolated from above (gpu.func, func.func)
// on worker threads, and a diagnostic emitted there reached the Python bindings' error capture
// without the GIL: nanobind aborted the process ("attempted to change the reference count of a
// Python object while the GIL was not held", llvm/llvm-project#215781). Long fuzz mutation
// seeds 1000306 (a gpu.return of a value defined outside its gpu.func), 1000362 (an operand
// that does not dominate its use) and 1000383 (a gpu.func without its terminator). relax-opt
// parses and runs passes single-threaded: every error is reported, at its line, exit status 1.
// Many isolated functions with errors make the old race near-certain.
// RUN: relax-opt %s --split-input-file --verify-diagnostics

gpu.module @k {
  gpu.func @no_terminator0(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator1(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator2(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator3(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator4(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator5(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator6(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator7(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator8(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator9(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator10(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
  gpu.func @no_terminator11(%x: f32) -> f32 {
    // expected-error @below {{block with no terminator}}
    %0 = arith.addf %x, %x : f32
  }
}
func.func @no_return0(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return1(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return2(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return3(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return4(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return5(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return6(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return7(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return8(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return9(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return10(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}
func.func @no_return11(%x: f32) -> f32 {
  // expected-error @below {{block with no terminator}}
  %0 = arith.addf %x, %x : f32
}

// -----

gpu.module @k {
  gpu.func @outside0(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside1(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside2(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside3(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside4(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside5(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside6(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
  gpu.func @outside7(%x: f64) -> f64 {
    // expected-error @below {{'gpu.return' op using value defined outside the region}}
    gpu.return %0 : f64
  }
}
func.func @f(%x: f64) -> f64 {
  %0 = math.log %x : f64
  return %0 : f64
}

// -----

func.func @dominance0(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance1(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance2(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance3(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance4(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance5(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance6(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance7(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance8(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance9(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance10(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
func.func @dominance11(%x: i32) -> i1 {
  // expected-error @below {{operand #1 does not dominate this use}}
  %0 = arith.cmpi slt, %x, %1 : i32
  %1 = arith.addi %x, %x : i32
  return %0 : i1
}
