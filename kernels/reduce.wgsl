// topos kernel family "reduce": sum, max or product over any set of axes (mean is a sum with a scale).
//
// The reduced operand is read through a strided view split in two: the kept ("outer")
// axes name an output element o, the reduced ("inner") axes run over its `reduced`
// terms r. Term r of output o lives at offset + outer(o) + inner(r), where outer() and
// inner() decode an index through their own shape and strides (in elements).
//
// Entry points:
//   reduce_workgroup  one workgroup of 64 invocations per (output, chunk): each invocation
//                     folds a strided share of the chunk, then a tree in workgroup memory
//                     folds the 64 partial results. With `chunks` > 1 this is the first
//                     pass of a two-pass reduction: out[o * chunks + c] holds chunk c's
//                     partial result, and a second launch (chunks = 1) reduces those rows.
//   reduce_serial     one invocation per output folds all its terms in order: the simplest
//                     correct kernel, and the fastest when each output has few terms.
//
// Specialisation (text substituted before compiling):
//   {{IDENTITY}}  the fold's starting value: `0.0` (sum), `-infinity()` (max) or `1.0` (product)
//   {{COMBINE}}   the fold of accumulator `a` and term `b`: `a + b`, `nan_max(a, b)` or `a * b`
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, decode,
// infinity) and its workgroup array `partial`, which the fold below uses with this file's combine.
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous: outputs * chunks elements
//   2  storage read        source  array<f32>
//
// Parameters (u32 words):
//   0  outputs        number of output elements
//   1  reduced        number of terms per output
//   2  outer rank, 3 inner rank (each at most 6)
//   4  offset         the view's offset
//   5  chunk          terms per chunk (reduce_workgroup)
//   6  chunks         chunks per output; 1 for a single pass and for the second pass
//   7  scale          f32 bits: the final result is multiplied by it (1/n for a mean)
//   8..13 outer shape, 14..19 outer strides, 20..25 inner shape, 26..31 inner strides
//
// Dispatch: reduce_workgroup takes outputs * chunks workgroups, reduce_serial
// ceil(outputs / 64); both as a grid (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;

{{COMMON}}

fn combine(a: f32, b: f32) -> f32 {
    return {{COMBINE}};
}

fn outer(o: u32) -> u32 {
    return word(4u) + decode(o, word(2u), 8u, 14u);
}

fn inner(r: u32) -> u32 {
    // One reduced axis is the common case: skip the decoding loop.
    if (word(3u) == 1u) {
        return r * word(26u);
    }
    return decode(r, word(3u), 20u, 26u);
}

{{ENTRY reduce_workgroup}}
    let chunks = word(6u);
    let slot = workgroup_index(group, groups);
    // `slot` is the same for the whole workgroup, so every invocation returns or none does.
    if (slot >= word(0u) * chunks) {
        return;
    }
    let o = slot / chunks;
    let start = (slot % chunks) * word(5u);
    let stop = min(start + word(5u), word(1u));
    let base = outer(o);
    var a = {{IDENTITY}};
    for (var r = start + lane; r < stop; r += 64u) {
        a = combine(a, source[base + inner(r)]);
    }
    partial[lane] = a;
    workgroupBarrier();
    for (var width = 32u; width > 0u; width = width / 2u) {
        if (lane < width) {
            partial[lane] = combine(partial[lane], partial[lane + width]);
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        var result = partial[0];
        if (chunks == 1u) {
            result = result * bitcast<f32>(word(7u));
        }
        out[slot] = result;
    }
}

{{ENTRY reduce_serial}}
    let o = element(group, groups, lane);
    if (o >= word(0u)) {
        return;
    }
    let base = outer(o);
    var a = {{IDENTITY}};
    for (var r = 0u; r < word(1u); r += 1u) {
        a = combine(a, source[base + inner(r)]);
    }
    out[o] = a * bitcast<f32>(word(7u));
}
