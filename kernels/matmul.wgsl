// topos kernel family "matmul": batched products a [..., m, k] @ b [..., k, n] -> out [..., m, n].
//
// Both operands are read through strided views, so a transposed operand (the backward
// pass's a^T and b^T) and a broadcast batch axis (stride 0) cost no copy. The output is
// contiguous: batch b, row i, column j at (b * m + i) * n + j.
//
// Entry points:
//   matmul_tiled   register-blocked tiles: a 16 x 16 workgroup computes a 64 x 64 block of
//                  the output, each invocation a 4 x 4 block held in four vec4 accumulators;
//                  the k axis is walked 16 at a time through tiles of a and b in workgroup
//                  memory. Dispatch (ceil(n / 64), ceil(m / 64), batch).
//   matmul_simple  one invocation per output element, a plain loop over k: the simplest
//                  correct kernel, and the better one for small products.
//                  Dispatch: workgroups of 64 over batch * m * n elements, as a grid
//                  (gx, gy, 1) numbered gx * wy + wx.
// Which one runs: matmul_strategy in py/topos/compiler/wgsl/launch.py (docs/kernels.md).
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
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

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;

{{COMMON}}

const TILE: u32 = 64u;
const DEPTH: u32 = 16u;

// One vec4 holds four neighbouring rows of a (or columns of b) at one depth, so that an
// invocation reads its four rows (columns) at one depth from a tile in one load, and its
// 4 x 4 block is four vec4 accumulators with fixed names: an indexed per-invocation array
// would live in memory, not in registers, on the CPU adapters (lavapipe, SwiftShader).
var<workgroup> tile_a: array<vec4<f32>, 256>;  // [DEPTH][TILE / 4]: rows 4q..4q+3 at depth kk in tile_a[kk * 16 + q]
var<workgroup> tile_b: array<vec4<f32>, 256>;  // [DEPTH][TILE / 4]: columns 4q..4q+3 at depth kk in tile_b[kk * 16 + q]

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

// Element (row, column) of a, or 0 outside its m x k. The read is clamped inside rather than
// branched around: a branch costs more than the read on the CPU adapters, and a tile is mostly inside.
fn a_or_zero(base: u32, row: u32, column: u32) -> f32 {
    let m = word(0u);
    let k = word(2u);
    let value = a[base + min(row, m - 1u) * word(13u) + min(column, k - 1u) * word(14u)];
    return select(0.0, value, row < m && column < k);
}

// Element (row, column) of b, or 0 outside its k x n (clamped, as a_or_zero).
fn b_or_zero(base: u32, row: u32, column: u32) -> f32 {
    let k = word(2u);
    let n = word(1u);
    let value = b[base + min(row, k - 1u) * word(20u) + min(column, n - 1u) * word(21u)];
    return select(0.0, value, row < k && column < n);
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

@compute @workgroup_size(16, 16)
fn matmul_tiled(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_id) local: vec3<u32>,
) {
    let m = word(0u);
    let n = word(1u);
    let k = word(2u);
    let a_base = batch_offset(group.z, 8u);
    let b_base = batch_offset(group.z, 15u);
    let row0 = group.y * TILE;
    let column0 = group.x * TILE;
    // The vec4 of each tile this invocation loads in a step: rows load_row .. + 3 of a and
    // columns load_column .. + 3 of b, at depth local.y of the step.
    let slot = local.y * 16u + local.x;
    let load_row = row0 + 4u * local.x;
    let load_column = column0 + 4u * local.x;

    // The invocation's 4 x 4 block of the output: rows 4 * local.y + 0..3 (sum0..sum3),
    // each a vec4 of columns 4 * local.x + 0..3.
    var sum0 = vec4<f32>(0.0);
    var sum1 = vec4<f32>(0.0);
    var sum2 = vec4<f32>(0.0);
    var sum3 = vec4<f32>(0.0);

    for (var k0 = 0u; k0 < k; k0 += DEPTH) {
        let depth = k0 + local.y;
        tile_a[slot] = vec4<f32>(
            a_or_zero(a_base, load_row, depth),
            a_or_zero(a_base, load_row + 1u, depth),
            a_or_zero(a_base, load_row + 2u, depth),
            a_or_zero(a_base, load_row + 3u, depth),
        );
        tile_b[slot] = vec4<f32>(
            b_or_zero(b_base, depth, load_column),
            b_or_zero(b_base, depth, load_column + 1u),
            b_or_zero(b_base, depth, load_column + 2u),
            b_or_zero(b_base, depth, load_column + 3u),
        );
        workgroupBarrier();
        for (var kk = 0u; kk < DEPTH; kk += 1u) {
            let a4 = tile_a[kk * 16u + local.y];
            let b4 = tile_b[kk * 16u + local.x];
            sum0 = fma(vec4<f32>(a4.x), b4, sum0);
            sum1 = fma(vec4<f32>(a4.y), b4, sum1);
            sum2 = fma(vec4<f32>(a4.z), b4, sum2);
            sum3 = fma(vec4<f32>(a4.w), b4, sum3);
        }
        workgroupBarrier();
    }

    let row = row0 + 4u * local.y;
    let column = column0 + 4u * local.x;
    let at = (group.z * m + row) * n + column;
    if (row < m) {
        store_row(at, column, sum0);
    }
    if (row + 1u < m) {
        store_row(at + n, column, sum1);
    }
    if (row + 2u < m) {
        store_row(at + 2u * n, column, sum2);
    }
    if (row + 3u < m) {
        store_row(at + 3u * n, column, sum3);
    }
}

@compute @workgroup_size(64)
fn matmul_simple(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
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
