// topos kernel family "matmul": batched products a [..., m, k] @ b [..., k, n] -> out [..., m, n].
//
// Both operands are read through strided views, so a transposed operand (the backward
// pass's a^T and b^T) and a broadcast batch axis (stride 0) cost no copy. The output is
// contiguous: batch b, row i, column j at (b * m + i) * n + j.
//
// Entry points:
//   matmul_tiled   register-blocked tiles: an 8 x 8 workgroup computes a 64 x 64 tile of the
//                  output, each invocation an 8 x 8 block of it in sixteen vec4 accumulators,
//                  reading its 8 rows of a and 8 columns of b straight from storage (no
//                  workgroup memory and no barrier: on the CPU adapters the caches do what
//                  workgroup memory does on a GPU, and a barrier costs a switch of coroutines).
//                  Dispatch (ceil(n / 64), ceil(m / 64), batch).
//   matmul_simple  one invocation per output element, a plain loop over k: the simplest
//                  correct kernel, and the better one for small products.
//                  Dispatch: workgroups of 64 over batch * m * n elements, as a grid
//                  (gx, gy, 1) numbered gx * wy + wx.
// Which one runs: matmul_strategy in py/topos/compiler/wgsl/launch.py (docs/kernels.md).
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>
//   2  storage read        a       array<f32>
//   3  storage read        b       array<f32>
//
// Parameters (u32 words):
//   0 m, 1 n, 2 k, 3 batch rank (at most 4), 4..7 batch shape
//   8  a offset, 9..12 a batch strides, 13 a row stride, 14 a column stride
//   15 b offset, 16..19 b batch strides, 20 b row stride, 21 b column stride
//   22 batch count (the product of the batch shape)

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

{{COMMON}}

const TILE: u32 = 64u;
const BLOCK: u32 = 8u;
// The most iterations one loop may run (docs/kernels.md): lavapipe leaves a loop after a limit
// counted over all its runs in one invocation, so a longer contraction takes UNROLLED steps an
// iteration (launch.py's LOOP_LIMIT and MATMUL_UNROLLED).
const LOOP_LIMIT: u32 = 32767u;
const UNROLLED: u32 = 16u;

// An invocation of matmul_tiled: the offsets of its block's 8 rows of a and 8 columns of b in
// the batch it works on, and its 8 x 8 block of sums, row r in sum<r>_left (the block's columns
// 0..3) and sum<r>_right (4..7), which start at zero as every private variable does. They are
// private rather than local so that `accumulate` can take a step along k; named rather than
// indexed, because an indexed array would live in memory, not in registers, on the CPU adapters.
var<private> a_row0: u32;
var<private> a_row1: u32;
var<private> a_row2: u32;
var<private> a_row3: u32;
var<private> a_row4: u32;
var<private> a_row5: u32;
var<private> a_row6: u32;
var<private> a_row7: u32;
var<private> b_column0: u32;
var<private> b_column1: u32;
var<private> b_column2: u32;
var<private> b_column3: u32;
var<private> b_column4: u32;
var<private> b_column5: u32;
var<private> b_column6: u32;
var<private> b_column7: u32;
var<private> sum0_left: vec4<f32>;
var<private> sum0_right: vec4<f32>;
var<private> sum1_left: vec4<f32>;
var<private> sum1_right: vec4<f32>;
var<private> sum2_left: vec4<f32>;
var<private> sum2_right: vec4<f32>;
var<private> sum3_left: vec4<f32>;
var<private> sum3_right: vec4<f32>;
var<private> sum4_left: vec4<f32>;
var<private> sum4_right: vec4<f32>;
var<private> sum5_left: vec4<f32>;
var<private> sum5_right: vec4<f32>;
var<private> sum6_left: vec4<f32>;
var<private> sum6_right: vec4<f32>;
var<private> sum7_left: vec4<f32>;
var<private> sum7_right: vec4<f32>;

// The offset of batch `index` in the operand whose offset is word `base`
// and whose batch strides follow it.
fn batch_offset(index: u32, base: u32) -> u32 {
    var rest = index;
    var offset = word(base);
    var axis = i32(word(3u)) - 1;
    loop {
        if (axis < 0) {
            break;
        }
        let extent = word(4u + u32(axis));
        offset += (rest % extent) * word(base + 1u + u32(axis));
        rest = rest / extent;
        axis -= 1;
    }
    return offset;
}

// Four neighbouring elements of one output row, those inside the n columns.
fn store_row(at: u32, column: u32, values: vec4<f32>) {
    let n = word(1u);
    if (column + 3u < n) {
        out[at] = values.x;
        out[at + 1u] = values.y;
        out[at + 2u] = values.z;
        out[at + 3u] = values.w;
        return;
    }
    if (column < n) {
        out[at] = values.x;
    }
    if (column + 1u < n) {
        out[at + 1u] = values.y;
    }
    if (column + 2u < n) {
        out[at + 2u] = values.z;
    }
}

// One step along k: the block's sums gain a[row, depth] * b[depth, column].
fn accumulate(depth: u32) {
    let a_at = depth * word(14u);
    let b_at = depth * word(20u);
    let b_left = vec4<f32>(b[b_column0 + b_at], b[b_column1 + b_at], b[b_column2 + b_at], b[b_column3 + b_at]);
    let b_right = vec4<f32>(b[b_column4 + b_at], b[b_column5 + b_at], b[b_column6 + b_at], b[b_column7 + b_at]);
    let a0 = vec4<f32>(a[a_row0 + a_at]);
    sum0_left = fma(a0, b_left, sum0_left);
    sum0_right = fma(a0, b_right, sum0_right);
    let a1 = vec4<f32>(a[a_row1 + a_at]);
    sum1_left = fma(a1, b_left, sum1_left);
    sum1_right = fma(a1, b_right, sum1_right);
    let a2 = vec4<f32>(a[a_row2 + a_at]);
    sum2_left = fma(a2, b_left, sum2_left);
    sum2_right = fma(a2, b_right, sum2_right);
    let a3 = vec4<f32>(a[a_row3 + a_at]);
    sum3_left = fma(a3, b_left, sum3_left);
    sum3_right = fma(a3, b_right, sum3_right);
    let a4 = vec4<f32>(a[a_row4 + a_at]);
    sum4_left = fma(a4, b_left, sum4_left);
    sum4_right = fma(a4, b_right, sum4_right);
    let a5 = vec4<f32>(a[a_row5 + a_at]);
    sum5_left = fma(a5, b_left, sum5_left);
    sum5_right = fma(a5, b_right, sum5_right);
    let a6 = vec4<f32>(a[a_row6 + a_at]);
    sum6_left = fma(a6, b_left, sum6_left);
    sum6_right = fma(a6, b_right, sum6_right);
    let a7 = vec4<f32>(a[a_row7 + a_at]);
    sum7_left = fma(a7, b_left, sum7_left);
    sum7_right = fma(a7, b_right, sum7_right);
}

@compute @workgroup_size(8, 8)
fn matmul_tiled(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_id) local: vec3<u32>,
) {
    let m = word(0u);
    let n = word(1u);
    let k = word(2u);
    // The invocation's 8 x 8 block of the output: rows row .. row + 7, columns column .. column + 7.
    let row = group.y * TILE + BLOCK * local.y;
    let column = group.x * TILE + BLOCK * local.x;
    if (row >= m || column >= n) {
        return;
    }
    // A row or column of the block past the product's edge is read as the last one (clamped, so
    // that every read is inside the operand) and never stored.
    let a_base = batch_offset(group.z, 8u);
    let b_base = batch_offset(group.z, 15u);
    a_row0 = a_base + row * word(13u);
    a_row1 = a_base + min(row + 1u, m - 1u) * word(13u);
    a_row2 = a_base + min(row + 2u, m - 1u) * word(13u);
    a_row3 = a_base + min(row + 3u, m - 1u) * word(13u);
    a_row4 = a_base + min(row + 4u, m - 1u) * word(13u);
    a_row5 = a_base + min(row + 5u, m - 1u) * word(13u);
    a_row6 = a_base + min(row + 6u, m - 1u) * word(13u);
    a_row7 = a_base + min(row + 7u, m - 1u) * word(13u);
    b_column0 = b_base + column * word(21u);
    b_column1 = b_base + min(column + 1u, n - 1u) * word(21u);
    b_column2 = b_base + min(column + 2u, n - 1u) * word(21u);
    b_column3 = b_base + min(column + 3u, n - 1u) * word(21u);
    b_column4 = b_base + min(column + 4u, n - 1u) * word(21u);
    b_column5 = b_base + min(column + 5u, n - 1u) * word(21u);
    b_column6 = b_base + min(column + 6u, n - 1u) * word(21u);
    b_column7 = b_base + min(column + 7u, n - 1u) * word(21u);

    if (k <= LOOP_LIMIT) {
        for (var depth = 0u; depth < k; depth += 1u) {
            accumulate(depth);
        }
    } else {
        // Past the loop limit: UNROLLED steps an iteration, then the last few one at a time.
        let whole = k - k % UNROLLED;
        for (var start = 0u; start < whole; start += UNROLLED) {
            accumulate(start);
            accumulate(start + 1u);
            accumulate(start + 2u);
            accumulate(start + 3u);
            accumulate(start + 4u);
            accumulate(start + 5u);
            accumulate(start + 6u);
            accumulate(start + 7u);
            accumulate(start + 8u);
            accumulate(start + 9u);
            accumulate(start + 10u);
            accumulate(start + 11u);
            accumulate(start + 12u);
            accumulate(start + 13u);
            accumulate(start + 14u);
            accumulate(start + 15u);
        }
        for (var depth = whole; depth < k; depth += 1u) {
            accumulate(depth);
        }
    }

    let at = (group.z * m + row) * n + column;
    store_row(at, column, sum0_left);
    store_row(at + 4u, column + 4u, sum0_right);
    if (row + 1u < m) {
        store_row(at + n, column, sum1_left);
        store_row(at + n + 4u, column + 4u, sum1_right);
    }
    if (row + 2u < m) {
        store_row(at + 2u * n, column, sum2_left);
        store_row(at + 2u * n + 4u, column + 4u, sum2_right);
    }
    if (row + 3u < m) {
        store_row(at + 3u * n, column, sum3_left);
        store_row(at + 3u * n + 4u, column + 4u, sum3_right);
    }
    if (row + 4u < m) {
        store_row(at + 4u * n, column, sum4_left);
        store_row(at + 4u * n + 4u, column + 4u, sum4_right);
    }
    if (row + 5u < m) {
        store_row(at + 5u * n, column, sum5_left);
        store_row(at + 5u * n + 4u, column + 4u, sum5_right);
    }
    if (row + 6u < m) {
        store_row(at + 6u * n, column, sum6_left);
        store_row(at + 6u * n + 4u, column + 4u, sum6_right);
    }
    if (row + 7u < m) {
        store_row(at + 7u * n, column, sum7_left);
        store_row(at + 7u * n + 4u, column + 4u, sum7_right);
    }
}

{{ENTRY matmul_simple}}
    let m = word(0u);
    let n = word(1u);
    let k = word(2u);
    let index = element(group, groups, lane);
    if (index >= word(22u) * m * n) {
        return;
    }
    let column = index % n;
    let row = (index / n) % m;
    let batch = index / (m * n);
    var a_at = batch_offset(batch, 8u) + row * word(13u);
    var b_at = batch_offset(batch, 15u) + column * word(21u);
    var sum = 0.0;
    for (var kk = 0u; kk < k; kk += 1u) {
        sum = fma(a[a_at], b[b_at], sum);
        a_at += word(14u);
        b_at += word(20u);
    }
    out[index] = sum;
}
