// topos kernel family "layer_norm": fused normalisation along the last axis,
// out = (x - mean) / sqrt(var + eps), with var the biased variance of the row, and its derivative.
//
// Chosen where the plan shows the pattern that topos.layer_norm records (Sum / n for the
// mean, Sub, Mul, Sum / n for the variance, Add eps, Rsqrt, Mul) and no other node reads
// the values in between; the weight and bias stay ordinary elementwise launches. One
// workgroup of 64 invocations owns one row and takes two passes over it (mean, then the
// variance of the centred values, as the unfused nodes compute it) before writing it.
//
// Entry points:
//   layer_norm       out = (x - mean) / sqrt(var + eps)
//   layer_norm_grad  out = r (g - mean(g) - n mean(g n)): a gradient's LayerNormGrad node, with
//                    x = g, n = the normalised rows (second) and r = 1 / sqrt(var + eps), one
//                    element a row (third); one pass for both row sums, one to write
//
// Each input is read through a strided view: row r's element j lives at
// offset + outer(r) + j * stride, outer() decoding r through the outer shape and that
// view's outer strides. The output is contiguous: out[r * length + j].
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, fold, workgroup_index
// and the row layout: row_start, second_start, third_start).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>
//   2  storage read        source  array<f32>
//   3  storage read        second  array<f32> (layer_norm_grad's n; unbound for layer_norm)
//   4  storage read        third   array<f32> (layer_norm_grad's r; unbound for layer_norm)
//
// Parameters (u32 words):
//   0 rows, 1 length (elements per row), 2 outer rank (at most 6), 3 offset, 4 stride,
//   5 eps (f32 bits), 8..13 outer shape, 14..19 outer strides
//   the second view: 20 offset, 21 stride, 22..27 outer strides
//   the third view: 28 offset, 29 stride (0: one element a row), 30..35 outer strides
//
// Dispatch: one workgroup per row, as a grid (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;
@group(0) @binding(3) var<storage, read> second: array<f32>;
@group(0) @binding(4) var<storage, read> third: array<f32>;

{{COMMON}}

{{ROW_ENTRY layer_norm}}
    let count = f32(length);
    var sum = 0.0;
    for (var j = lane; j < length; j += 64u) {
        sum += source[start + j * stride];
    }
    let mean = fold(lane, sum, false) / count;
    var squares = 0.0;
    for (var j = lane; j < length; j += 64u) {
        let centred = source[start + j * stride] - mean;
        squares += centred * centred;
    }
    let variance = fold(lane, squares, false) / count;
    let scale = safe_inverse_sqrt(variance + bitcast<f32>(word(5u)));
    for (var j = lane; j < length; j += 64u) {
        out[row * length + j] = (source[start + j * stride] - mean) * scale;
    }
}

{{ROW_ENTRY layer_norm_grad}}
    let n_stride = word(21u);
    let n_start = second_start(row);
    let count = f32(length);
    var sum = 0.0;
    var dot = 0.0;
    for (var j = lane; j < length; j += 64u) {
        let g = source[start + j * stride];
        sum += g;
        dot += g * second[n_start + j * n_stride];
    }
    let mean_g = fold(lane, sum, false) / count;
    let mean_gn = fold(lane, dot, false) / count;
    let scale = third[third_start(row)];
    for (var j = lane; j < length; j += 64u) {
        let normed = second[n_start + j * n_stride];
        out[row * length + j] = scale * (source[start + j * stride] - mean_g - normed * mean_gn);
    }
}
