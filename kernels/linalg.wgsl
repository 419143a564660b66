// topos kernel family "linalg": the factorisations a tab's small matrices take, over the last two
// axes, batched over the rest: the Cholesky factor (Cholesky) and the substitutions of a triangular
// solve (TriangularSolve), in float32. The batch index of a matrix is decoded through the batch
// shape and each operand's batch strides, so a transposed or sliced operand is read where it lies.
//
// Entry points:
//   cholesky          out = the lower factor l of (a + a^T) / 2 = l l^T, its upper triangle 0, and
//                     every element NaN where the matrix is not positive definite (a pivot not
//                     above 0), as the op's numpy forward; a NaN spreads as the substitutions carry
//                     it. One workgroup a matrix, left-looking column by column in `out` itself:
//                     lane (i mod 64) owns row i. For column j each lane finishes its rows below j,
//                     l[i][j] = (s[i][j] - sum_k<j l[i][k] l[j][k]) / l[j][j], and the lane owning
//                     row j + 1 then takes its pivot, sqrt(s[j+1][j+1] - sum_k<=j l[j+1][k]^2):
//                     every value a column reads is final before the one barrier that ends the
//                     previous column, and no lane writes what another reads in the same column.
//   triangular_solve  out = x with t x = b, t lower or upper triangular, its diagonal read or taken as
//                     ones: the launch builder turns every attribute combination (left or right side,
//                     lower or upper, transposed, unit diagonal) into this form by re-viewing the
//                     operands (nothing moves). One invocation a right-hand side (a column of b),
//                     substituting row by row: a column's x is read only by the invocation that wrote
//                     it, so no barrier is needed. A zero on the diagonal gives infinities and NaNs as
//                     IEEE division does (quotient, below), as the forward.
// Both sum their dot products several terms an iteration (dot4_rows, dot8_solve): lavapipe ends an
// invocation's loops after a budget of iterations (topos.compiler.wgsl.dispatch.LOOP_LIMIT), and the
// largest matrix each entry takes follows from the count (topos.compiler.wgsl.linalg).
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, decode,
// workgroup_index, element, is_nan, not_a_number, infinity). The loader declares the parameter
// block (binding 0) with them, and writes entry point `name`'s prologue where a line
// {{ENTRY name}} or {{ELEMENT_ENTRY name}} stands (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous: n x n a matrix (cholesky), b's shape (solve)
//   2  storage read        a       array<f32>: the matrices
//   3  storage read        b       array<f32>: the right-hand sides (triangular_solve)
//
// Parameters (u32 words):
//   0 matrices (cholesky) or matrices x right-hand sides (triangular_solve), 1 n, 2 batch rank (at
//   most 6), 3 a's offset, 4 a's row stride, 5 a's column stride, 6 right-hand sides a matrix (m),
//   7 flags (1: t is lower, 2: unit diagonal), 8..13 batch shape, 14..19 a's batch strides,
//   20 b's offset, 21 b's row stride, 22 b's column stride, 23 out's row stride, 24 out's column
//   stride (x may be stored transposed: a right-side solve), 26..31 b's batch strides
//
// Dispatch: cholesky one workgroup a matrix; triangular_solve workgroups of 64 invocations over the
// matrices' right-hand sides; each as a grid (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

{{COMMON}}

// Set by the lane whose pivot is not above 0. Cleared by lane 0 first: WGSL promises workgroup
// memory zeroed, and measured on lavapipe through wgpu-py it was not (every factor came out NaN).
var<workgroup> not_positive_definite: u32;

// sum_k<count out[p + k] * out[q + k]: two rows of the factor, contiguous in `out`.
fn dot4_rows(p: u32, q: u32, count: u32) -> f32 {
    var sum = 0.0;
    var k = 0u;
    for (; k + 4u <= count; k += 4u) {
        sum += out[p + k] * out[q + k] + out[p + k + 1u] * out[q + k + 1u];
        sum += out[p + k + 2u] * out[q + k + 2u] + out[p + k + 3u] * out[q + k + 3u];
    }
    for (; k < count; k += 1u) {
        sum += out[p + k] * out[q + k];
    }
    return sum;
}

// Row `row`'s pivot from its symmetrised diagonal element (already in place) and its finished
// entries left of it; a pivot not above 0 marks the matrix. A NaN pivot is carried, not marked, as
// numpy's forward natively (OpenBLAS's potrf tests `ajj <= 0` only): it spreads where the
// substitutions take it. Tested on the bits first: lavapipe's comparisons promise nothing about NaN.
fn pivot(base: u32, n: u32, row: u32) {
    let start = base + row * n;
    let rest = out[start + row] - dot4_rows(start, start, row);
    if (is_nan(rest)) {
        out[start + row] = rest;  // carried as it is: WGSL leaves sqrt(NaN) open
        return;
    }
    if (rest <= 0.0) {
        not_positive_definite = 1u;
    }
    out[start + row] = sqrt(rest);
}

{{ENTRY cholesky}}
    let matrix = workgroup_index(group, groups);
    if (matrix >= word(0u)) {
        return;
    }
    let n = word(1u);
    let start = word(3u) + decode(matrix, word(2u), 8u, 14u);
    let row_stride = word(4u);
    let column_stride = word(5u);
    let base = matrix * n * n;
    if (lane == 0u) {
        not_positive_definite = 0u;
    }
    workgroupBarrier();
    // The lower triangle of (a + a^T) / 2 in place, as the forward rounds it; zeros above.
    for (var e = lane; e < n * n; e += 64u) {
        let i = e / n;
        let j = e % n;
        var value = 0.0;
        if (j <= i) {
            let upper = a[start + i * row_stride + j * column_stride];
            let lower = a[start + j * row_stride + i * column_stride];
            value = (upper + lower) * 0.5;
        }
        out[base + e] = value;
    }
    storageBarrier();
    if (lane == 0u) {
        pivot(base, n, 0u);
    }
    storageBarrier();
    for (var j = 0u; j < n; j += 1u) {
        let diagonal = out[base + j * n + j];
        // The lane's first row below j: the next i > j with i mod 64 == lane.
        for (var i = j + 1u + (lane + 64u - (j + 1u) % 64u) % 64u; i < n; i += 64u) {
            let at = base + i * n + j;
            out[at] = (out[at] - dot4_rows(base + i * n, base + j * n, j)) / diagonal;
        }
        if (j + 1u < n && lane == (j + 1u) % 64u) {
            pivot(base, n, j + 1u);
        }
        storageBarrier();
    }
    // The flag lives in workgroup memory, which storageBarrier does not order.
    workgroupBarrier();
    if (not_positive_definite != 0u) {
        for (var e = lane; e < n * n; e += 64u) {
            out[base + e] = not_a_number();
        }
    }
}

// s / d as IEEE division gives it: WGSL leaves a zero divisor open (a NaN over 0 is NaN, 0 over 0
// NaN, anything else over 0 an infinity whose sign is the product of the signs). Tested on the
// bits: lavapipe's comparisons promise nothing about NaN.
fn quotient(s: f32, d: f32) -> f32 {
    if ((bitcast<u32>(d) & 0x7fffffffu) != 0u) {
        return s / d;
    }
    if (is_nan(s) || (bitcast<u32>(s) & 0x7fffffffu) == 0u) {
        return not_a_number();
    }
    let negative = ((bitcast<u32>(s) ^ bitcast<u32>(d)) & 0x80000000u) != 0u;
    return select(infinity(), -infinity(), negative);
}

// One term of a solve's dot product: t[row][k] x[k], t's row starting at `row`.
fn solve_term(row: u32, column_stride: u32, x: u32, x_stride: u32, k: u32) -> f32 {
    return a[row + k * column_stride] * out[x + k * x_stride];
}

// sum_k in [first, first + count) of solve_term(k), eight terms an iteration: the solve's one
// invocation walks n^2 / 2 terms, twice the busiest Cholesky lane's at their largest n.
fn dot8_solve(row: u32, column_stride: u32, x: u32, x_stride: u32, first: u32, count: u32) -> f32 {
    var sum = 0.0;
    var k = first;
    let end = first + count;
    for (; k + 8u <= end; k += 8u) {
        sum += solve_term(row, column_stride, x, x_stride, k) + solve_term(row, column_stride, x, x_stride, k + 1u)
            + solve_term(row, column_stride, x, x_stride, k + 2u) + solve_term(row, column_stride, x, x_stride, k + 3u);
        sum += solve_term(row, column_stride, x, x_stride, k + 4u) + solve_term(row, column_stride, x, x_stride, k + 5u)
            + solve_term(row, column_stride, x, x_stride, k + 6u) + solve_term(row, column_stride, x, x_stride, k + 7u);
    }
    for (; k < end; k += 1u) {
        sum += solve_term(row, column_stride, x, x_stride, k);
    }
    return sum;
}

{{ELEMENT_ENTRY triangular_solve}}
    let n = word(1u);
    let m = word(6u);
    let matrix = i / m;
    let column = i % m;
    let lower = (word(7u) & 1u) != 0u;
    let unit_diagonal = (word(7u) & 2u) != 0u;
    let a_start = word(3u) + decode(matrix, word(2u), 8u, 14u);
    let row_stride = word(4u);
    let column_stride = word(5u);
    let b_start = word(20u) + decode(matrix, word(2u), 8u, 26u) + column * word(22u);
    let x_stride = word(23u);
    let x_start = matrix * n * m + column * word(24u);
    for (var step = 0u; step < n; step += 1u) {
        // Forward substitution from the first row (lower), back substitution from the last (upper).
        let row = select(n - 1u - step, step, lower);
        let first = select(row + 1u, 0u, lower);
        let row_start = a_start + row * row_stride;
        let rest = b[b_start + row * word(21u)] - dot8_solve(row_start, column_stride, x_start, x_stride, first, step);
        var value = rest;
        if (!unit_diagonal) {
            value = quotient(rest, a[row_start + row * column_stride]);
        }
        out[x_start + row * x_stride] = value;
    }
}
