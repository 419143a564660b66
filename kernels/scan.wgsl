// topos kernel family "scan": what runs along one axis of rows, for a classifier's scores:
// the index of the extreme (ArgMax, ArgMin), the running sum (CumSum), the other running folds
// (CumProd, CumMax, CumMin, LogCumSumExp) and the indices of the k largest (TopK).
//
// The rows are the operand with the scanned axis moved last (the selector re-views it; nothing
// moves): row r's element j lives at offset + outer(r) + j * stride, where outer() decodes r
// through the outer shape and outer strides (row_start in common.wgsl).
//
// Entry points:
//   argmax, argmin  picks[r] = the index of the row's largest (smallest) element: the lower index
//                   on ties, and a NaN counts as the extreme (the first NaN wins), as numpy's
//                   argmax and argmin. One workgroup of 64 invocations a row: each lane keeps the
//                   best of every 64th element, then the lanes fold their (value, index) pairs.
//   argmax_serial, argmin_serial  the same, one invocation a row walking it alone: for short rows
//                   (a classifier's classes), where a workgroup a row would leave most lanes idle.
//   cumsum          out[r * length + j] = the sum of the row's elements 0..j (with `reverse`,
//                   j..length-1). One workgroup a row walks it in chunks of 64: an inclusive
//                   scan of the chunk in workgroup memory (six doubling steps, add_before), plus the total
//                   of the chunks before it. A float32 sum in this order differs from numpy's
//                   left-to-right one by rounding.
//   cumsum_serial   the same, one invocation a row adding left to right (numpy's order): short rows.
//   cumulative, cumulative_serial  the running product, maximum, minimum or log-sum-exp (CumProd, CumMax,
//                   CumMin, LogCumSumExp) as cumsum and cumsum_serial, the fold named by word 6.
//   top_k           picks[r * k + p] = the index of the row's element of rank p, for p < k: an
//                   element's rank is the number of elements that go before it (larger, a NaN
//                   before a number, equal with a lower index), so every rank is taken once.
//                   One invocation an element, comparing it with its whole row.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, is_nan,
// workgroup_index, element, row_start).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params  array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out     array<f32>, contiguous (cumsum, cumulative)
//   2  storage read        source  array<f32>
//   3  storage read_write  picks   array<i32>, contiguous (argmax, argmin, top_k)
//
// Parameters (u32 words):
//   0 rows, 1 length (elements per row), 2 outer rank (at most 6), 3 offset, 4 stride,
//   5 k (top_k) or reverse (cumsum, cumulative: 1 to fold from the end), 6 the fold (cumulative:
//   0 sum, 1 product, 2 maximum, 3 minimum, 4 log-sum-exp), 8..13 outer shape, 14..19 outer strides
//
// Dispatch: argmax, argmin and cumsum one workgroup per row; the serial entries workgroups of 64
// invocations over the rows, top_k over rows * length elements; each as a grid (gx, gy, 1)
// numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> source: array<f32>;
@group(0) @binding(3) var<storage, read_write> picks: array<i32>;

{{COMMON}}

const NONE: u32 = 0xffffffffu;

var<workgroup> best_values: array<f32, 64>;
var<workgroup> best_indices: array<u32, 64>;
var<workgroup> sums: array<f32, 64>;

// Whether (a, ai) goes before (b, bi): a NaN first, then the larger (the smaller, for argmin),
// then on equal values or two NaNs the lower index. An index NONE is no element: anything goes before it.
fn goes_before(a: f32, ai: u32, b: f32, bi: u32, largest: bool) -> bool {
    if (bi == NONE) {
        return ai != NONE;
    }
    if (ai == NONE) {
        return false;
    }
    let a_nan = is_nan(a);
    let b_nan = is_nan(b);
    if (a_nan || b_nan) {
        return a_nan && (!b_nan || ai < bi);
    }
    if (a == b) {
        return ai < bi;
    }
    return select((a < b), (a > b), largest);
}

fn arg_extreme(group: vec3<u32>, groups: vec3<u32>, lane: u32, largest: bool) {
    let row = workgroup_index(group, groups);
    if (row >= word(0u)) {
        return;
    }
    let length = word(1u);
    let stride = word(4u);
    let start = row_start(row);
    var value = 0.0;
    var index = NONE;
    for (var j = lane; j < length; j += 64u) {
        let x = source[start + j * stride];
        if (goes_before(x, j, value, index, largest)) {
            value = x;
            index = j;
        }
    }
    best_values[lane] = value;
    best_indices[lane] = index;
    workgroupBarrier();
    for (var width = 32u; width > 0u; width = width / 2u) {
        if (lane < width) {
            let other = best_values[lane + width];
            let other_index = best_indices[lane + width];
            if (goes_before(other, other_index, best_values[lane], best_indices[lane], largest)) {
                best_values[lane] = other;
                best_indices[lane] = other_index;
            }
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        picks[row] = i32(best_indices[0]);
    }
}

{{ENTRY argmax}}
    arg_extreme(group, groups, lane, true);
}

{{ENTRY argmin}}
    arg_extreme(group, groups, lane, false);
}

fn arg_extreme_serial(group: vec3<u32>, groups: vec3<u32>, lane: u32, largest: bool) {
    let row = element(group, groups, lane);
    if (row >= word(0u)) {
        return;
    }
    let length = word(1u);
    let stride = word(4u);
    let start = row_start(row);
    var value = source[start];
    var index = 0u;
    for (var j = 1u; j < length; j += 1u) {
        let x = source[start + j * stride];
        if (goes_before(x, j, value, index, largest)) {
            value = x;
            index = j;
        }
    }
    picks[row] = i32(index);
}

{{ENTRY argmax_serial}}
    arg_extreme_serial(group, groups, lane, true);
}

{{ENTRY argmin_serial}}
    arg_extreme_serial(group, groups, lane, false);
}

{{ENTRY cumsum_serial}}
    let row = element(group, groups, lane);
    if (row >= word(0u)) {
        return;
    }
    let length = word(1u);
    let stride = word(4u);
    let reverse = word(5u) != 0u;
    let start = row_start(row);
    var total = 0.0;
    for (var step = 0u; step < length; step += 1u) {
        let j = select(step, length - 1u - step, reverse);
        total = total + source[start + j * stride];
        out[row * length + j] = total;
    }
}

// One doubling step of the chunk's inclusive scan: each lane adds the partial sum `width` lanes before it.
fn add_before(lane: u32, width: u32) {
    var before = 0.0;
    if (lane >= width) {
        before = sums[lane - width];
    }
    workgroupBarrier();
    sums[lane] = sums[lane] + before;
    workgroupBarrier();
}

{{ROW_ENTRY cumsum}}
    let reverse = word(5u) != 0u;
    var carry = 0.0;
    for (var base = 0u; base < length; base += 64u) {
        // The chunk's lane-th element, counted from the end when reversed.
        let step = base + lane;
        let j = select(step, length - 1u - step, reverse);
        var x = 0.0;
        if (step < length) {
            x = source[start + j * stride];
        }
        sums[lane] = x;
        workgroupBarrier();
        // Written out rather than looped: lavapipe counts an inner loop's iterations over all the
        // outer loop's, so six steps a chunk would bring a long row to the loop limit six times sooner.
        add_before(lane, 1u);
        add_before(lane, 2u);
        add_before(lane, 4u);
        add_before(lane, 8u);
        add_before(lane, 16u);
        add_before(lane, 32u);
        if (step < length) {
            out[row * length + j] = carry + sums[lane];
        }
        carry = carry + sums[63];
        workgroupBarrier();
    }
}

// The running folds (CumProd, CumMax, CumMin, LogCumSumExp) --------------------------------------
// Word 6 names the fold: 0 sum, 1 product, 2 maximum, 3 minimum, 4 log-sum-exp. One branch for the
// whole launch, so one pipeline serves every fold. Written as if chains, not a switch: SwiftShader
// (Chromium's WebGPU without a GPU) did not finish compiling the workgroup entry with the switch
// inlined into its six doubling steps, where these chains compile at once.

fn fold_identity(kind: u32) -> f32 {
    if (kind == 1u) {
        return 1.0;
    }
    if (kind == 2u || kind == 4u) {
        return -infinity();
    }
    if (kind == 3u) {
        return infinity();
    }
    return 0.0;
}

// log(exp(a) + exp(b)): the larger plus log1p(exp(-|a - b|)), the log1p written as Goldberg's
// log(u) * t / (u - 1) with u = 1 + t (WGSL has no log1p). NaN spreads; two infinities of one sign
// give that infinity, as numpy's logaddexp.
fn log_add_exp(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return not_a_number();
    }
    let larger = max(a, b);
    let smaller = min(a, b);
    if (is_infinite(larger) || is_infinite(smaller)) {
        return larger;
    }
    let t = exp(smaller - larger);
    let u = 1.0 + t;
    var log1p_t = t;
    if (u != 1.0) {
        log1p_t = log(u) * t / (u - 1.0);
    }
    return larger + log1p_t;
}

fn running_fold(a: f32, b: f32, kind: u32) -> f32 {
    if (kind == 1u) {
        return a * b;
    }
    if (kind == 2u) {
        return nan_max(a, b);
    }
    if (kind == 3u) {
        return nan_min(a, b);
    }
    if (kind == 4u) {
        return log_add_exp(a, b);
    }
    return a + b;
}

{{ENTRY cumulative_serial}}
    let row = element(group, groups, lane);
    if (row >= word(0u)) {
        return;
    }
    let length = word(1u);
    let stride = word(4u);
    let reverse = word(5u) != 0u;
    let kind = word(6u);
    let start = row_start(row);
    var total = fold_identity(kind);
    for (var step = 0u; step < length; step += 1u) {
        let j = select(step, length - 1u - step, reverse);
        total = running_fold(total, source[start + j * stride], kind);
        out[row * length + j] = total;
    }
}

// One doubling step of the chunk's inclusive scan under the fold: as add_before.
fn fold_before(lane: u32, width: u32, kind: u32) {
    var before = fold_identity(kind);
    if (lane >= width) {
        before = sums[lane - width];
    }
    workgroupBarrier();
    sums[lane] = running_fold(before, sums[lane], kind);
    workgroupBarrier();
}

{{ROW_ENTRY cumulative}}
    let reverse = word(5u) != 0u;
    let kind = word(6u);
    var carry = fold_identity(kind);
    for (var base = 0u; base < length; base += 64u) {
        let step = base + lane;
        let j = select(step, length - 1u - step, reverse);
        var x = fold_identity(kind);
        if (step < length) {
            x = source[start + j * stride];
        }
        sums[lane] = x;
        workgroupBarrier();
        fold_before(lane, 1u, kind);
        fold_before(lane, 2u, kind);
        fold_before(lane, 4u, kind);
        fold_before(lane, 8u, kind);
        fold_before(lane, 16u, kind);
        fold_before(lane, 32u, kind);
        if (step < length) {
            out[row * length + j] = running_fold(carry, sums[lane], kind);
        }
        carry = running_fold(carry, sums[63], kind);
        workgroupBarrier();
    }
}

{{ENTRY top_k}}
    let length = word(1u);
    let i = element(group, groups, lane);
    if (i >= word(0u) * length) {
        return;
    }
    let row = i / length;
    let position = i % length;
    let stride = word(4u);
    let k = word(5u);
    let start = row_start(row);
    let x = source[start + position * stride];
    var rank = 0u;
    for (var j = 0u; j < length; j += 1u) {
        if (goes_before(source[start + j * stride], j, x, position, true)) {
            rank += 1u;
        }
    }
    if (rank < k) {
        picks[row * k + rank] = i32(position);
    }
}
