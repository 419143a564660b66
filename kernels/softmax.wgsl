// topos kernel family "softmax": fused softmax and log-softmax along the last axis, and their derivatives.
//
// Chosen where the plan shows the pattern that topos.softmax and topos.log_softmax
// record (Max, StopGradient, Sub, Exp, Sum, then Div or Log and Sub) and no other node
// reads the values in between. One workgroup of 64 invocations owns one row: it finds
// the row's maximum, sums exp(x - max), then writes every element, so the row is read
// three times and written once instead of passing through seven buffers. The
// derivatives (the SoftmaxGrad and LogSoftmaxGrad nodes of a gradient) read a row of
// g and of y: one pass for the row's sum, one to write.
//
// Entry points:
//   softmax           out = exp(x - max) / sum(exp(x - max))
//   log_softmax       out = (x - max) - log(sum(exp(x - max)))
//   softmax_grad      out = y (g - sum(g y)), x = g and y = the softmax (second)
//   log_softmax_grad  out = g - exp(y) sum(g), x = g and y = the log-softmax (second)
//
// Each input is read through a strided view: row r's element j lives at
// offset + outer(r) + j * stride, where outer() decodes r through the outer shape and
// that view's outer strides. The output is contiguous: out[r * length + j].
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, fold, infinity,
// workgroup_index and the row layout: row_start, second_start).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>
//   2  storage read        source  array<f32>
//   3  storage read        second  array<f32> (the derivatives' y; unbound for the others)
//
// Parameters (u32 words):
//   0 rows, 1 length (elements per row), 2 outer rank (at most 6), 3 offset, 4 stride
//   8..13 outer shape, 14..19 outer strides
//   the second view: 20 offset, 21 stride, 22..27 outer strides
//
// Dispatch: one workgroup per row, as a grid (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;
@group(0) @binding(3) var<storage, read> second: array<f32>;

{{COMMON}}

struct RowStatistics {
    maximum: f32,
    total: f32,
}

fn statistics(row: u32, lane: u32) -> RowStatistics {
    let length = word(1u);
    let stride = word(4u);
    let start = row_start(row);
    var largest = -infinity();
    for (var j = lane; j < length; j += 64u) {
        largest = nan_max(largest, source[start + j * stride]);
    }
    let maximum = fold(lane, largest, true);
    var sum = 0.0;
    for (var j = lane; j < length; j += 64u) {
        sum += safe_exp(source[start + j * stride] - maximum);
    }
    return RowStatistics(maximum, fold(lane, sum, false));
}

{{ROW_ENTRY softmax}}
    let s = statistics(row, lane);
    for (var j = lane; j < length; j += 64u) {
        out[row * length + j] = safe_exp(source[start + j * stride] - s.maximum) / s.total;
    }
}

{{ROW_ENTRY log_softmax}}
    let s = statistics(row, lane);
    // The total is at least 1 (the maximum's own term) or NaN, which WGSL's log need not keep.
    let log_total = select(log(s.total), s.total, is_nan(s.total));
    for (var j = lane; j < length; j += 64u) {
        out[row * length + j] = (source[start + j * stride] - s.maximum) - log_total;
    }
}

{{ROW_ENTRY softmax_grad}}
    let y_stride = word(21u);
    let y_start = second_start(row);
    var dot = 0.0;
    for (var j = lane; j < length; j += 64u) {
        dot += source[start + j * stride] * second[y_start + j * y_stride];
    }
    let total = fold(lane, dot, false);
    for (var j = lane; j < length; j += 64u) {
        out[row * length + j] = second[y_start + j * y_stride] * (source[start + j * stride] - total);
    }
}

{{ROW_ENTRY log_softmax_grad}}
    let y_stride = word(21u);
    let y_start = second_start(row);
    var sum = 0.0;
    for (var j = lane; j < length; j += 64u) {
        sum += source[start + j * stride];
    }
    let total = fold(lane, sum, false);
    for (var j = lane; j < length; j += 64u) {
        out[row * length + j] = source[start + j * stride] - safe_exp(second[y_start + j * y_stride]) * total;
    }
}
