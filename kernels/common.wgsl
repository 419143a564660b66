// The helpers every topos kernel file shares. WGSL has no includes: a file writes
// the COMMON token (in double braces) after its bindings, and the loaders (topos.webgpu.sources.specialise
// and specialise in web/src/webgpu.ts) put this text there. It declares no
// bindings of its own; it reads the including file's `params` (binding 0).
//
//   word(i)         u32 word i of the parameter block
//   element(...)    the flat index of an invocation of a 64-lane workgroup in a
//                   (gx, gy, 1) grid, workgroups numbered gx * wy + wx
//   strided(i, b)   the buffer index of element i of a view whose offset is word b,
//                   its strides the words after it, in a shape of rank word 1 with
//                   extents at words 2.. (the copy and elementwise layouts)
//   infinity(), not_a_number()   f32 constants WGSL cannot write as literals

var<private> infinity_bits: u32 = 0x7f800000u;
var<private> nan_bits: u32 = 0x7fc00000u;

fn word(index: u32) -> u32 {
    return params[index / 4u][index % 4u];
}

fn infinity() -> f32 {
    return bitcast<f32>(infinity_bits);
}

fn not_a_number() -> f32 {
    return bitcast<f32>(nan_bits);
}

fn element(group: vec3<u32>, groups: vec3<u32>, lane: u32) -> u32 {
    return (group.y * groups.x + group.x) * 64u + lane;
}

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
