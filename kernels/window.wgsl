// topos kernel family "window": pooling's windowed reductions and max pooling's derivatives.
//
// Windows span every axis of x (lax.reduce_window's windows): window w reads the padded x
// from w * stride to w * stride + window - 1 on each axis, where padded position p is x's
// element p - low, or padding outside x. Axes are six, the leading ones of extent 1 where x
// has fewer. Each invocation computes one output element; nothing is written twice, so no
// atomics are needed.
//
// Entry points:
//   window_sum          out[w] = the sum of window w's elements of x (padding is 0)
//   window_max          out[w] = the largest (NaN if one is NaN; padding is -inf)
//   select_gather       out[w] = t at the element window w selects: its first maximum in
//                       row-major window order, a NaN counting as the largest, never padding
//   select_scatter_add  out[i] (shaped like x) = the sum of g[w] over the windows w that hold
//                       element i and select it: a gather over those windows, each one's
//                       selection found again
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, infinity, is_nan).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous (the windows' grid, or x's shape for the scatter)
//   2  storage read        x       array<f32>, read through its offset and strides
//   3  storage read        second  array<f32>: t (shaped like x) or g (shaped like the grid), through its strides
//
// Parameters (u32 words):
//   0 count (output elements), 1 taps (elements a window holds), 2 x's offset, 3 second's offset,
//   4-7 unused, 8-13 x's shape, 14-19 the grid's shape, 20-25 window, 26-31 strides,
//   32-37 low padding, 38-43 x's strides, 44-49 second's strides (over x's shape for t,
//   the grid's for g)
//
// Dispatch: workgroups of 64 invocations over `count` output elements, as a grid
// (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> second: array<f32>;

{{COMMON}}

const AXES: u32 = 6u;

// The coordinates of flat index i in the shape at words `at`.. (row-major).
fn coordinates(i: u32, at: u32) -> array<u32, 6> {
    var c: array<u32, 6>;
    var rest = i;
    for (var d = 0u; d < AXES; d += 1u) {
        let axis = AXES - 1u - d;
        let extent = word(at + axis);
        c[axis] = rest % extent;
        rest = rest / extent;
    }
    return c;
}

// Where tap j of window w lies in x (its buffer index), or 0xffffffff where it is padding.
fn tap_index(w: array<u32, 6>, j: u32) -> u32 {
    let offset = coordinates(j, 20u);
    var index = word(2u);
    for (var d = 0u; d < AXES; d += 1u) {
        let p = i32(w[d] * word(26u + d) + offset[d]) - i32(word(32u + d));
        if (p < 0 || p >= i32(word(8u + d))) {
            return 0xffffffffu;
        }
        index += u32(p) * word(38u + d);
    }
    return index;
}

// The tap window w selects: its first maximum in row-major order, a NaN counting as the largest;
// `taps` where it holds no element of x (it cannot: each padding side is shorter than the window).
fn selected_tap(w: array<u32, 6>) -> u32 {
    var best = 0.0;
    var chosen = word(1u);
    for (var j = 0u; j < word(1u); j += 1u) {
        let index = tap_index(w, j);
        if (index == 0xffffffffu) {
            continue;
        }
        let v = x[index];
        let better = chosen == word(1u) || (is_nan(v) && !is_nan(best)) || (!is_nan(best) && v > best);
        if (better) {
            best = v;
            chosen = j;
        }
    }
    return chosen;
}

{{ELEMENT_ENTRY window_sum}}
    let w = coordinates(i, 14u);
    var total = 0.0;
    for (var j = 0u; j < word(1u); j += 1u) {
        let index = tap_index(w, j);
        if (index != 0xffffffffu) {
            total += x[index];
        }
    }
    out[i] = total;
}

{{ELEMENT_ENTRY window_max}}
    let w = coordinates(i, 14u);
    var largest = -infinity();
    for (var j = 0u; j < word(1u); j += 1u) {
        let index = tap_index(w, j);
        if (index != 0xffffffffu) {
            largest = nan_max(largest, x[index]);
        }
    }
    out[i] = largest;
}

{{ELEMENT_ENTRY select_gather}}
    let w = coordinates(i, 14u);
    let j = selected_tap(w);
    if (j == word(1u)) {
        out[i] = 0.0;
        return;
    }
    // The selected element's coordinates in x, read through t's own strides.
    let offset = coordinates(j, 20u);
    var index = word(3u);
    for (var d = 0u; d < AXES; d += 1u) {
        index += (w[d] * word(26u + d) + offset[d] - word(32u + d)) * word(44u + d);
    }
    out[i] = second[index];
}

{{ELEMENT_ENTRY select_scatter_add}}
    let c = coordinates(i, 8u);
    // On each axis, the windows holding padded position p = c + low: first to last.
    var first: array<u32, 6>;
    var extent: array<u32, 6>;
    var windows = 1u;
    for (var d = 0u; d < AXES; d += 1u) {
        let p = c[d] + word(32u + d);
        let k = word(20u + d);
        let s = word(26u + d);
        var lo = 0u;
        if (p + 1u > k) {
            lo = (p + 1u - k + s - 1u) / s;
        }
        let hi = min(p / s, word(14u + d) - 1u);
        if (lo > hi) {
            out[i] = 0.0;
            return;
        }
        first[d] = lo;
        extent[d] = hi - lo + 1u;
        windows *= extent[d];
    }
    var total = 0.0;
    for (var n = 0u; n < windows; n += 1u) {
        var w: array<u32, 6>;
        var rest = n;
        var tap = 0u;
        for (var e = 0u; e < AXES; e += 1u) {
            let axis = AXES - 1u - e;
            w[axis] = first[axis] + rest % extent[axis];
            rest = rest / extent[axis];
        }
        // This element's tap in window w, row-major over the window's shape.
        for (var d = 0u; d < AXES; d += 1u) {
            tap = tap * word(20u + d) + (c[d] + word(32u + d) - w[d] * word(26u + d));
        }
        if (selected_tap(w) == tap) {
            var index = word(3u);
            for (var d = 0u; d < AXES; d += 1u) {
                index += w[d] * word(44u + d);
            }
            total += second[index];
        }
    }
    out[i] = total;
}
