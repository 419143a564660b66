// topos kernel family "convolution": Convolution(lhs, rhs), XLA's ConvGeneralDilated in NCHW / OIHW.
//
// lhs [N, C, *in] and rhs [O, I, *window] are read through strided views (offset and strides in
// elements), so the backward's transposed operands cost no copy; out [M, O, *out] is contiguous,
// M = N / batch_groups. Up to 4 spatial axes. Every attribute: strides, (low, high) padding (the
// high side only bounds the output, which the builder sized), lhs dilation, rhs dilation, feature
// groups and batch groups, so the backward's own convolutions run here too.
//
// Entry points:
//   convolution  the direct kernel: one invocation per output element, one loop over the I x window
//                terms of its group, four terms an iteration (lavapipe leaves a loop after 32767
//                iterations, so the builder declines more than 4 x 32767 terms). An output at
//                (n, o, p) reads kernel o's group g = o / (O / groups): input channels g * I + i
//                with feature groups, input batch n + g * M with batch groups. A tap k of axis a
//                lands at q = p * stride + k * rhs_dilation - low of the dilated, padded input, an
//                element of lhs where q is a multiple of the lhs dilation d and q / d < the extent;
//                elsewhere it reads a zero of the dilation or the padding.
//                Dispatch: workgroups of 64 over the output elements, as a grid (gx, gy, 1)
//                numbered gx * wy + wx.
// Which kernel runs a convolution, and what it declines: py/topos/compiler/wgsl/convolution.py.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous [M, O, *out]
//   2  storage read        lhs     array<f32>
//   3  storage read        rhs     array<f32>
//
// Parameters (u32 words):
//   (each per-axis list holds 4 words, the unused ones 0)
//   0 count (output elements), 1 spatial rank (1..4), 2 M (output batch), 3 O (output channels),
//   4 I (input channels a group reads), 5 O / groups, 6 channel step (I with feature groups, else 0),
//   7 batch step (M with batch groups, else 0), 8 terms (I times the window's size), 9 window size,
//   10..13 output extents, 14..17 input extents, 18..21 window extents, 22..25 strides,
//   26..29 low padding (i32 bits: negative crops), 30..33 lhs dilation, 34..37 rhs dilation,
//   38 lhs offset, 39 lhs batch stride, 40 lhs channel stride, 41..44 lhs spatial strides,
//   45 rhs offset, 46 rhs output-channel stride, 47 rhs input-channel stride, 48..51 rhs spatial strides

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> lhs: array<f32>;
@group(0) @binding(3) var<storage, read> rhs: array<f32>;

{{COMMON}}

// Where one term of a window is: the rest of its window index still to decode, its lhs and rhs
// indices so far, and whether it lands on an element of lhs (not a zero of padding or dilation).
struct Tap {
    rest: u32,
    lhs_index: u32,
    rhs_index: u32,
    inside: bool,
}

// Axis a of a term: its tap along the axis, and where that lands in lhs for the output at `at`.
fn axis_step(a: u32, at: u32, state: Tap) -> Tap {
    var next = state;
    let extent = word(18u + a);
    let tap = state.rest % extent;
    next.rest = state.rest / extent;
    let q = i32(at * word(22u + a) + tap * word(34u + a)) - bitcast<i32>(word(26u + a));
    let dilation = i32(word(30u + a));
    let j = q / dilation;
    let lands = q >= 0 && q % dilation == 0 && j < i32(word(14u + a));
    next.inside = state.inside && lands;
    next.lhs_index = state.lhs_index + u32(max(j, 0)) * word(41u + a);
    next.rhs_index = state.rhs_index + tap * word(48u + a);
    return next;
}

// Term t (an input channel of the group and a window position) of the output at `position`.
fn term(t: u32, position: vec4<u32>, lhs_base: u32, rhs_base: u32) -> f32 {
    if (t >= word(8u)) {
        return 0.0;
    }
    let rank = word(1u);
    let window = word(9u);
    let channel = t / window;
    var state = Tap(t % window, lhs_base + channel * word(40u), rhs_base + channel * word(47u), true);
    // The last axis varies fastest in the window index, as in the kernel's layout.
    if (rank > 3u) {
        state = axis_step(3u, position[3], state);
    }
    if (rank > 2u) {
        state = axis_step(2u, position[2], state);
    }
    if (rank > 1u) {
        state = axis_step(1u, position[1], state);
    }
    state = axis_step(0u, position[0], state);
    if (!state.inside) {
        return 0.0;
    }
    return lhs[state.lhs_index] * rhs[state.rhs_index];
}

@compute @workgroup_size(64)
fn convolution(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }
    let rank = word(1u);
    var rest = i;
    var position = vec4<u32>(0u, 0u, 0u, 0u);
    for (var a = i32(rank) - 1; a >= 0; a -= 1) {
        let extent = word(10u + u32(a));
        position[a] = rest % extent;
        rest = rest / extent;
    }
    let o = rest % word(3u);
    let n = rest / word(3u);
    let g = o / word(5u);
    let lhs_base = word(38u) + (n + g * word(7u)) * word(39u) + g * word(6u) * word(40u);
    let rhs_base = word(45u) + o * word(46u);
    var sum = 0.0;
    let terms = word(8u);
    for (var t = 0u; t < terms; t += 4u) {
        sum += term(t, position, lhs_base, rhs_base);
        sum += term(t + 1u, position, lhs_base, rhs_base);
        sum += term(t + 2u, position, lhs_base, rhs_base);
        sum += term(t + 3u, position, lhs_base, rhs_base);
    }
    out[i] = sum;
}
