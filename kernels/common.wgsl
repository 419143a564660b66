// The helpers every topos kernel file shares. WGSL has no includes: a file writes
// the COMMON token (in double braces) after its bindings, and the one loader
// (topos.webgpu.sources.specialise, natively and in the page's Pyodide alike) puts
// this text there, with the parameter block it reads: `params` (binding 0), which
// the loader declares so that no kernel file writes it again. This file declares no
// bindings of its own.
//
// The loader also writes each entry point's prologue, as onnxruntime-web's mainStart
// does. A kernel file writes one line in double braces where the entry begins, then
// the body and the closing brace:
//
//   ENTRY name          the signature: @compute @workgroup_size(64) fn name(group,
//                       groups, lane), the workgroup_id, num_workgroups and
//                       local_invocation_index builtins, and the opening brace
//   ELEMENT_ENTRY name  the signature, then `i`, the invocation's element (element()),
//                       and a return where i is past the element count (word 0)
//   ROW_ENTRY name      the signature, then `row`, the workgroup's row
//                       (workgroup_index()), a return where row is past the row count
//                       (word 0), the same for the whole workgroup, and the row
//                       kernels' layout: `length` (word 1), `stride` (word 4) and
//                       `start` (row_start(row))
//
// An entry of another workgroup shape (matmul_tiled's 8 x 8) writes its own.
//
//   word(i)         u32 word i of the parameter block
//   workgroup_index(group, groups)
//                   a workgroup's number in a (gx, gy, 1) grid: gx * wy + wx
//   element(...)    the flat index of an invocation of a 64-lane workgroup in that grid
//   decode(i, rank, shape_at, strides_at)
//                   the offset of flat index i in a shape of `rank` axes whose extents
//                   are the words from shape_at, its strides the words from strides_at
//   strided(i, b)   the buffer index of element i of a view whose offset is word b,
//                   its strides the words after it, in a shape of rank word 1 with
//                   extents at words 2.. (the copy and elementwise layouts)
//   fold(lane, value, maximum)
//                   the max (maximum = true, NaN if any value is) or the sum of one value from each of a
//                   64-lane workgroup's invocations, through the workgroup array
//                   `partial`; every invocation gets the result
//   infinity(), not_a_number()   f32 constants WGSL cannot write as literals
//   is_nan(x), is_infinite(x)    tests on the bits, which no compiler may fold away
//   nan_max(a, b), nan_min(a, b) max and min that are NaN when either operand is
//   safe_exp(x), safe_inverse_sqrt(x)
//                   exp and inverseSqrt with NaN, zeros and infinities answered here
//   row_start(r), second_start(r), third_start(r)
//                   the row kernels' layout (softmax, layer_norm): the first element of
//                   row r of the first, second and third view, whose offsets are words
//                   3, 20 and 28, their outer strides from words 14, 22 and 30, over the
//                   outer shape at words 8.. of rank word 2
//
// `partial` costs nothing in a file that never reads it: WGSL gives an entry point
// only the workgroup memory it uses.

var<private> infinity_bits: u32 = 0x7f800000u;
var<private> nan_bits: u32 = 0x7fc00000u;

fn word(index: u32) -> u32 {
    return params[index / 4u][index % 4u];
}

fn infinity() -> f32 {
    return bitcast<f32>(infinity_bits);
}

fn not_a_number() -> f32 {
    return bitcast<f32>(nan_bits);
}

// WGSL lets an implementation assume that no NaN or infinity occurs, and its max, min and
// comparisons promise nothing about them (lavapipe's max(NaN, 1.0) is 1.0, and its
// NaN != NaN is false). These tests read the bits instead: a NaN has all exponent bits set
// and a non-zero fraction, an infinity all exponent bits set and a zero fraction.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn is_infinite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

fn nan_max(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, is_nan(b)), a, is_nan(a));
}

fn nan_min(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, is_nan(b)), a, is_nan(a));
}

// exp with NaN and the infinities answered here: SwiftShader's exp(NaN) is inf.
fn safe_exp(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (is_infinite(x)) {
        return select(0.0, x, x > 0.0);
    }
    return exp(x);
}

// inverseSqrt with its domain answered here: WGSL leaves a negative operand, 0 and infinity open.
// As numpy computes 1 / sqrt(x): 1 / sqrt(-0) = -inf, 1 / sqrt(inf) = 0.
fn safe_inverse_sqrt(x: f32) -> f32 {
    if (is_nan(x) || x < 0.0) {
        return not_a_number();
    }
    if (x == 0.0) {
        return select(infinity(), -infinity(), bitcast<u32>(x) != 0u);
    }
    if (is_infinite(x)) {
        return 0.0;
    }
    return inverseSqrt(x);
}

fn workgroup_index(group: vec3<u32>, groups: vec3<u32>) -> u32 {
    return group.y * groups.x + group.x;
}

fn element(group: vec3<u32>, groups: vec3<u32>, lane: u32) -> u32 {
    return workgroup_index(group, groups) * 64u + lane;
}

fn decode(i: u32, rank: u32, shape_at: u32, strides_at: u32) -> u32 {
    var rest = i;
    var index = 0u;
    var axis = i32(rank) - 1;
    loop {
        if (axis < 0) {
            break;
        }
        let extent = word(shape_at + u32(axis));
        index += (rest % extent) * word(strides_at + u32(axis));
        rest = rest / extent;
        axis -= 1;
    }
    return index;
}

fn strided(i: u32, base: u32) -> u32 {
    return word(base) + decode(i, word(1u), 2u, base + 1u);
}

var<workgroup> partial: array<f32, 64>;

fn fold(lane: u32, value: f32, maximum: bool) -> f32 {
    partial[lane] = value;
    workgroupBarrier();
    for (var width = 32u; width > 0u; width = width / 2u) {
        if (lane < width) {
            let other = partial[lane + width];
            partial[lane] = select(partial[lane] + other, nan_max(partial[lane], other), maximum);
        }
        workgroupBarrier();
    }
    let result = partial[0];
    workgroupBarrier();
    return result;
}

fn row_start(row: u32) -> u32 {
    return word(3u) + decode(row, word(2u), 8u, 14u);
}

fn second_start(row: u32) -> u32 {
    return word(20u) + decode(row, word(2u), 8u, 22u);
}

fn third_start(row: u32) -> u32 {
    return word(28u) + decode(row, word(2u), 8u, 30u);
}
