func.func @main(%x: tensor<?x16xf32, #relax.shape<["n", 16]>>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32, #relax.shape<["n", 16]>> attributes {relax.function, relax.upper_bounds = {n = 64 : i64}} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<16x16xf32>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<16xf32>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %2 = "relax.relu"(%1) : (tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %3 = "relax.exp"(%2) : (tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %4 = "relax.multiply"(%3, %2) : (tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %5 = "relax.softmax"(%4) {axis = 1 : i64} : (tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  return %5 : tensor<?x16xf32, #relax.shape<["n", 16]>>
}
