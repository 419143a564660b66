// topos kernel family "scatter": sums picked by int32 indices, written as a gather.
//
// Entry points (two strategies, both adding each slot's updates from 0.0 in increasing j, the
// order numpy's np.add.at adds them, so both give numpy's bits, the same every run):
//   scatter_add         the gather form: each invocation owns one output element
//                       out[(o * extent + s) * inner + w] and walks all `count` indices, adding
//                       updates[(o * count + j) * inner + w] for every j with indices[j] == s.
//                       Its work is extent x count x inner: for a small table.
//   scatter_keys        the sorted form, step 1: keys[p] = indices[p] * count + p for p < count,
//                       0xffffffff past it (up to `padded`, a power of two): a key orders the
//                       updates by slot, then by j.
//   scatter_sort_step   step 2, one launch a stage (k, j) of a bitonic sort of the keys (ascending).
//   scatter_starts      step 3: starts[s] = the first sorted position whose slot is s or more
//                       (a binary search), for s in 0..extent (starts[extent] = count).
//   scatter_add_sorted  step 4: each output element adds the updates of its slot's segment
//                       starts[s]..starts[s + 1] of the sorted keys, in order (increasing j).
//                       Its work is count log^2 count for the sort and count x inner for the sums.
//
// No atomics anywhere: an atomic float add would be cheaper than the gather form, but its order
// of additions, hence its bits, would vary from run to run. An index outside 0..extent-1 adds
// nowhere (the backend checks indices before it launches, as numpy raises). The loops that walk
// indices take eight an iteration, so that a loop of at most 32767 iterations (all lavapipe lets
// one loop run in an invocation) covers up to 262136 indices.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params   array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out      array<f32>, contiguous, `total` elements (scatter_add, scatter_add_sorted)
//   2  storage read        indices  array<i32>, contiguous, `count` elements (scatter_add, scatter_keys)
//   3  storage read        updates  array<f32>, contiguous, outer * count * inner elements
//   4  storage read_write  keys     array<u32>, `padded` elements (the sorted form)
//   5  storage read_write  starts   array<u32>, extent + 1 elements (scatter_starts, scatter_add_sorted)
//
// Parameters (u32 words):
//   0 total (output elements), 1 count (indices), 2 extent (slots along the axis),
//   3 inner (elements per slot), 4 steps (iterations of the gather form's walk: ceil(count / 8)),
//   5 padded (the sort's length, a power of two), 6 k, 7 j (the sort stage: its block and its distance)
//
// Dispatch: workgroups of 64 invocations, as a grid (gx, gy, 1) numbered gx * wy + wx: over
// `total` output elements (scatter_add, scatter_add_sorted), `padded` keys (scatter_keys; the
// sort steps, one invocation a pair's lower position too), extent + 1 slots (scatter_starts).

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read> updates: array<f32>;
@group(0) @binding(4) var<storage, read_write> keys: array<u32>;
@group(0) @binding(5) var<storage, read_write> starts: array<u32>;

{{COMMON}}

// total plus the update of index j when j is one of the indices and points at `slot`.
fn add_term(total: f32, j: u32, slot: i32, at: u32) -> f32 {
    if (j < word(1u)) {
        if (indices[j] == slot) {
            return total + updates[at];
        }
    }
    return total;
}

{{ELEMENT_ENTRY scatter_add}}
    let count = word(1u);
    let extent = word(2u);
    let inner = word(3u);
    let steps = word(4u);
    let within = i % inner;
    let slot = i32((i / inner) % extent);
    let base = (i / (inner * extent)) * count * inner + within;
    var total = 0.0;
    for (var step = 0u; step < steps; step += 1u) {
        let j = 8u * step;
        total = add_term(total, j, slot, base + j * inner);
        total = add_term(total, j + 1u, slot, base + (j + 1u) * inner);
        total = add_term(total, j + 2u, slot, base + (j + 2u) * inner);
        total = add_term(total, j + 3u, slot, base + (j + 3u) * inner);
        total = add_term(total, j + 4u, slot, base + (j + 4u) * inner);
        total = add_term(total, j + 5u, slot, base + (j + 5u) * inner);
        total = add_term(total, j + 6u, slot, base + (j + 6u) * inner);
        total = add_term(total, j + 7u, slot, base + (j + 7u) * inner);
    }
    out[i] = total;
}

{{ENTRY scatter_keys}}
    let p = element(group, groups, lane);
    if (p >= word(5u)) {
        return;
    }
    let count = word(1u);
    keys[p] = select(0xffffffffu, u32(indices[min(p, count - 1u)]) * count + p, p < count);
}

{{ENTRY scatter_sort_step}}
    let i = element(group, groups, lane);
    let k = word(6u);
    let j = word(7u);
    let partner = i ^ j;
    if (i >= word(5u) || partner <= i) {
        return;
    }
    let a = keys[i];
    let b = keys[partner];
    // Ascending within blocks whose k bit is clear, descending in the others: the bitonic network.
    if ((a > b) == ((i & k) == 0u)) {
        keys[i] = b;
        keys[partner] = a;
    }
}

{{ENTRY scatter_starts}}
    let s = element(group, groups, lane);
    let extent = word(2u);
    if (s > extent) {
        return;
    }
    let count = word(1u);
    // The first sorted position holding a key of slot s or more: keys below s * count are earlier slots'.
    let bound = s * count;
    var low = 0u;
    var high = count;
    for (var step = 0u; step < 32u && low < high; step += 1u) {
        let middle = (low + high) / 2u;
        if (keys[middle] < bound) {
            low = middle + 1u;
        } else {
            high = middle;
        }
    }
    starts[s] = select(low, count, s == extent);
}

// total plus the update of sorted position p when p lies before `stop`.
fn add_sorted_term(total: f32, p: u32, stop: u32, base: u32) -> f32 {
    if (p < stop) {
        let j = keys[p] % word(1u);
        return total + updates[base + j * word(3u)];
    }
    return total;
}

{{ELEMENT_ENTRY scatter_add_sorted}}
    let count = word(1u);
    let extent = word(2u);
    let inner = word(3u);
    let within = i % inner;
    let slot = (i / inner) % extent;
    let base = (i / (inner * extent)) * count * inner + within;
    let start = starts[slot];
    let stop = starts[slot + 1u];
    var total = 0.0;
    for (var p = start; p < stop; p += 8u) {
        total = add_sorted_term(total, p, stop, base);
        total = add_sorted_term(total, p + 1u, stop, base);
        total = add_sorted_term(total, p + 2u, stop, base);
        total = add_sorted_term(total, p + 3u, stop, base);
        total = add_sorted_term(total, p + 4u, stop, base);
        total = add_sorted_term(total, p + 5u, stop, base);
        total = add_sorted_term(total, p + 6u, stop, base);
        total = add_sorted_term(total, p + 7u, stop, base);
    }
    out[i] = total;
}
