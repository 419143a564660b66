// topos kernel family "matmul": batched products a [..., m, k] @ b [..., k, n] -> out [..., m, n].
//
// Both operands are read through strided views, so a transposed operand (the backward
// pass's a^T and b^T) and a broadcast batch axis (stride 0) cost no copy. The output is
// contiguous: batch b, row i, column j at (b * m + i) * n + j.
//
// Entry points:
//   matmul_tiled   register-blocked tiles: a 16 x 16 workgroup computes a 64 x 64 block of
//                  the output, each invocation a 4 x 4 block held in registers; the k axis
//                  is walked 16 at a time through tiles of a and b in workgroup memory.
//                  Dispatch (ceil(n / 64), ceil(m / 64), batch).
//   matmul_simple  one invocation per output element, a plain loop over k: the simplest
//                  correct kernel, and the better one for small products.
//                  Dispatch: workgroups of 64 over batch * m * n elements, as a grid
//                  (gx, gy, 1) numbered gx * wy + wx.
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

var<workgroup> tile_a: array<f32, 1024>;  // [DEPTH][TILE]: tile_a[kk * TILE + row]
var<workgroup> tile_b: array<f32, 1024>;  // [DEPTH][TILE]: tile_b[kk * TILE + column]

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

@compute @workgroup_size(16, 16)
fn matmul_tiled(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_id) local: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let m = word(0u);
    let n = word(1u);
    let k = word(2u);
    let a_base = batch_offset(group.z, 8u);
    let b_base = batch_offset(group.z, 15u);
    let a_row = word(13u);
    let a_column = word(14u);
    let b_row = word(20u);
    let b_column = word(21u);
    let row0 = group.y * TILE;
    let column0 = group.x * TILE;

    var sums: array<array<f32, 4>, 4>;
    for (var i = 0u; i < 4u; i += 1u) {
        for (var j = 0u; j < 4u; j += 1u) {
            sums[i][j] = 0.0;
        }
    }

    for (var k0 = 0u; k0 < k; k0 += DEPTH) {
        // 256 invocations load the 64 x 16 tile of a and the 16 x 64 tile of b, 4 elements each.
        for (var e = 0u; e < 4u; e += 1u) {
            let index = lane + e * 256u;
            let a_r = index / DEPTH;
            let a_k = index % DEPTH;
            var a_value = 0.0;
            if (row0 + a_r < m && k0 + a_k < k) {
                a_value = a[a_base + (row0 + a_r) * a_row + (k0 + a_k) * a_column];
            }
            tile_a[a_k * TILE + a_r] = a_value;
            let b_k = index / TILE;
            let b_c = index % TILE;
            var b_value = 0.0;
            if (k0 + b_k < k && column0 + b_c < n) {
                b_value = b[b_base + (k0 + b_k) * b_row + (column0 + b_c) * b_column];
            }
            tile_b[b_k * TILE + b_c] = b_value;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < DEPTH; kk += 1u) {
            var a_registers: array<f32, 4>;
            var b_registers: array<f32, 4>;
            for (var i = 0u; i < 4u; i += 1u) {
                a_registers[i] = tile_a[kk * TILE + local.y * 4u + i];
                b_registers[i] = tile_b[kk * TILE + local.x * 4u + i];
            }
            for (var i = 0u; i < 4u; i += 1u) {
                for (var j = 0u; j < 4u; j += 1u) {
                    sums[i][j] = fma(a_registers[i], b_registers[j], sums[i][j]);
                }
            }
        }
        workgroupBarrier();
    }

    let out_base = group.z * m * n;
    for (var i = 0u; i < 4u; i += 1u) {
        let row = row0 + local.y * 4u + i;
        for (var j = 0u; j < 4u; j += 1u) {
            let column = column0 + local.x * 4u + j;
            if (row < m && column < n) {
                out[out_base + row * n + column] = sums[i][j];
            }
        }
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
