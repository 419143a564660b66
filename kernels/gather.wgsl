// topos kernel family "gather": reads picked by int32 indices.
//
// Entry points:
//   take     Take(values, indices) along `axis`: with values [outer..., extent, inner...]
//            (contiguous) and `count` indices, out [outer..., indices..., inner...] holds
//            out[(o * count + j) * inner + i] = values[(o * extent + indices[j]) * inner + i].
//            An index outside 0..extent-1 reads 0.0 (the backend checks indices before it
//            launches, as numpy raises).
//   one_hot  OneHot(indices) with `depth` classes: out[j * depth + c] = 1.0 where
//            indices[j] == c, else 0.0.
//   index_to_float  IndexToFloat(indices): out[i] = f32(indices[i]).
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params   array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out      array<f32>, contiguous
//   2  storage read        indices  array<i32>, contiguous
//   3  storage read        values   array<f32>, contiguous (take only)
//
// Parameters (u32 words):
//   0 count (output elements), 1 indices (number of indices), 2 extent (take) or
//   depth (one_hot), 3 inner (take: elements per index along the inner axes)
//
// Dispatch: workgroups of 64 invocations over `count` output elements, as a grid
// (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;

{{COMMON}}

{{ELEMENT_ENTRY take}}
    let count = word(1u);
    let extent = word(2u);
    let inner = word(3u);
    let within = i % inner;
    let j = (i / inner) % count;
    let o = i / (inner * count);
    let index = indices[j];
    if (index < 0 || u32(index) >= extent) {
        out[i] = 0.0;
        return;
    }
    out[i] = values[(o * extent + u32(index)) * inner + within];
}

{{ELEMENT_ENTRY one_hot}}
    let depth = word(2u);
    out[i] = select(0.0, 1.0, indices[i / depth] == i32(i % depth));
}

{{ELEMENT_ENTRY index_to_float}}
    out[i] = f32(indices[i]);
}
