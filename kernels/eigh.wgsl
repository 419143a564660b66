// topos kernel family "eigh": the eigendecomposition of small symmetric matrices (Eigh), by
// Jacobi's method: plane rotations, each making one off-diagonal pair zero, until the matrix is
// diagonal to float32's precision. Its diagonal holds the eigenvalues and the product of the
// rotations the eigenvectors, accurate to a small multiple of n u ||A|| (Demmel and Veselic,
// "Jacobi's method is more accurate than QR", 1992).
//
// Entry point:
//   eigh   one workgroup of 64 invocations a matrix, n at most 64. The matrix is read from its
//          lower triangle, mirrored (what numpy's eigh reads: LAPACK's syevd with UPLO = 'L'),
//          scaled by a power of two so that its largest element lies in [1, 2) (exact; its squares
//          cannot overflow), into the scratch buffer `work`, with the identity beside it for V.
//          An odd n is padded to m = n + 1 with a zero row and column, whose rotations are the
//          identity (a zero off-diagonal element), so that the element never mixes with the others.
//          A sweep is m - 1 rounds of the round-robin (chess tournament) ordering: in a round the
//          m / 2 pairs are disjoint, each invocation of the first m / 2 computes one pair's rotation
//          (Golub and Van Loan's sym.schur2, Rutishauser's update of the diagonal), and then all 64
//          apply them at once, one 2 x 2 block of A (J_i^T B J_j, the upper blocks, each written
//          with its mirror so that A stays exactly symmetric) and one of V (V J_j) an iteration.
//          Before each sweep the off-diagonal norm is compared with the matrix's: the sweeps stop
//          when off(A) <= 2^-24 ||A||_F (float32's unit roundoff), or give NaN after `sweeps`
//          (word 7) sweeps without getting there, as XLA's lowering gives NaN where LAPACK reports
//          a failure. Then each of the first n invocations takes one eigenvalue: its rank among
//          the diagonal (the lower index first among equals) is its place in the ascending order,
//          and its vector's sign makes the component of largest magnitude (the first among equals)
//          positive, the op's sign rule. A matrix holding NaN or an infinity anywhere gives NaN
//          throughout, as the forward.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, is_nan,
// is_infinite, fold, workgroup_index, row_start). The loader declares the parameter block
// (binding 0) with them, and writes the entry point's prologue where its ENTRY line stands
// (kernels/common.wgsl says what that form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous [matrices, n + 1, n]: row 0 the eigenvalues
//                                  ascending, rows 1..n the eigenvectors as columns
//   2  storage read        source  array<f32>
//   3  storage read_write  work    array<f32>, [matrices, 2, m, m]: A as it turns diagonal, then V
//
// Parameters (u32 words):
//   0 matrices, 1 n, 2 batch rank (at most 6), 3 offset, 4 row stride, 5 column stride,
//   6 m (n rounded up to even), 7 the sweep cap, 8..13 batch shape, 14..19 batch strides
//
// Dispatch: one workgroup a matrix, as a grid (gx, gy, 1) numbered gx * wy + wx. Its loops stay
// within lavapipe's 32767 iterations for n <= 64 and the cap the launch builder passes
// (topos.compiler.wgsl.eigh counts them).

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;
@group(0) @binding(3) var<storage, read_write> work: array<f32>;

{{COMMON}}

// float32's unit roundoff, 2^-24: the sweeps stop when off(A)^2 <= TOLERANCE^2 ||A||_F^2.
const TOLERANCE: f32 = 5.9604645e-8;
// What the workgroup decides before each sweep (the verdict, read by all as a uniform value).
const RUNNING: u32 = 0u;
const CONVERGED: u32 = 1u;
const FAILED: u32 = 2u;

// One round's rotations, pair k's in slot k (m / 2 <= 32 pairs).
var<workgroup> firsts: array<u32, 32>;
var<workgroup> seconds: array<u32, 32>;
var<workgroup> cosines: array<f32, 32>;
var<workgroup> sines: array<f32, 32>;
var<workgroup> tangents: array<f32, 32>;
var<workgroup> verdict: u32;

// Pair k of round `round` in the round-robin ordering of m (even) indices: index m - 1 stays put,
// the others turn through 0..m-2, so every pair meets once in a sweep of m - 1 rounds.
fn pair_of(round: u32, k: u32, m: u32) -> vec2<u32> {
    let turning = m - 1u;
    if (k == 0u) {
        return vec2<u32>(round, turning);
    }
    return vec2<u32>((round + k) % turning, (round + turning - k) % turning);
}

// (c, s, t) of the rotation J = [[c, s], [-s, c]] (rows and columns p, q) that makes J^T A J's
// (p, q) element zero: t = tan(angle), the smaller root (Golub and Van Loan, sym.schur2).
fn rotation(app: f32, aqq: f32, apq: f32) -> vec3<f32> {
    if (apq == 0.0) {
        return vec3<f32>(1.0, 0.0, 0.0);
    }
    let theta = (aqq - app) / (2.0 * apq);
    var t = 0.5 / theta;  // for a huge theta, whose square would overflow: t ~ 1 / (2 theta)
    if (abs(theta) < 1e18) {
        t = select(-1.0, 1.0, theta >= 0.0) / (abs(theta) + sqrt(1.0 + theta * theta));
    }
    let c = 1.0 / sqrt(1.0 + t * t);
    return vec3<f32>(c, t * c, t);
}

// Block (i, j) of A (rows of pair i, columns of pair j) after the round's rotations: J_i^T B J_j,
// written with its mirror (j, i). A diagonal block takes Rutishauser's exact form: its off-diagonal
// element zero, t a_pq moved between the two diagonal elements.
fn rotate_block(base: u32, m: u32, i: u32, j: u32) {
    let p = firsts[i];
    let q = seconds[i];
    if (i == j) {
        let t = tangents[i];
        let apq = work[base + p * m + q];
        work[base + p * m + p] = work[base + p * m + p] - t * apq;
        work[base + q * m + q] = work[base + q * m + q] + t * apq;
        work[base + p * m + q] = 0.0;
        work[base + q * m + p] = 0.0;
        return;
    }
    let r = firsts[j];
    let s = seconds[j];
    let ci = cosines[i];
    let si = sines[i];
    let cj = cosines[j];
    let sj = sines[j];
    let b00 = work[base + p * m + r];
    let b01 = work[base + p * m + s];
    let b10 = work[base + q * m + r];
    let b11 = work[base + q * m + s];
    // B J_j: column r becomes c col_r - s col_s, column s becomes s col_r + c col_s.
    let x00 = cj * b00 - sj * b01;
    let x01 = sj * b00 + cj * b01;
    let x10 = cj * b10 - sj * b11;
    let x11 = sj * b10 + cj * b11;
    // J_i^T (B J_j): the same on rows p and q.
    let y00 = ci * x00 - si * x10;
    let y01 = ci * x01 - si * x11;
    let y10 = si * x00 + ci * x10;
    let y11 = si * x01 + ci * x11;
    work[base + p * m + r] = y00;
    work[base + p * m + s] = y01;
    work[base + q * m + r] = y10;
    work[base + q * m + s] = y11;
    work[base + r * m + p] = y00;
    work[base + s * m + p] = y01;
    work[base + r * m + q] = y10;
    work[base + s * m + q] = y11;
}

// Rows p_i and q_i of V after pair j's rotation of columns r and s (V J_j). Written out for the two
// rows rather than looped: lavapipe counts an inner loop's iterations over all the outer loops'.
fn rotate_vectors(base: u32, m: u32, i: u32, j: u32) {
    rotate_row(base + firsts[i] * m, firsts[j], seconds[j], cosines[j], sines[j]);
    rotate_row(base + seconds[i] * m, firsts[j], seconds[j], cosines[j], sines[j]);
}

fn rotate_row(row: u32, r: u32, s: u32, c: f32, sine: f32) {
    let x = work[row + r];
    let y = work[row + s];
    work[row + r] = c * x - sine * y;
    work[row + s] = sine * x + c * y;
}

{{ENTRY eigh}}
    let matrix = workgroup_index(group, groups);
    if (matrix >= word(0u)) {
        return;
    }
    let n = word(1u);
    let m = word(6u);
    let row_stride = word(4u);
    let column_stride = word(5u);
    let start = row_start(matrix);
    let a_base = matrix * 2u * m * m;
    let v_base = a_base + m * m;

    // The largest magnitude of the lower triangle, and whether any element is NaN or infinite.
    var largest = 0.0;
    var broken = 0.0;
    for (var e = lane; e < n * n; e += 64u) {
        let i = e / n;
        let j = e % n;
        let x = source[start + i * row_stride + j * column_stride];
        if (is_nan(x) || is_infinite(x)) {
            broken = 1.0;
        } else if (j <= i) {
            largest = max(largest, abs(x));
        }
    }
    broken = fold(lane, broken, true);
    largest = fold(lane, largest, true);
    // A power of two taking the largest element into [1, 2): exact, and no square overflows.
    let biased = (bitcast<u32>(largest) >> 23u) & 0xffu;
    var shift = 0i;
    if (biased > 0u && biased < 255u) {
        shift = 127i - i32(biased);
    }
    var squares = 0.0;
    for (var e = lane; e < m * m; e += 64u) {
        let i = e / m;
        let j = e % m;
        var x = 0.0;
        if (i < n && j < n && broken == 0.0) {
            x = ldexp(source[start + max(i, j) * row_stride + min(i, j) * column_stride], shift);
        }
        work[a_base + e] = x;
        work[v_base + e] = select(0.0, 1.0, i == j);
        squares += x * x;
    }
    let threshold = TOLERANCE * TOLERANCE * fold(lane, squares, false);
    if (lane == 0u) {
        verdict = select(RUNNING, FAILED, broken != 0.0);
    }
    var state = workgroupUniformLoad(&verdict);

    let pairs = m / 2u;
    for (var sweep = 0u; state == RUNNING; sweep += 1u) {
        storageBarrier();
        var off = 0.0;
        for (var e = lane; e < m * m; e += 64u) {
            if (e / m != e % m) {
                let x = work[a_base + e];
                off += x * x;
            }
        }
        off = fold(lane, off, false);
        if (lane == 0u) {
            if (off <= threshold) {
                verdict = CONVERGED;
            } else if (sweep == word(7u)) {
                verdict = FAILED;
            }
        }
        state = workgroupUniformLoad(&verdict);
        if (state != RUNNING) {
            break;
        }
        for (var round = 0u; round < m - 1u; round += 1u) {
            if (lane < pairs) {
                let pq = pair_of(round, lane, m);
                let p = pq.x;
                let q = pq.y;
                let turn = rotation(work[a_base + p * m + p], work[a_base + q * m + q], work[a_base + p * m + q]);
                firsts[lane] = p;
                seconds[lane] = q;
                cosines[lane] = turn.x;
                sines[lane] = turn.y;
                tangents[lane] = turn.z;
            }
            workgroupBarrier();
            // Every block of V, and the blocks of A on and above the diagonal: each element is
            // read and written by one invocation, from the values before the round.
            for (var e = lane; e < pairs * pairs; e += 64u) {
                let i = e / pairs;
                let j = e % pairs;
                if (i <= j) {
                    rotate_block(a_base, m, i, j);
                }
                rotate_vectors(v_base, m, i, j);
            }
            storageBarrier();
            workgroupBarrier();
        }
    }
    storageBarrier();

    let out_base = matrix * (n + 1u) * n;
    if (state != CONVERGED) {
        for (var e = lane; e < (n + 1u) * n; e += 64u) {
            out[out_base + e] = not_a_number();
        }
        return;
    }
    if (lane < n) {
        let value = work[a_base + lane * m + lane];
        var rank = 0u;
        for (var j = 0u; j < n; j += 1u) {
            let other = work[a_base + j * m + j];
            if (other < value || (other == value && j < lane)) {
                rank += 1u;
            }
        }
        var largest_row = 0u;
        var size = -1.0;
        for (var r = 0u; r < n; r += 1u) {
            let x = abs(work[v_base + r * m + lane]);
            if (x > size) {
                size = x;
                largest_row = r;
            }
        }
        let sign = select(1.0, -1.0, work[v_base + largest_row * m + lane] < 0.0);
        out[out_base + rank] = ldexp(value, -shift);
        for (var r = 0u; r < n; r += 1u) {
            out[out_base + (r + 1u) * n + rank] = sign * work[v_base + r * m + lane];
        }
    }
}
