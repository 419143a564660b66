// topos kernel family "fft": the discrete Fourier transforms of topos.ops.fft (Fft with its
// `inverse`, Rfft, Irfft), float32, one workgroup a transform, batched over the leading axes.
//
// Complex values are real/imaginary pairs in a trailing axis of 2 (docs/linalg.md). A transform
// of n points is loaded into workgroup memory as n vec2<f32> (Rfft's real values with zero
// imaginary parts; Irfft's n // 2 + 1 entries as the whole conjugate-symmetric spectrum, the
// imaginary parts of entry 0 and, for even n, of entry n / 2 dropped, as numpy's irfft), then
// transformed there, then written out: every pair (Fft), pairs 0..n / 2 (Rfft, whose entries 0
// and n / 2 have exact zero imaginary parts, as numpy's), or the real parts (Irfft).
//
// Entry points:
//   fft, rfft, irfft  n a power of two: a Stockham autosort radix-2 transform (decimation in
//                     frequency, as OTFFT writes it): log2(n) passes of n / 2 butterflies, each
//                     pass reading one half of `work` and writing the other, a barrier between
//                     passes. Error O(log2(n) u ||x||) (Higham, Theorem 24.2).
//   dft, rdft, irdft  any other n: the direct O(n^2) sum, one invocation an output, its twiddles
//                     tabled in `work`'s second half. Error O(n u ||x||_1), n <= 1024.
// n is at most LARGEST = 1024 (the launch builder declines longer transforms): `work` is two
// arrays of 1024 vec2<f32>, 16 KiB, WebGPU's default maxComputeWorkgroupStorageSize.
//
// Twiddles exp(-+2 pi i t / n) are computed in the kernel, not with WGSL's cos and sin (which
// WGSL only bounds to an absolute error of 2^-11 on [-pi, pi]) nor from a float32 angle
// 2 pi t / n (whose rounding grows with t): the integer t is reduced exactly to the nearest
// quarter turn q and a remainder d (4 t = q n + d, |d| <= n / 2), the angle pi d / (2 n) is at
// most pi / 4, and its sine and cosine are Taylor polynomials of degree 9 and 10 (truncation
// under 2e-9), rotated by q quarter turns (for n a power of two the divisions are shifts and
// d / n is exact: twiddle_of_power). Every twiddle is then within a few float32 units of
// its exact value whatever n is, with no table to pass in, and exactly 1, -1, i or -i where it
// should be. A product by such a twiddle only moves and negates parts (times), as numpy's
// pocketfft does, so an infinity stays one where a full product would add inf * 0 = NaN.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, row_start).
// The loader declares the parameter block (binding 0) with them, and writes each entry point's
// prologue where a line {{ROW_ENTRY name}} stands (kernels/common.wgsl says what it binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous: [rows, n, 2] (fft), [rows, n / 2 + 1, 2]
//                                  (rfft), [rows, n] (irfft)
//   2  storage read        source  array<f32>, strided: a row's element j (part p) at
//                                  row_start(row) + j * stride + p * part
//
// Parameters (u32 words):
//   0 rows, 1 n (the transform's length), 2 outer rank (at most 6), 3 offset, 4 stride (the
//   transformed axis), 5 part (the pair axis' stride; 0 for rfft), 6 inverse (1: exp(+...)),
//   7 scale (f32 bits: 1 / n for an inverse transform, else 1), 8..13 outer shape,
//   14..19 outer strides
//
// Dispatch: one workgroup of 64 invocations per transform (row), as a grid (gx, gy, 1)
// numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;

{{COMMON}}

const LARGEST: u32 = 1024u;
const HALF_PI: f32 = 1.5707963267948966;

// Two halves of LARGEST values: the Stockham passes ping-pong between them; the direct sum keeps
// the values in the first and the twiddles in the second.
var<workgroup> work: array<vec2<f32>, 2048>;

// exp(-2 pi i t / n), or exp(+2 pi i t / n) when inverse, for 0 <= t < n (the header says how).
fn twiddle(t: u32, n: u32, inverse: bool) -> vec2<f32> {
    let quarter = (4u * t + n / 2u) / n;
    let d = i32(4u * t) - i32(quarter * n);
    return quarter_turns(quarter, HALF_PI * (f32(d) / f32(n)), inverse);
}

// The same for n = 2^bits, with shifts for the divisions (a CPU's vector units have no integer
// division) and an exact d / n.
fn twiddle_of_power(t: u32, bits: u32, inverse: bool) -> vec2<f32> {
    let quarter = (4u * t + ((1u << bits) >> 1u)) >> bits;
    let d = i32(4u * t) - i32(quarter << bits);
    return quarter_turns(quarter, HALF_PI * ldexp(f32(d), -i32(bits)), inverse);
}

// exp(-+i (quarter pi / 2 + a)) for |a| <= pi / 4: Taylor polynomials of a, turned `quarter` times.
fn quarter_turns(quarter: u32, a: f32, inverse: bool) -> vec2<f32> {
    let a2 = a * a;
    let s = a * (1.0 + a2 * (-1.0 / 6.0 + a2 * (1.0 / 120.0 + a2 * (-1.0 / 5040.0 + a2 * (1.0 / 362880.0)))));
    let c = 1.0 + a2 * (-0.5 + a2 * (1.0 / 24.0 + a2 * (-1.0 / 720.0 + a2 * (1.0 / 40320.0 + a2 * (-1.0 / 3628800.0)))));
    var w = vec2<f32>(c, s);
    switch (quarter & 3u) {
        case 1u: {
            w = vec2<f32>(-s, c);
        }
        case 2u: {
            w = vec2<f32>(-c, -s);
        }
        case 3u: {
            w = vec2<f32>(s, -c);
        }
        default: {}
    }
    return select(vec2<f32>(w.x, -w.y), w, inverse);
}

// z * w; a twiddle with a part exactly zero (1, -1, i, -i) only moves and negates z's parts.
fn times(z: vec2<f32>, w: vec2<f32>) -> vec2<f32> {
    if (w.y == 0.0) {
        return z * w.x;
    }
    if (w.x == 0.0) {
        return vec2<f32>(-z.y * w.y, z.x * w.y);
    }
    return vec2<f32>(z.x * w.x - z.y * w.y, z.x * w.y + z.y * w.x);
}

// Entry j of the row's pairs.
fn pair(start: u32, j: u32) -> vec2<f32> {
    let at = start + j * word(4u);
    return vec2<f32>(source[at], source[at + word(5u)]);
}

// Stockham passes over work[0..n) (n a power of two); returns the half that holds the result.
// Pass s (1, 2, 4, ..): butterfly b = (p, q), p = b / s, q = b % s, of a = x[q + s p] and
// c = x[q + s (p + m)], m = n / (2 s), writes y[q + 2 s p] = a + c and
// y[q + s (2 p + 1)] = (a - c) w^(p s), w = exp(-2 pi i / n).
fn stockham(lane: u32, n: u32, inverse: bool) -> u32 {
    let bits = countTrailingZeros(n);
    var source_half = 0u;
    var shift = 0u; // s = 2^shift
    for (var s = 1u; s < n; s = s * 2u) {
        let target_half = LARGEST - source_half;
        let m = n >> (shift + 1u);
        for (var b = lane; b < n / 2u; b += 64u) {
            let q = b & (s - 1u);
            let p = b >> shift;
            let a = work[source_half + q + s * p];
            let c = work[source_half + q + s * (p + m)];
            work[target_half + q + 2u * s * p] = a + c;
            work[target_half + q + s * (2u * p + 1u)] = times(a - c, twiddle_of_power(p * s, bits, inverse));
        }
        shift += 1u;
        workgroupBarrier();
        source_half = target_half;
    }
    return source_half;
}

// The direct sum y[k] = z[0] + sum over j >= 1 of z[j] w^(j k mod n), for k < outputs, into
// work[0..outputs); z[0]'s twiddle is 1 for every k, so it is added as it is.
fn direct(lane: u32, n: u32, inverse: bool, outputs: u32) -> u32 {
    for (var t = lane; t < n; t += 64u) {
        work[LARGEST + t] = twiddle(t, n, inverse);
    }
    workgroupBarrier();
    var sums: array<vec2<f32>, 16>;
    for (var k = lane; k < outputs; k += 64u) {
        var sum = work[0];
        var t = k;
        for (var j = 1u; j < n; j += 1u) {
            sum += times(work[j], work[LARGEST + t]);
            t += k;
            if (t >= n) {
                t -= n;
            }
        }
        sums[k / 64u] = sum;
    }
    workgroupBarrier();
    for (var k = lane; k < outputs; k += 64u) {
        work[k] = sums[k / 64u];
    }
    workgroupBarrier();
    return 0u;
}

fn transform(lane: u32, n: u32, fast: bool, outputs: u32) -> u32 {
    workgroupBarrier();
    let inverse = word(6u) != 0u;
    if (fast) {
        return stockham(lane, n, inverse);
    }
    return direct(lane, n, inverse, outputs);
}

fn complex_transform(row: u32, start: u32, lane: u32, fast: bool) {
    let n = word(1u);
    for (var j = lane; j < n; j += 64u) {
        work[j] = pair(start, j);
    }
    let at = transform(lane, n, fast, n);
    let scale = bitcast<f32>(word(7u));
    for (var k = lane; k < n; k += 64u) {
        let y = work[at + k] * scale;
        out[2u * (row * n + k)] = y.x;
        out[2u * (row * n + k) + 1u] = y.y;
    }
}

fn real_transform(row: u32, start: u32, lane: u32, fast: bool) {
    let n = word(1u);
    let half = n / 2u + 1u;
    for (var j = lane; j < n; j += 64u) {
        work[j] = vec2<f32>(source[start + j * word(4u)], 0.0);
    }
    let at = transform(lane, n, fast, half);
    for (var k = lane; k < half; k += 64u) {
        let y = work[at + k];
        out[2u * (row * half + k)] = y.x;
        out[2u * (row * half + k) + 1u] = select(y.y, 0.0, k == 0u || 2u * k == n);
    }
}

fn inverse_real_transform(row: u32, start: u32, lane: u32, fast: bool) {
    let n = word(1u);
    for (var k = lane; k < n; k += 64u) {
        var z: vec2<f32>;
        if (2u * k <= n) {
            z = pair(start, k);
        } else {
            z = pair(start, n - k);
            z.y = -z.y;
        }
        if (k == 0u || 2u * k == n) {
            z.y = 0.0;
        }
        work[k] = z;
    }
    let at = transform(lane, n, fast, n);
    let scale = bitcast<f32>(word(7u));
    for (var j = lane; j < n; j += 64u) {
        out[row * n + j] = work[at + j].x * scale;
    }
}

{{ROW_ENTRY fft}}
    complex_transform(row, start, lane, true);
}

{{ROW_ENTRY dft}}
    complex_transform(row, start, lane, false);
}

{{ROW_ENTRY rfft}}
    real_transform(row, start, lane, true);
}

{{ROW_ENTRY rdft}}
    real_transform(row, start, lane, false);
}

{{ROW_ENTRY irfft}}
    inverse_real_transform(row, start, lane, true);
}

{{ROW_ENTRY irdft}}
    inverse_real_transform(row, start, lane, false);
}
