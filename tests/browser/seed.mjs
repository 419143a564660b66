// The seed's first example and its readings, copied from the public contract
// (API.md, "Recording" and "Lowering and the readings"): these are the oracle,
// not output of the code under test.

export const SEED_RECORDING = `from topos import Tape

tape = Tape()                 # float64 by default; Tape(dtype="float32")
w = tape.parameter(0.0)       # trainable source, recorded initial payload
x = tape.input(0.0)           # fed per run, the payload is its default
y = tape.input(0.0)           # (tape.leaf(value) records a constant)
error = w * x - y             # every expression appends one node
loss = error * error
print(tape.describe())
`;

export const SEED_DESCRIBE = `   0  Parameter                         []
   1  Input                             []
   2  Input                             []
   3  Mul            0, 1               []
   4  Sub            3, 2               []
   5  Mul            4, 4               []
tape: 6 nodes, 1 parameter, 2 inputs`;

export const SEED_PLAN = `   0  Parameter                         []           freed after 3
   1  Input                             []           freed after 3
   2  Input                             []           freed after 4
   3  Mul            0, 1               []           freed after 4
   4  Sub            3, 2               []           freed after 5
   5  Mul            4, 4               []           kept
plan: forward; 6 of 6 nodes evaluated, 1 readable
live volume: peak 4 elements at node 3, retain-all 6`;

export const SEED_HLO = `module @topos {
  func.func @main(%arg0: tensor<f64>, %arg1: tensor<f64>, %arg2: tensor<f64>) -> (tensor<f64>) {
    %v3 = stablehlo.multiply %arg0, %arg1 : tensor<f64>
    %v4 = stablehlo.subtract %v3, %arg2 : tensor<f64>
    %v5 = stablehlo.multiply %v4, %v4 : tensor<f64>
    return %v5 : tensor<f64>
  }
}`;

/** The sealed form of the same seed (API.md, "Sealing, symbols, running"). */
export const SEED_SEALED = `from topos import Tape

def build(tape):
    w = tape.parameter(0.5)
    x = tape.input(2.0)
    y = tape.input(4.0)
    error = w * x - y
    return [w, x, y, error * error]

network, (w, x, y, loss) = Tape.record(build)
run = network.forward(network.parameters(), {})
gradients = run.backward(loss)
print(run.of(loss), gradients.of(w), gradients.of(x), gradients.of(y))  # 9.0 -12.0 -3.0 6.0
`;
