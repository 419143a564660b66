// topos kernel family "copy": moves elements between strided views without arithmetic.
//
// Entry points:
//   copy  out view [i] = in view [i] for every element i of `shape`. Materialises a
//         transpose, slice, broadcast or reshape; writes one operand of a concatenation
//         into its part of the output; writes a padded operand into its interior.
//   fill  out view [i] = value (the zero border of a padding).
//
// A view is an offset and one stride per axis (in elements): element i, at coordinates
// (c0, ..., c{rank-1}) of `shape`, lives at offset + sum(c_d * stride_d).
//
// Bindings (group 0):
//   0  uniform             params   array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out      array<f32> (array<i32> copies the same bits)
//   2  storage read        source   array<f32> (copy only)
//
// Parameters (u32 words):
//   0  count           number of elements to move
//   1  rank            number of axes of `shape` (at most 6)
//   2..7               shape, outermost axis first
//   8  source offset, 9..14 source strides
//   15 out offset, 16..21 out strides
//   22 value           the fill value (f32 bits)
//
// Dispatch: workgroups of 64 invocations; the grid (gx, gy, 1) holds at least
// ceil(count / 64) workgroups, numbered gx * wy + wx.

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;

fn word(index: u32) -> u32 {
    return params[index / 4u][index % 4u];
}

// The buffer index of element i in the view whose offset is word `base`
// and whose strides follow it.
fn strided(i: u32, base: u32) -> u32 {
    var rest = i;
    var index = word(base);
    var axis = i32(word(1u)) - 1;
    loop {
        if (axis < 0) {
            break;
        }
        let extent = word(2u + u32(axis));
        index += (rest % extent) * word(base + 1u + u32(axis));
        rest = rest / extent;
        axis -= 1;
    }
    return index;
}

fn element(group: vec3<u32>, groups: vec3<u32>, lane: u32) -> u32 {
    return (group.y * groups.x + group.x) * 64u + lane;
}

@compute @workgroup_size(64)
fn copy(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }
    out[strided(i, 15u)] = source[strided(i, 8u)];
}

@compute @workgroup_size(64)
fn fill(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }
    out[strided(i, 15u)] = bitcast<f32>(word(22u));
}
