// topos kernel family "sort": stable sorts of rows, gathers and scatters along an axis, and a
// search of a sorted vector (Sort, Argsort, TakeAlongAxis, ScatterAddAlongAxis, SearchSorted).
//
// Entry points (each reads dense operands whose sorted or indexed axis is last: the launch
// builder, topos.compiler.wgsl.sort, moves the axis there and back):
//   sort_values, sort_indices
//                 one workgroup a row of `length` elements (at most 1024): the row and its
//                 positions are loaded into workgroup memory, padded to `padded` (a power of
//                 two) with slots that go after everything, and sorted by a bitonic network
//                 (the one scatter.wgsl's scatter_sort_step runs one stage a launch, here all
//                 stages in one launch between barriers). The keys are (value, position) pairs
//                 in a total order: numpy's (a NaN after every number) or its reverse
//                 (`descending`: a NaN first), equal values by position. A total order makes
//                 the unstable network give the stable sort's one answer. sort_values writes
//                 the values, sort_indices the positions.
//   sort_load, sort_stage, sort_store_values, sort_store_indices
//                 the same network for longer rows, through storage: sort_load writes each row's
//                 (value, position) keys padded to `padded` into `long_keys` and `long_places`,
//                 sort_stage runs one stage (k, j) of the network over every row (one launch a
//                 stage, as scatter.wgsl's scatter_sort_step), and a store entry writes the values
//                 or the positions back, `length` a row.
//   take_along    one invocation an output element (row r, slot t): values[r * length + indices[i]].
//   scatter_along one invocation an output element (row r, slot s): the sum, from 0.0 in increasing
//                 k, of updates[r * count + k] over the k whose index is s (no atomics: the same
//                 bits every run, numpy's np.add.at order).
//   search_sorted one invocation a value: the number of elements of the sorted vector that go
//                 before it (a binary search; `right` counts equal ones too), a NaN sorting last.
//
// Indices are checked by the backend before it launches, as numpy raises.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element,
// is_nan, workgroup_index); the loader writes each entry's prologue where {{ENTRY name}} or
// {{ELEMENT_ENTRY name}} stands (kernels/common.wgsl says what each binds).
//
// Bindings (group 0):
//   0  uniform             params    array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out       array<f32>, contiguous (sort_values, take_along, scatter_along)
//   2  storage read_write  positions array<i32>, contiguous (sort_indices, search_sorted)
//   3  storage read        source    array<f32>: the rows, the values taken from, the updates, or the sorted vector
//   4  storage read        indices   array<i32>: take_along's and scatter_along's indices
//   5  storage read        needles   array<f32>: search_sorted's values
//   6  storage read_write  long_keys   array<f32>, rows x padded: the long sort's values
//   7  storage read_write  long_places array<u32>, rows x padded: the long sort's positions
//
// Parameters (u32 words):
//   0 total (rows for the sorts, output elements otherwise), 1 length (a row's elements; the
//   sorted vector's), 2 padded (the sort's power of two), 3 descending, 4 count (indices a row),
//   5 extent (the scattered axis), 6 right (search_sorted's side), 7 k, 8 j (a long sort's stage)
//
// Dispatch: workgroups of 64 invocations as a grid (gx, gy, 1) numbered gx * wy + wx: one a row
// (the sorts), or over `total` elements (the others).

@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> positions: array<i32>;
@group(0) @binding(3) var<storage, read> source: array<f32>;
@group(0) @binding(4) var<storage, read> indices: array<i32>;
@group(0) @binding(5) var<storage, read> needles: array<f32>;
@group(0) @binding(6) var<storage, read_write> long_keys: array<f32>;
@group(0) @binding(7) var<storage, read_write> long_places: array<u32>;

{{COMMON}}

var<workgroup> keys: array<f32, 1024>;
var<workgroup> places: array<u32, 1024>;

// Whether (a, ia) goes strictly before (b, ib): padding (a position at or past `length`) goes
// after everything; a number before a NaN ascending, after it descending; then the values;
// then, at equal values or two NaNs, the lower position.
fn goes_before(a: f32, ia: u32, b: f32, ib: u32) -> bool {
    let length = word(1u);
    if (ia >= length || ib >= length) {
        return ib >= length && ia < length;
    }
    let descending = word(3u) != 0u;
    let a_nan = is_nan(a);
    let b_nan = is_nan(b);
    if (a_nan != b_nan) {
        return select(b_nan, a_nan, descending);
    }
    if (!a_nan) {
        if (a < b) {
            return !descending;
        }
        if (b < a) {
            return descending;
        }
    }
    return ia < ib;
}

// Sort row `row` into keys and places, the 64 lanes sharing each stage.
fn sort_row(row: u32, lane: u32) {
    let length = word(1u);
    let padded = word(2u);
    for (var t = lane; t < padded; t += 64u) {
        keys[t] = select(0.0, source[row * length + min(t, length - 1u)], t < length);
        places[t] = t;
    }
    workgroupBarrier();
    for (var k = 2u; k <= padded; k = k * 2u) {
        for (var j = k / 2u; j > 0u; j = j / 2u) {
            for (var i = lane; i < padded; i += 64u) {
                let partner = i ^ j;
                if (partner > i) {
                    let a = keys[i];
                    let b = keys[partner];
                    let ia = places[i];
                    let ib = places[partner];
                    // Ascending within blocks whose k bit is clear, descending in the others.
                    let ascending = (i & k) == 0u;
                    if (goes_before(b, ib, a, ia) == ascending) {
                        keys[i] = b;
                        keys[partner] = a;
                        places[i] = ib;
                        places[partner] = ia;
                    }
                }
            }
            workgroupBarrier();
        }
    }
}

{{ENTRY sort_values}}
    let row = workgroup_index(group, groups);
    if (row >= word(0u)) {
        return;
    }
    sort_row(row, lane);
    let length = word(1u);
    for (var t = lane; t < length; t += 64u) {
        out[row * length + t] = keys[t];
    }
}

{{ENTRY sort_indices}}
    let row = workgroup_index(group, groups);
    if (row >= word(0u)) {
        return;
    }
    sort_row(row, lane);
    let length = word(1u);
    for (var t = lane; t < length; t += 64u) {
        positions[row * length + t] = i32(places[t]);
    }
}

// The long sort: element i of rows x padded is slot i % padded of row i / padded.
{{ELEMENT_ENTRY sort_load}}
    let length = word(1u);
    let padded = word(2u);
    let t = i % padded;
    long_keys[i] = select(0.0, source[(i / padded) * length + min(t, length - 1u)], t < length);
    long_places[i] = t;
}

{{ELEMENT_ENTRY sort_stage}}
    let k = word(7u);
    let j = word(8u);
    let partner = i ^ j;  // j < padded: the partner lies in the same row
    if (partner > i) {
        let a = long_keys[i];
        let b = long_keys[partner];
        let ia = long_places[i];
        let ib = long_places[partner];
        if (goes_before(b, ib, a, ia) == (((i % word(2u)) & k) == 0u)) {
            long_keys[i] = b;
            long_keys[partner] = a;
            long_places[i] = ib;
            long_places[partner] = ia;
        }
    }
}

{{ELEMENT_ENTRY sort_store_values}}
    let length = word(1u);
    out[i] = long_keys[(i / length) * word(2u) + i % length];
}

{{ELEMENT_ENTRY sort_store_indices}}
    let length = word(1u);
    positions[i] = i32(long_places[(i / length) * word(2u) + i % length]);
}

{{ELEMENT_ENTRY take_along}}
    let count = word(4u);
    let row = i / count;
    out[i] = source[row * word(1u) + u32(indices[i])];
}

{{ELEMENT_ENTRY scatter_along}}
    let count = word(4u);
    let extent = word(5u);
    let slot = i32(i % extent);
    let base = (i / extent) * count;
    var total = 0.0;
    for (var k = 0u; k < count; k += 1u) {
        if (indices[base + k] == slot) {
            total = total + source[base + k];
        }
    }
    out[i] = total;
}

// Whether sorted element a goes before value v: below it ("left"), or at or below it ("right"),
// in numpy's order, where a NaN is after every number.
fn before_value(a: f32, v: f32) -> bool {
    if (is_nan(v)) {
        return word(6u) != 0u || !is_nan(a);
    }
    if (is_nan(a)) {
        return false;
    }
    return select(a < v, a <= v, word(6u) != 0u);
}

{{ELEMENT_ENTRY search_sorted}}
    let v = needles[i];
    var low = 0u;
    var high = word(1u);
    for (var step = 0u; step < 32u && low < high; step += 1u) {
        let middle = (low + high) / 2u;
        if (before_value(source[middle], v)) {
            low = middle + 1u;
        } else {
            high = middle;
        }
    }
    positions[i] = i32(low);
}
