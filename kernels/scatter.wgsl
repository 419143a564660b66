// topos kernel family "scatter": sums picked by int32 indices, written as a gather.
//
// Entry points:
//   scatter_add  ScatterAdd(updates, indices) along `axis`: with updates [outer..., count, inner...]
//                (contiguous, the `count` indices flattened) and out [outer..., extent, inner...],
//                out[(o * extent + s) * inner + w] = the sum of updates[(o * count + j) * inner + w]
//                over every j with indices[j] == s, added in increasing j from 0.0.
//
// No atomics: each invocation owns one output element and walks the indices itself, so
// every run adds the same terms in the same order (increasing j, as numpy's np.add.at does)
// and gives the same bits. An index outside 0..extent-1 adds nowhere (the backend checks
// indices before it launches, as numpy raises). The work is count reads of an index per
// output element (extent x count per outer slice and inner element), which is small for
// an embedding table's gradient (vocabularies in the thousands, a batch of tokens).
//
// The walk over j takes eight indices an iteration, so that a loop of at most 32767
// iterations (all lavapipe lets one loop run in an invocation) covers up to 262136 indices.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
//
// Bindings (group 0):
//   0  uniform             params   array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  out      array<f32>, contiguous, `total` elements
//   2  storage read        indices  array<i32>, contiguous, `count` elements
//   3  storage read        updates  array<f32>, contiguous, outer * count * inner elements
//
// Parameters (u32 words):
//   0 total (output elements), 1 count (indices), 2 extent (slots along the axis),
//   3 inner (elements per slot), 4 steps (iterations of the walk: ceil(count / 8))
//
// Dispatch: workgroups of 64 invocations over `total` output elements, as a grid
// (gx, gy, 1) numbered gx * wy + wx.

@group(0) @binding(0) var<uniform> params: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read> indices: array<i32>;
@group(0) @binding(3) var<storage, read> updates: array<f32>;

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

@compute @workgroup_size(64)
fn scatter_add(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let i = element(group, groups, lane);
    if (i >= word(0u)) {
        return;
    }
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
