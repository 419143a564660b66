// topos kernel family "random": Threefry-2x32 (20 rounds) in u32, the same bits as numpy and XLA
// (topos.ops.random; JAX's threefry2x32 and its partitionable layout).
//
// Entry points:
//   bits     RandomBits(key): out[i] = y0 ^ y1, (y0, y1) = threefry(key, (0, i)) for i < count.
//   split    SplitKey(key): out[2 j] = y0, out[2 j + 1] = y1, (y0, y1) = threefry(key, (0, j)),
//            for j < count / 2 (count is the output's element count, 2 a key).
//   fold_in  FoldIn(key): out[0], out[1] = threefry(key, (0, data)); one invocation.
//   uniform_floats  Uniform(bits) as float32: out[i] = bitcast<f32>((bits[i] >> 9) | 0x3f800000) - 1.0,
//            written as its u32 bits (the buffer is the float32 value's; a buffer has no type).
//            bits[i] is read through the view's offset and strides.
//   randint  RandomInt(bits) as int32: with hi, lo the two planes of the [2, ...] bits (word 15 apart),
//            out[i] = low + ((hi % span) * multiplier + lo % span) % span in wrapping u32, written as
//            the int32's bits (JAX's _randint; topos.ops.random.random_integers).
//   bit_field  BitField(bits) as float32: out[i] = f32((bits[i] >> shift) & mask), strided as
//            uniform_floats, written as its u32 bits.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<u32>, contiguous
//   2  storage read        source  array<u32>: the key (bits, split, fold_in) or the bits (uniform_floats)
//
// Parameters (u32 words):
//   0 count (output elements), 1 rank and 2..7 extents of the output (uniform_floats, randint,
//   bit_field), 8 the source view's offset, 9..14 its strides (those three: one per output axis;
//   the others: 9 is the stride between the key's two words), 15 data (fold_in) or the plane
//   stride (randint), 16 span, 17 multiplier and 18 low (randint), or 16 shift and 17 mask (bit_field)
//
// Dispatch: workgroups of 64 invocations over `count` output elements (split: count / 2 keys),
// as a grid (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read> source: array<u32>;

{{COMMON}}

fn rotate_left(x: u32, r: u32) -> u32 {
    return (x << r) | (x >> (32u - r));
}

// Threefry-2x32 of the counter (x0, x1) under the key in `source`: five groups of four rounds,
// a key injection after each, as JAX's unrolled lowering writes them.
fn threefry(counter0: u32, counter1: u32) -> vec2<u32> {
    let k0 = source[word(8u)];
    let k1 = source[word(8u) + word(9u)];
    var ks = array<u32, 3>(k0, k1, k0 ^ k1 ^ 0x1BD11BDAu);
    var rotations = array<u32, 8>(13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u);
    var x0 = counter0 + ks[0];
    var x1 = counter1 + ks[1];
    for (var g = 0u; g < 5u; g = g + 1u) {
        for (var r = 0u; r < 4u; r = r + 1u) {
            x0 = x0 + x1;
            x1 = rotate_left(x1, rotations[(g % 2u) * 4u + r]);
            x1 = x0 ^ x1;
        }
        x0 = x0 + ks[(g + 1u) % 3u];
        x1 = x1 + ks[(g + 2u) % 3u] + g + 1u;
    }
    return vec2<u32>(x0, x1);
}

{{ELEMENT_ENTRY bits}}
    let y = threefry(0u, i);
    out[i] = y.x ^ y.y;
}

{{ENTRY split}}
    let j = element(group, groups, lane);
    if (2u * j >= word(0u)) {
        return;
    }
    let y = threefry(0u, j);
    out[2u * j] = y.x;
    out[2u * j + 1u] = y.y;
}

{{ENTRY fold_in}}
    if (element(group, groups, lane) != 0u) {
        return;
    }
    let y = threefry(0u, word(15u));
    out[0] = y.x;
    out[1] = y.y;
}

{{ELEMENT_ENTRY uniform_floats}}
    let mantissa = (source[strided(i, 8u)] >> 9u) | 0x3f800000u;
    out[i] = bitcast<u32>(bitcast<f32>(mantissa) - 1.0);
}

{{ELEMENT_ENTRY randint}}
    let at = strided(i, 8u);
    let span = word(16u);
    let offset = ((source[at] % span) * word(17u) + source[at + word(15u)] % span) % span;
    out[i] = offset + word(18u);
}

{{ELEMENT_ENTRY bit_field}}
    out[i] = bitcast<u32>(f32((source[strided(i, 8u)] >> word(16u)) & word(17u)));
}
