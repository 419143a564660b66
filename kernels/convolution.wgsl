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
//                terms of its group, the window's taps counted like an odometer (no division in the
//                loop; lavapipe leaves a loop after 32767 iterations, so the builder declines more
//                terms than that, and the im2col path takes large convolutions anyway). An output at
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
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous [M, O, *out]
//   2  storage read        lhs     array<f32>
//   3  storage read        rhs     array<f32>
//
// Parameters (u32 words):
//   (each per-axis list holds 4 words; an unused axis has extents 1, strides 0, dilations 1, padding 0)
//   0 count (output elements), 1 spatial rank (1..4), 2 M (output batch), 3 O (output channels),
//   4 I (input channels a group reads), 5 O / groups, 6 channel step (I with feature groups, else 0),
//   7 batch step (M with batch groups, else 0), 8 terms (I times the window's size), 9 window size,
//   10..13 output extents, 14..17 input extents, 18..21 window extents, 22..25 strides,
//   26..29 low padding (i32 bits: negative crops), 30..33 lhs dilation, 34..37 rhs dilation,
//   38 lhs offset, 39 lhs batch stride, 40 lhs channel stride, 41..44 lhs spatial strides,
//   45 rhs offset, 46 rhs output-channel stride, 47 rhs input-channel stride, 48..51 rhs spatial strides

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> lhs: array<f32>;
@group(0) @binding(3) var<storage, read> rhs: array<f32>;

{{COMMON}}

{{ELEMENT_ENTRY convolution}}
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
    let lhs_channel = word(40u);
    let rhs_channel = word(47u);
    // Each axis's words, read once: the loop below reads none.
    let in_extent = vec4<i32>(i32(word(14u)), i32(word(15u)), i32(word(16u)), i32(word(17u)));
    let window = vec4<u32>(word(18u), word(19u), word(20u), word(21u));
    let stride = vec4<u32>(word(22u), word(23u), word(24u), word(25u));
    let low = vec4<i32>(bitcast<i32>(word(26u)), bitcast<i32>(word(27u)), bitcast<i32>(word(28u)), bitcast<i32>(word(29u)));
    let lhs_dilation = vec4<i32>(i32(word(30u)), i32(word(31u)), i32(word(32u)), i32(word(33u)));
    let rhs_dilation = vec4<u32>(word(34u), word(35u), word(36u), word(37u));
    let lhs_stride = vec4<u32>(word(41u), word(42u), word(43u), word(44u));
    let rhs_stride = vec4<u32>(word(48u), word(49u), word(50u), word(51u));
    // The window's first tap in the dilated, padded input.
    let origin = vec4<i32>(position * stride) - low;
    var tap = vec4<u32>(0u, 0u, 0u, 0u);
    var channel = 0u;
    var sum = 0.0;
    let terms = word(8u);
    for (var t = 0u; t < terms; t += 1u) {
        let q = origin + vec4<i32>(tap * rhs_dilation);
        let j = q / lhs_dilation;
        let lands = all(q >= vec4<i32>(0)) && all(q % lhs_dilation == vec4<i32>(0)) && all(j < in_extent);
        if (lands) {
            let at = vec4<u32>(j) * lhs_stride;
            let taps = tap * rhs_stride;
            let x = lhs[lhs_base + channel * lhs_channel + at.x + at.y + at.z + at.w];
            let w = rhs[rhs_base + channel * rhs_channel + taps.x + taps.y + taps.z + taps.w];
            sum += x * w;
        }
        // The next tap: the last axis fastest (an unused axis has extent 1 and passes the carry on).
        tap.w += 1u;
        if (tap.w == window.w) {
            tap.w = 0u;
            tap.z += 1u;
        }
        if (tap.z == window.z) {
            tap.z = 0u;
            tap.y += 1u;
        }
        if (tap.y == window.y) {
            tap.y = 0u;
            tap.x += 1u;
        }
        if (tap.x == window.x) {
            tap.x = 0u;
            channel += 1u;
        }
    }
    out[i] = sum;
}
