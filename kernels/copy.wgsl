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
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params   array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out      array<u32>: the words of any 4-byte dtype (f32, i32, u32),
//                                   moved bit for bit (a NaN's payload, a random key's words)
//   2  storage read        source   array<u32> (copy only)
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

@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> source: array<u32>;

{{COMMON}}

{{ELEMENT_ENTRY copy}}
    out[strided(i, 15u)] = source[strided(i, 8u)];
}

{{ELEMENT_ENTRY fill}}
    out[strided(i, 15u)] = word(22u);
}
