// topos kernel family "elementwise": out[i] = EXPRESSION(x, y, z, ...) for every element i.
//
// One shared template for every unary, binary, comparison and select op, and for chains of
// them fused into one launch (topos.compiler.wgsl.fusion): up to seven operands x, y, z, u, v,
// w, s, and let statements (BODY) computing the chain's intermediate values t0, t1, ... in
// registers before the final expression. Each operand is read through a strided view of its
// buffer: element i of the output, at coordinates (c0, ..., c{rank-1}), reads operand x at
// x_offset + sum(c_d * x_stride_d). A stride of 0 repeats an axis, so a broadcast costs no
// copy; a transposed or sliced operand is read in place.
//
// Specialisation (text substituted before compiling; pipelines are cached on it):
//   {{EXPRESSION}}  a WGSL f32 expression over the operands and BODY's lets, e.g. `x + y`,
//                   `exp(x)` or `t1 * z`
//   {{BODY}}        statements before it, e.g. `let t0 = x - y; let t1 = t0 * t0;` (empty for
//                   one op); a chain with a second output stores it, `extra[i] = t0;`
//   {{LOAD_X}}      how x is read at element i: `x_buffer[i]` (contiguous),
//                   `x_buffer[strided(i, 8u)]` (through the view), a constant from the
//                   parameters, or `0.0` (unused)
//   {{LOAD_Y}}      the same for y (view words at 15u)
//   {{LOAD_Z}}      the same for z (view words at 22u)
//   {{LOAD_U}}, {{LOAD_V}}, {{LOAD_W}}, {{LOAD_S}}
//                   the same for u, v, w and s (view words at 29u, 36u, 43u and 50u)
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
//
// Bindings (group 0):
//   0  uniform             params    array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out       array<f32>, contiguous, `count` elements
//   2  storage read        x_buffer  array<f32>
//   3  storage read        y_buffer  array<f32> (bound only when y is read from a buffer; so the rest)
//   4  storage read        z_buffer  array<f32>
//   5..8 storage read      u_buffer, v_buffer, w_buffer, s_buffer  array<f32>
//   9  storage read_write  extra     array<f32>, contiguous: a fused chain's second output (then at
//                                    most six operands, so that the launch binds at most 8 storage buffers)
//
// Parameters (u32 words):
//   0  count            number of output elements
//   1  rank             number of output axes (at most 6)
//   2..7                output shape, outermost axis first
//   8  x offset, 9..14 x strides (in elements, one per output axis); a constant x: its f32 bits at 8
//   15 y offset, 16..21 y strides
//   22 z offset, 23..28 z strides
//   29, 36, 43, 50: the offsets of u, v, w and s, each followed by its 6 strides
//
// Dispatch: workgroups of 64 invocations; the grid (gx, gy, 1) holds at least
// ceil(count / 64) workgroups, numbered gx * wy + wx.

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> x_buffer: array<f32>;
@group(0) @binding(3) var<storage, read> y_buffer: array<f32>;
@group(0) @binding(4) var<storage, read> z_buffer: array<f32>;
@group(0) @binding(5) var<storage, read> u_buffer: array<f32>;
@group(0) @binding(6) var<storage, read> v_buffer: array<f32>;
@group(0) @binding(7) var<storage, read> w_buffer: array<f32>;
@group(0) @binding(8) var<storage, read> s_buffer: array<f32>;
@group(0) @binding(9) var<storage, read_write> extra: array<f32>;

{{COMMON}}

// A private variable, not a constant: WGSL rejects infinities in constant expressions.

// tanh to a few ulp of relative error: WGSL's tanh (an exp-based formula on many drivers) loses
// the relative precision of small results. Near 0 a Taylor series (its next term is below 1e-8 of
// the result for |x| < 0.25); beyond, 1 - 2 / (e^2|x| + 1); past 9, tanh is 1 in f32.
fn safe_tanh(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    let a = abs(x);
    var t = 1.0;
    if (a < 0.25) {
        let a2 = a * a;
        t = a * (1.0 + a2 * (-0.3333333333 + a2 * (0.1333333333 + a2 * (-0.0539682540 + a2 * 0.0218694885))));
    } else if (a < 9.0) {
        t = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    }
    return select(t, -t, x < 0.0);
}

// The natural logarithm to a few ulp of relative error: WGSL only promises an absolute error of
// 2^-21 near 1, where log's result is small. x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
// log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m - 1) / (m + 1), |s| < 0.172;
// ln 2 is split in a high part exact in f32 and a low part. WGSL leaves log outside its domain
// open, so NaN, negatives, zeros, subnormals and +inf are answered here.
fn precise_log(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let biased = i32((bits >> 23u) & 0xffu);
    if (is_nan(x) || x < 0.0) {
        return not_a_number();
    }
    if (x == 0.0) {
        return -infinity();
    }
    if (biased == 255) {
        return x;
    }
    if (biased == 0) {
        // A subnormal reads as zero, as on XLA's CPU (drivers' log builtins misread them).
        return -infinity();
    }
    var e = biased - 127;
    var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
    if (m > 1.4142135) {
        m = m * 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let tail = s * s2 * (0.6666666667 + s2 * (0.4 + s2 * (0.2857142857 + s2 * 0.2222222222)));
    let exponent = f32(e);
    return exponent * 0.693145751953125 + ((exponent * 1.4286068203e-6 + tail) + 2.0 * s);
}

// 1 / (1 + e^-x) without overflow: the exponent is never positive.
fn sigmoid(x: f32) -> f32 {
    let z = safe_exp(-abs(x));
    return select(z / (1.0 + z), 1.0 / (1.0 + z), x >= 0.0);
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
fn gelu(x: f32) -> f32 {
    let inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + safe_tanh(inner));
}

// GELU's derivative, tanh form: 0.5 (1 + t) (1 + x (1 - t) (c + 3ck x^2)) with t = tanh(c (x + k x^3)),
// c = sqrt(2/pi), k = 0.044715 (the GeluGrad node: g times this).
fn gelu_slope(x: f32) -> f32 {
    let t = safe_tanh(x * (0.7978845608028654 + 0.0356774081363001 * x * x));
    return 0.5 * (1.0 + t) * (1.0 + x * (1.0 - t) * (0.7978845608028654 + 0.1070322244089003 * x * x));
}

// sqrt with its domain answered here: WGSL leaves a negative operand and infinity open
// (common.wgsl's safe_inverse_sqrt does the same for inverseSqrt).
fn safe_sqrt(x: f32) -> f32 {
    if (is_nan(x) || x < 0.0) {
        return not_a_number();
    }
    if (is_infinite(x)) {
        return x;
    }
    return sqrt(x);
}

fn is_subnormal(x: f32) -> bool {
    let bits = bitcast<u32>(x) & 0x7fffffffu;
    return bits != 0u && bits < 0x00800000u;
}

// y is an odd integer (y finite; every f32 of magnitude 2^24 or more is even).
fn is_odd_integer(y: f32) -> bool {
    return fract(y) == 0.0 && fract(y * 0.5) != 0.0;
}

// numpy's (C's) power for f32. WGSL's pow is undefined for a negative base and promises nothing
// for NaN, zeros or infinities, so those cases are C's table, in its order: x^0 and 1^y are 1
// (even for a NaN), any other NaN is NaN, then infinite exponents, zero and infinite bases. A
// negative base takes integer exponents only.
fn power(base: f32, exponent: f32) -> f32 {
    // A subnormal reads as a zero of its sign, as on XLA's CPU (drivers' log2 misreads them).
    let x = select(base, bitcast<f32>(bitcast<u32>(base) & 0x80000000u), is_subnormal(base));
    let y = select(exponent, bitcast<f32>(bitcast<u32>(exponent) & 0x80000000u), is_subnormal(exponent));
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (is_nan(x) || is_nan(y)) {
        return not_a_number();
    }
    if (y == 1.0) {
        return x;
    }
    if (y == 2.0) {
        return x * x;
    }
    let odd = is_odd_integer(y);
    if (is_infinite(y)) {
        let a = abs(x);
        if (a == 1.0) {
            return 1.0;
        }
        return select(0.0, infinity(), (a > 1.0) == (y > 0.0));
    }
    if (x == 0.0) {
        // A zero keeps its sign for an odd exponent: (-0)^3 = -0, (-0)^-3 = -inf.
        if (y < 0.0) {
            return select(infinity(), select(infinity(), -infinity(), bitcast<u32>(x) != 0u), odd);
        }
        return select(0.0, x, odd);
    }
    if (is_infinite(x)) {
        let large = select(infinity(), 0.0, y < 0.0);
        return select(large, -large, x < 0.0 && odd);
    }
    let magnitude = exp2(y * log2(abs(x)));
    if (x > 0.0) {
        return magnitude;
    }
    if (fract(y) != 0.0) {
        return not_a_number();
    }
    return select(magnitude, -magnitude, odd);
}

fn load_x(i: u32) -> f32 {
    return {{LOAD_X}};
}

fn load_y(i: u32) -> f32 {
    return {{LOAD_Y}};
}

fn load_z(i: u32) -> f32 {
    return {{LOAD_Z}};
}

fn load_u(i: u32) -> f32 {
    return {{LOAD_U}};
}

fn load_v(i: u32) -> f32 {
    return {{LOAD_V}};
}

fn load_w(i: u32) -> f32 {
    return {{LOAD_W}};
}

fn load_s(i: u32) -> f32 {
    return {{LOAD_S}};
}

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }
    let x = load_x(i);
    let y = load_y(i);
    let z = load_z(i);
    let u = load_u(i);
    let v = load_v(i);
    let w = load_w(i);
    let s = load_s(i);
    {{BODY}}
    out[i] = {{EXPRESSION}};
}
