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
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
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

// atan(t) for t >= 0 (inf included), Cephes' atanf: reduced to [0, tan(pi/8)] by
// atan(t) = pi/4 + atan((t - 1) / (t + 1)) or pi/2 - atan(1 / t), then an odd polynomial; a
// few ulps, where WGSL's atan may be off by thousands.
fn arc_tangent(t: f32) -> f32 {
    var base = 0.0;
    var r = t;
    if (t > 2.4142137) {
        base = 1.5707964;
        r = -1.0 / t;
    } else if (t > 0.41421357) {
        base = 0.7853982;
        r = (t - 1.0) / (t + 1.0);
    }
    let z = r * r;
    return base + (((0.0805374449538 * z - 0.138776856032) * z + 0.199777106478) * z - 0.333329491539) * z * r + r;
}

// numpy's (C's) arctan2 for f32, the angle of the point (x, y) (y first, as C): a NaN gives
// NaN; a zero or an infinite operand gives a multiple of pi/4, C's table; the angle keeps y's
// sign (the sign of a zero too). A subnormal reads as a zero of its sign, as on XLA's CPU.
fn arc_tangent2(y_in: f32, x_in: f32) -> f32 {
    let y = select(y_in, bitcast<f32>(bitcast<u32>(y_in) & 0x80000000u), is_subnormal(y_in));
    let x = select(x_in, bitcast<f32>(bitcast<u32>(x_in) & 0x80000000u), is_subnormal(x_in));
    if (is_nan(x) || is_nan(y)) {
        return not_a_number();
    }
    let left = (bitcast<u32>(x) & 0x80000000u) != 0u;
    var angle = 0.0;
    if (is_infinite(y)) {
        angle = select(1.5707964, select(0.7853982, 2.3561945, left), is_infinite(x));
    } else if (y == 0.0 || is_infinite(x)) {
        angle = select(0.0, 3.1415927, left);
    } else {
        // |y| / |x| may round to 0 or inf; atan reads both.
        let a = arc_tangent(abs(y) / abs(x));
        angle = select(a, 3.1415927 - a, left);
    }
    return select(angle, -angle, (bitcast<u32>(y) & 0x80000000u) != 0u);
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

// cos and sin of any f32 to about 1e-7: WGSL promises its cos and sin to an absolute 2^-11 on
// [-pi, pi] only, and lavapipe's lose every digit past |x| = 1e8. Past pi/4 the argument is reduced
// exactly (Payne and Hanek): |x| 2/pi modulo 4, from the 96 bits of 2/pi that x's exponent picks,
// multiplied in 16-bit limbs (WGSL has no 64-bit product), leaves a quadrant q and an angle y in
// [-pi/4, pi/4], whose cos and sin two polynomials give (sin_quarter, cos_quarter); cos(x) and sin(x) are then
// +-cos(y) or +-sin(y) by q. The words: 2/pi in binary after a zero word (fdlibm's table).
var<private> two_over_pi: array<u32, 9> = array<u32, 9>(
    0u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u,
);

struct Reduced {
    quadrant: u32,
    angle: f32,
}

fn reduce_quarter_turns(magnitude: f32) -> Reduced {
    let bits = bitcast<u32>(magnitude);
    let mantissa = (bits & 0x7fffffu) | 0x800000u;
    // magnitude = mantissa 2^(e - 23); the bits of 2/pi from 2^-(e - 24) on give its product modulo 4.
    let first = u32(i32((bits >> 23u) & 0xffu) - 127 + 7);
    let word = first / 32u;
    let shift = first % 32u;
    var window: array<u32, 3>;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let low = select(two_over_pi[word + k + 1u] >> (32u - shift), 0u, shift == 0u);
        window[k] = (two_over_pi[word + k] << shift) | low;
    }
    var limbs = array<u32, 6>(
        window[2] & 0xffffu, window[2] >> 16u, window[1] & 0xffffu, window[1] >> 16u, window[0] & 0xffffu, window[0] >> 16u,
    );
    let low_mantissa = mantissa & 0xffffu;
    let high_mantissa = mantissa >> 16u;
    var product: array<u32, 6>;
    var carry = 0u;
    for (var i = 0u; i < 6u; i = i + 1u) {
        let a = low_mantissa * limbs[i];
        var b = 0u;
        if (i > 0u) {
            b = high_mantissa * limbs[i - 1u];
        }
        let sum = carry + (a & 0xffffu) + (b & 0xffffu);
        product[i] = sum & 0xffffu;
        carry = (sum >> 16u) + (a >> 16u) + (b >> 16u);
    }
    // The low 96 bits of the product are (magnitude 2/pi mod 4) 2^94: the quadrant, then the fraction
    // f. Past a half, the angle is f - 1 of the next quadrant, formed as -(2^94 - f) in the limbs:
    // a subtraction in f32 would cancel the digits of an angle near a multiple of pi/2.
    var quadrant = product[5] >> 14u;
    product[5] = product[5] & 0x3fffu;
    let past_half = (product[5] & 0x2000u) != 0u;
    if (past_half) {
        var plus_one = 1u;
        for (var i = 0u; i < 6u; i = i + 1u) {
            let negated = (~product[i] & 0xffffu) + plus_one;
            product[i] = negated & 0xffffu;
            plus_one = negated >> 16u;
        }
        product[5] = product[5] & 0x3fffu;
        quadrant = quadrant + 1u;
    }
    let top = (product[5] << 16u) | product[4];
    var fraction = f32(top) * 9.313225746154785e-10 + f32(product[3]) * 1.4210854715202004e-14;
    fraction = select(fraction, -fraction, past_half);
    return Reduced(quadrant & 3u, fraction * 1.5707964);
}

// sin and cos on [-pi/4, pi/4] as polynomials (Cephes' sinf and cosf: within 1e-7 relative), not
// the built-ins: WGSL lets sin and cos be off by 2^-11 absolute, and SwiftShader's are (2e-4 seen).
fn sin_quarter(x: f32) -> f32 {
    let z = x * x;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * x + x;
}

fn cos_quarter(x: f32) -> f32 {
    let z = x * x;
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
}

fn precise_cos(x: f32) -> f32 {
    if (is_nan(x) || is_infinite(x)) {
        return not_a_number();
    }
    if (abs(x) < 0.7853982) {
        return cos_quarter(x);
    }
    let r = reduce_quarter_turns(abs(x));
    let c = cos_quarter(r.angle);
    let s = sin_quarter(r.angle);
    return select(select(select(s, -c, r.quadrant == 2u), -s, r.quadrant == 1u), c, r.quadrant == 0u);
}

fn precise_sin(x: f32) -> f32 {
    if (is_nan(x) || is_infinite(x)) {
        return not_a_number();
    }
    if (abs(x) < 0.7853982) {
        return sin_quarter(x);
    }
    let r = reduce_quarter_turns(abs(x));
    let c = cos_quarter(r.angle);
    let s = sin_quarter(r.angle);
    let value = select(select(select(-c, -s, r.quadrant == 2u), c, r.quadrant == 1u), s, r.quadrant == 0u);
    return select(value, -value, x < 0.0);
}

// Elementwise rows that need their own accuracy (topos.ops.elementwise_more) -----------------

// e^x as m 2^k with m = e^r, r = x - k ln 2 in [-ln2/2, ln2/2] (Cody and Waite: ln 2 in a high
// part, exact times any k here, and a low part, as precise_log splits it). WGSL promises its exp
// to 3 + 2|x| ulp only, and lavapipe's exp2(x log2(e)) loses |x| ulps; on r both are within a few.
// For a finite x below 105 in magnitude.
struct Scaled {
    mantissa: f32,
    exponent: i32,
}

fn exp_scaled(x: f32) -> Scaled {
    let k = round(x * 1.442695);
    let r = (x - k * 0.693145751953125) - k * 1.4286068203e-6;
    return Scaled(exp(r), i32(k));
}

// m 2^(k + shift), in two ldexp steps so that neither exponent passes WGSL's limit of 127.
fn scaled_value(s: Scaled, shift: i32) -> f32 {
    let e = s.exponent + shift;
    return ldexp(ldexp(s.mantissa, e / 2), e - e / 2);
}

// log(1 + x) to a few ulps. Near 0 (1 + x in [sqrt(1/2), sqrt(2)), precise_log's range)
// log(1 + x) = 2 atanh(s) with s = x / (2 + x), formed from x itself, and precise_log's series
// in s; elsewhere precise_log(1 + x), whose rounding of 1 + x costs under 2 ulps there. Not
// Goldberg's log(u) x / (u - 1): compilers fold (1 + x) - 1 into x (lavapipe's does, 60 ulps).
fn precise_log1p(x: f32) -> f32 {
    if (is_nan(x) || x < -1.0) {
        return not_a_number();
    }
    if (x < -0.29289323 || x > 0.41421357) {
        return precise_log(1.0 + x);
    }
    let s = x / (2.0 + x);
    let s2 = s * s;
    return 2.0 * s + s * s2 * (0.6666666667 + s2 * (0.4 + s2 * (0.2857142857 + s2 * 0.2222222222)));
}

// e^x - 1 to a few ulps: below |x| = 1/2 its Taylor series to x^8 (the rest is under 1.1e-8 of
// the result), above e^x from exp_scaled, less 1 (which cancels at most 2.6 times its error);
// -1 below -18 (e^x under half an ulp of 1) and inf from where e^x - 1 passes the largest f32.
fn precise_expm1(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (x >= 88.72284) {
        return infinity();
    }
    if (x < -18.0) {
        return -1.0;
    }
    if (abs(x) < 0.5) {
        let p = 1.3888889e-3 + x * (1.9841270e-4 + x * 2.4801587e-5);
        let q = 0.16666667 + x * (4.1666668e-2 + x * (8.3333333e-3 + x * p));
        return x * (1.0 + x * (0.5 + x * q));
    }
    return scaled_value(exp_scaled(x), 0) - 1.0;
}

// sinh to a few ulps: below |x| = 1, (t + t / (t + 1)) / 2 with t = expm1(|x|) (e^x - e^-x would
// cancel a small result's digits); above, e^|x| / 2 - e^-|x| / 2 with e^|x| / 2 from exp_scaled,
// finite up to where sinh itself passes the largest f32 (e^|x| alone overflows sooner).
fn precise_sinh(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    let a = abs(x);
    var magnitude = infinity();
    if (a < 1.0) {
        let t = precise_expm1(a);
        magnitude = 0.5 * (t + t / (t + 1.0));
    } else if (a < 89.41599) {
        let half = scaled_value(exp_scaled(a), -1);
        magnitude = half - 0.25 / half;
    }
    return select(magnitude, -magnitude, x < 0.0);
}

// cosh: e^|x| / 2 + e^-|x| / 2, two positive terms (nothing cancels), the first from exp_scaled.
fn precise_cosh(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    let a = abs(x);
    if (a >= 89.41599) {
        return infinity();
    }
    let half = scaled_value(exp_scaled(a), -1);
    return half + 0.25 / half;
}

// tan: the argument reduced exactly as for precise_sin and precise_cos (reduce_quarter_turns),
// then sin / cos of the angle in an even quadrant and -cos / sin in an odd one, each polynomial
// within 1e-7, so the quotient is within a few ulps even next to a pole.
fn precise_tan(x: f32) -> f32 {
    if (is_nan(x) || is_infinite(x)) {
        return not_a_number();
    }
    if (abs(x) < 0.7853982) {
        return sin_quarter(x) / cos_quarter(x);
    }
    let r = reduce_quarter_turns(abs(x));
    let c = cos_quarter(r.angle);
    let s = sin_quarter(r.angle);
    let t = select(-c / s, s / c, (r.quadrant & 1u) == 0u);
    return select(t, -t, x < 0.0);
}

// asinh(|x|) as log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), log(|x| + sqrt(1 + x^2)) without its
// cancellation near 0; past 2^12, where 1 + x^2 rounds to x^2, log(|x|) + log 2; then x's sign
// (a zero keeps its own).
fn precise_asinh(x: f32) -> f32 {
    if (is_nan(x) || x == 0.0) {
        return x;
    }
    let a = abs(x);
    var magnitude = precise_log(a) + 0.6931472;
    if (a <= 4096.0) {
        let square = a * a;
        magnitude = precise_log1p(a + square / (1.0 + sqrt(1.0 + square)));
    }
    return select(magnitude, -magnitude, x < 0.0);
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

{{ELEMENT_ENTRY main}}
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

// Special functions (topos.ops.special): the forms of topos.ops.special_forms in f32 -----------

// log(1 + z) for z >= -1, Goldberg's log(u) z / (u - 1) with u = 1 + z, which cancels u's
// rounding (precise_log's few ulps carry over); z itself where u rounds to 1; -inf at z = -1.
fn special_log1p(z: f32) -> f32 {
    let u = 1.0 + z;
    if (u == 1.0) {
        return z;
    }
    return precise_log(u) * (z / (u - 1.0));
}

// erfinv, Giles' single-precision pieces in w = -log(1 - x^2) (ErfInv's float32 forward, XLA's
// erf_inv): +-1 gives +-inf, |x| > 1 and NaN give NaN.
fn erf_inverse(x: f32) -> f32 {
    if (is_nan(x) || abs(x) > 1.0) {
        return not_a_number();
    }
    if (abs(x) == 1.0) {
        return x * infinity();
    }
    var w = -special_log1p(-(x * x));
    var p: f32;
    if (w < 5.0) {
        w = w - 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p * x;
}

// The remainder (topos.ops.remainder) ------------------------------------------------------

// C's fmod for f32, exact as numpy's and XLA's: x - y trunc(x / y) with x's sign. WGSL's % is that
// formula rounded, wrong by whole multiples of y once |x / y| passes 2^24. Here |x| is reduced by
// s = |y| 2^k, the largest such that fits (|y|'s mantissa under |x|'s exponent, or one below):
// s <= r < 2 s, so r - s is exact (Sterbenz) and below r / 2, at most 254 steps. NaN, an infinite
// x or a zero y give NaN, an infinite y gives x; a subnormal y reads as a zero, as on XLA's CPU.
fn exact_fmod(x: f32, y_in: f32) -> f32 {
    let y = select(y_in, 0.0, is_subnormal(y_in));
    if (is_nan(x) || is_nan(y) || is_infinite(x) || y == 0.0) {
        return not_a_number();
    }
    let d = abs(y);
    var r = abs(x);
    let mantissa = bitcast<u32>(d) & 0x007fffffu;
    loop {
        if (!(r < d) && !is_infinite(d)) {
            let exponent = (bitcast<u32>(r) >> 23u) & 0xffu;
            var s = bitcast<f32>(mantissa | (exponent << 23u));
            if (s > r) {
                s = bitcast<f32>(mantissa | ((exponent - 1u) << 23u));
            }
            r = r - s;
        } else {
            break;
        }
    }
    return select(r, -r, (bitcast<u32>(x) & 0x80000000u) != 0u);
}

// e^x for x <= 0 (erfc's e^(-x^2)) to a few ulps: Cody and Waite's x = k ln 2 + r, |r| <= ln 2 / 2,
// where WGSL's exp keeps its promise of a few ulps (it allows 3 + 2|x| on the whole argument).
fn special_exp(x: f32) -> f32 {
    if (x < -104.0) {
        return 0.0;
    }
    let k = round(x * 1.442695);
    let r = (x - k * 0.693145751953125) - k * 1.4286068203e-6;
    return ldexp(exp(r), i32(k));
}

// erf(x) for |x| < 1: x P(x^2) (Cephes' erff).
fn erf_near_zero(x: f32) -> f32 {
    let s = x * x;
    var p = 7.85386146e-05;
    p = -0.000801019371 + p * s;
    p = 0.00518832775 + p * s;
    p = -0.0268538129 + p * s;
    p = 0.112835854 + p * s;
    p = -0.37612626 + p * s;
    p = 1.12837911 + p * s;
    return x * p;
}

// erfc(|x|) for |x| >= 1: e^(-x^2) / |x| R(1/x^2), R in two pieces (Cephes' erfcf); 0 past the underflow.
fn erfc_tail(x: f32) -> f32 {
    let a = abs(x);
    let exponent = -(x * x);
    if (is_infinite(x) || exponent < -88.7228394) {
        return 0.0;
    }
    let q = 1.0 / (x * x);
    var p: f32;
    if (a < 2.0) {
        p = 0.0232682;
        p = -0.138703942 + p * q;
        p = 0.368742466 + p * q;
        p = -0.582473278 + p * q;
        p = 0.621000469 + p * q;
        p = -0.494451523 + p * q;
        p = 0.340488 + p * q;
        p = -0.274112701 + p * q;
        p = 0.563825965 + p * q;
    } else {
        p = -10.477664;
        p = 12.9772 + p * q;
        p = -7.49551868 + p * q;
        p = 2.92101908 + p * q;
        p = -1.01526523 + p * q;
        p = 0.42184633 + p * q;
        p = -0.282076746 + p * q;
        p = 0.564189494 + p * q;
    }
    return special_exp(exponent) * (1.0 / a) * p;
}

fn error_function(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (abs(x) < 1.0) {
        return erf_near_zero(x);
    }
    let far = 1.0 - erfc_tail(x);
    return select(far, -far, x < 0.0);
}

fn error_function_complement(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (abs(x) < 1.0) {
        return 1.0 - erf_near_zero(x);
    }
    let tail = erfc_tail(x);
    return select(tail, 2.0 - tail, x < 0.0);
}

// log(g + 1/2 + z) = log(7.5) + log1p(z / 7.5), the Lanczos forms' log t.
fn lanczos_log_t(z: f32) -> f32 {
    return special_log1p(z * 0.13333333333333333) + 2.0149030205422647;
}

// lgamma(w) for w in [1/2, 5/2): e H(e) = lgamma(2 + e) about 2, less log1p(e) about 1 (special_forms).
fn log_gamma_near_two(w: f32) -> f32 {
    let near_one = w < 1.5;
    let e = select(w - 2.0, w - 1.0, near_one);
    var p = 1.3304764374244491e-10;
    p = -2.7595228851242334e-10 + p * e;
    p = 5.731367241678862e-10 + p * e;
    p = -1.1921401405860912e-09 + p * e;
    p = 2.4836745438024785e-09 + p * e;
    p = -5.183475041970047e-09 + p * e;
    p = 1.0838659214896955e-08 + p * e;
    p = -2.2711094608943164e-08 + p * e;
    p = 4.769810169363981e-08 + p * e;
    p = -1.00432248239681e-07 + p * e;
    p = 2.1207184805554667e-07 + p * e;
    p = -4.492469198764566e-07 + p * e;
    p = 9.55141213040742e-07 + p * e;
    p = -2.039215753801366e-06 + p * e;
    p = 4.374866789907487e-06 + p * e;
    p = -9.439488275268395e-06 + p * e;
    p = 2.0507212775670694e-05 + p * e;
    p = -4.492623673813314e-05 + p * e;
    p = 9.945751278180853e-05 + p * e;
    p = -0.00022315475845357936 + p * e;
    p = 0.0005096695247430425 + p * e;
    p = -0.001192753911703261 + p * e;
    p = 0.0028905103307415234 + p * e;
    p = -0.007385551028673986 + p * e;
    p = 0.020580808427784546 + p * e;
    p = -0.0673523010531981 + p * e;
    p = 0.3224670334241132 + p * e;
    p = 0.42278433509846713 + p * e;
    let near = e * p;
    return select(near, near - special_log1p(e), near_one);
}

// psi(x) for x in [1/2, 5/2): the series about 2, less 1/x below 3/2; within 1/10 of the root
// x0 = 1.4616..., its Taylor series in d = (x - x0's f32) - the rest of x0.
fn digamma_near_two(x: f32) -> f32 {
    if (abs(x - 1.4616321449683622) < 0.1) {
        let d = (x - 1.4616321325302124) - 1.2438149938918909e-08;
        var q = -0.003369801655439328;
        q = 0.004926781395729853 + q * d;
        q = -0.007204534386356869 + q * d;
        q = 0.010538791616612175 + q * d;
        q = -0.01542476590494896 + q * d;
        q = 0.022597648232218104 + q * d;
        q = -0.03316112647484736 + q * d;
        q = 0.04880428816414311 + q * d;
        q = -0.07219956125645471 + q * d;
        q = 0.10782405069126237 + q * d;
        q = -0.16394270544240652 + q * d;
        q = 0.258499760955651 + q * d;
        q = -0.4427631689835921 + q * d;
        q = 0.9676722454476212 + q * d;
        return d * q;
    }
    let near_one = x < 1.5;
    let e = select(x - 2.0, x - 1.0, near_one);
    var p = 3.725334024788457e-09;
    p = -7.45071178983543e-09 + p * e;
    p = 1.4901554828365043e-08 + p * e;
    p = -2.980350351465228e-08 + p * e;
    p = 5.960818905125948e-08 + p * e;
    p = -1.1921992596531106e-07 + p * e;
    p = 2.38450502727733e-07 + p * e;
    p = -4.769329867878064e-07 + p * e;
    p = 9.539620338727962e-07 + p * e;
    p = -1.908212716553939e-06 + p * e;
    p = 3.81729326499984e-06 + p * e;
    p = -7.637197637899763e-06 + p * e;
    p = 1.528225940865187e-05 + p * e;
    p = -3.058823630702049e-05 + p * e;
    p = 6.124813505870483e-05 + p * e;
    p = -0.00012271334757848915 + p * e;
    p = 0.0002460865533080483 + p * e;
    p = -0.0004941886041194645 + p * e;
    p = 0.0009945751278180853 + p * e;
    p = -0.0020083928260822143 + p * e;
    p = 0.00407735619794434 + p * e;
    p = -0.008349277381922827 + p * e;
    p = 0.01734306198444914 + p * e;
    p = -0.03692775514336993 + p * e;
    p = 0.08232323371113819 + p * e;
    p = -0.2020569031595943 + p * e;
    p = 0.6449340668482264 + p * e;
    p = 0.42278433509846713 + p * e;
    return select(p, p - 1.0 / x, near_one);
}

// log|Gamma(x)|: the series about 2 on [1/2, 17/2) (brought down by lgamma's recurrence), Lanczos
// (g = 7, 9 terms) above, reflected below 1/2:
// log(pi) - log|sin(pi x)| - lgamma(1 - x); +inf at the poles and both infinities.
fn log_gamma(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (is_infinite(x)) {
        return infinity();
    }
    if (abs(x) < 1.1920929e-07) {
        return -precise_log(abs(x));
    }
    let reflect = x < 0.5;
    let w = select(x, 1.0 - x, reflect);
    var log_y: f32;
    if (w < 8.5) {
        // lgamma(w) = lgamma(w - k) + log((w - 1) ... (w - k)), w - k in [1.5, 2.5), each w - j exact.
        var base = w;
        var product = 1.0;
        for (var j = 0; j < 6; j++) {
            if (base >= 2.5) {
                base = base - 1.0;
                product = product * base;
            }
        }
        log_y = log_gamma_near_two(base) + precise_log(product);
    } else {
        let z = w - 1.0;
        var c = array<f32, 8>(676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
                              12.507343278686905, -0.13857109526572012, 9.9843695780195716e-06, 1.5056327351493116e-07);
        var series = 0.99999999999980993;
        for (var i = 0; i < 8; i++) {
            series = series + c[i] / (z + f32(i + 1));
        }
        let t = z + 7.5;
        let log_t = lanczos_log_t(z);
        log_y = (z + 0.5 - t / log_t) * log_t + 0.91893853320467267 + precise_log(series);
    }
    if (!reflect) {
        return log_y;
    }
    let a = abs(x);
    var fraction = a - floor(a);
    if (fraction > 0.5) {
        fraction = 1.0 - fraction;
    }
    if (fraction == 0.0) {
        return infinity();
    }
    let log_sine = precise_log(precise_sin(fraction * 3.14159265358979));
    return 1.1447298858494002 - log_sine - log_y;
}

// psi(x): the series about 2 on [1/2, 5/2), the Lanczos form's derivative above, reflected below by psi(1 - x) - pi / tan(pi x);
// NaN at the negative integers and -inf, -inf at +0 and +inf at -0 (scipy's psi).
fn digamma(x: f32) -> f32 {
    if (is_nan(x)) {
        return x;
    }
    if (x == 0.0) {
        return select(-infinity(), infinity(), (bitcast<u32>(x) & 0x80000000u) != 0u);
    }
    if (is_infinite(x)) {
        return select(not_a_number(), x, x > 0.0);
    }
    if (x < 0.0 && x == floor(x)) {
        return not_a_number();
    }
    if (x >= 0.5 && x < 2.5) {
        return digamma_near_two(x);
    }
    let reflect = x < 0.5;
    let z = select(x - 1.0, -x, reflect);
    var c = array<f32, 8>(676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
                          12.507343278686905, -0.13857109526572012, 9.9843695780195716e-06, 1.5056327351493116e-07);
    var numerator = 0.0;
    var denominator = 0.99999999999980993;
    for (var i = 0; i < 8; i++) {
        let shifted = z + f32(i + 1);
        numerator = numerator - c[i] / (shifted * shifted);
        denominator = denominator + c[i] / shifted;
    }
    let t = z + 7.5;
    let y = lanczos_log_t(z) + numerator / denominator - 7.0 / t;
    if (!reflect) {
        return y;
    }
    let angle = (x + abs(floor(x + 0.5))) * 3.14159265358979;
    return y - precise_cos(angle) * 3.14159265358979 / precise_sin(angle);
}

// psi^(n)(x) for 1 <= n <= 8 (Polygamma's forms, special_forms.polygamma): at w = x >= 0,
// (-1)^(n+1) n! (sum_{k < N} (w + k)^-(n+1) + the asymptotic series at w + N), N = 12 + 3n, whose
// coefficients are B_2j (2j + n - 1)! / ((2j)! n!); below 0 the reflection
// (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)), P_0(c) = c, P_(k+1)(c) = -(1 + c^2) P_k'(c).
// The poles and -inf give (-1)^(n+1) inf, +inf gives 0 (scipy's polygamma).
fn polygamma_of_order(n: i32, x: f32) -> f32 {
    let sign = select(-1.0, 1.0, (n & 1) == 1);
    if (is_nan(x)) {
        return x;
    }
    if (is_infinite(x)) {
        return select(sign * infinity(), 0.0, x > 0.0);
    }
    let reflect = x < 0.0;
    let w = select(select(x, 0.0, x == 0.0), 1.0 - x, reflect);  // -0 read as +0, as scipy and torch
    var factorial = 1.0;
    for (var i = 2; i <= n; i++) {
        factorial = factorial * f32(i);
    }
    var bernoulli = array<f32, 7>(0.16666666666666666, -0.03333333333333333, 0.023809523809523808,
                                  -0.03333333333333333, 0.07575757575757576, -0.2531135531135531, 1.1666666666666667);
    let shift = 12 + 3 * n;
    let inverse = 1.0 / (w + f32(shift));
    let inverse_square = inverse * inverse;
    var series = 0.0;
    for (var j = 7; j >= 1; j--) {
        var a = bernoulli[j - 1] / factorial;
        for (var i = 1; i < n; i++) {
            a = a * f32(2 * j + i);
        }
        series = a + series * inverse_square;
    }
    var power_n = inverse;
    for (var i = 1; i < n; i++) {
        power_n = power_n * inverse;
    }
    var total = (power_n / f32(n) + 0.5 * power_n * inverse) + power_n * inverse_square * series;
    for (var k = shift - 1; k >= 0; k--) {
        let r = 1.0 / (w + f32(k));
        var term = r;
        for (var i = 0; i < n; i++) {
            term = term * r;
        }
        total = total + term;
    }
    total = total * sign * factorial;
    if (!reflect) {
        return total;
    }
    let angle = (x - floor(x + 0.5)) * 3.14159265358979;
    if (angle == 0.0) {
        return sign * infinity();
    }
    let c = precise_cos(angle) / precise_sin(angle);
    // P_n's coefficients, lowest power first, by n steps of P <- -(1 + c^2) P'.
    var p = array<f32, 10>(0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (var step = 0; step < n; step++) {
        var next = array<f32, 10>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for (var i = 1; i <= step + 1; i++) {
            let derivative = f32(i) * p[i];
            next[i - 1] = next[i - 1] - derivative;
            next[i + 1] = next[i + 1] - derivative;
        }
        p = next;
    }
    var value = 0.0;
    for (var i = n + 1; i >= 0; i--) {
        value = p[i] + value * c;
    }
    var pi_power = 3.14159265358979;
    for (var i = 0; i < n; i++) {
        pi_power = pi_power * 3.14159265358979;
    }
    return -sign * total - pi_power * value;
}
