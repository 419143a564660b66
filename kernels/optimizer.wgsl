// topos kernel family "optimizer": the update of every parameter of a bank in place, for training on the device.
// DeviceTrainer (topos.webgpu.flat) lays the parameters end to end in one buffer, their gradients and each
// moment in one buffer each at the same offsets (zeros between them, which an update keeps zero), so that
// one launch updates them all; a model past one storage binding takes one launch a bank.
//
// The formulas are topos.model.optim's (PyTorch's torch.optim), operation by operation, in f32:
//   sgd   g = grad + weight_decay * w; with momentum: buf = g on the first step, else
//         buf = momentum * buf + (1 - dampening) * g; then g = g + momentum * buf (Nesterov)
//         or g = buf; w = w + (-lr) * g.
//   adam  (AdamW first scales w by 1 - lr * weight_decay; Adam adds weight_decay * w to grad)
//         m = m + (1 - beta1) * (g - m); v = v * beta2 + (1 - beta2) * g * g;
//         w = w + (-step_size) * m / (sqrt(v) / sqrt(bias_correction2) + eps),
//         step_size = lr / bias_correction1 (the host computes the corrections for each step).
// Entry points: sgd (no momentum), sgd_momentum, adam (Adam and AdamW).
// Each invocation reads and writes its own element of every read_write buffer, so updating
// in place needs no second buffer.
//
// The line after the bindings takes the shared helpers of kernels/common.wgsl (word, element, strided, infinity).
// The loader declares the parameter block (binding 0) with them, and writes entry point `name`'s
// prologue where a line {{ENTRY name}}, {{ELEMENT_ENTRY name}} or {{ROW_ENTRY name}} stands
// (kernels/common.wgsl says what each form binds).
//
// Bindings (group 0):
//   0  uniform             params     array<vec4<u32>, 16>: the u32 words below
//   1  storage read_write  weights    array<f32>, contiguous: the bank's parameters end to end
//   2  storage read        gradients  array<f32>, contiguous, laid out as weights
//   3  storage read_write  first      array<f32>: SGD's momentum buffer, Adam's m (unused by plain SGD)
//   4  storage read_write  second     array<f32>: Adam's v (adam only)
//
// Parameters (u32 words):
//   f32 values travel as their bits; differences such as 1 - beta2 are rounded to f32 once,
//   on the host, as numpy (and PyTorch) round the Python scalar.
//   0 count (the bank's elements), 1 flags (sgd_momentum: 2 first step, 4 Nesterov; adam: 1 decoupled weight decay)
//   2 lr, 3 momentum or beta1, 4 1 - dampening or beta2, 5 weight_decay, 6 eps,
//   7 step_size (adam), 8 sqrt(bias_correction2) (adam), 9 1 - beta1, 10 1 - beta2,
//   11 1 - lr * weight_decay (AdamW)
//
// Dispatch: workgroups of 64 invocations over `count` elements, as a grid (gx, gy, 1)
// numbered gx * wy + wx.

@group(0) @binding(1) var<storage, read_write> weights: array<f32>;
@group(0) @binding(2) var<storage, read> gradients: array<f32>;
@group(0) @binding(3) var<storage, read_write> first: array<f32>;
@group(0) @binding(4) var<storage, read_write> second: array<f32>;

{{COMMON}}

fn real(index: u32) -> f32 {
    return bitcast<f32>(word(index));
}

{{ELEMENT_ENTRY sgd}}
    let w = weights[i];
    var g = gradients[i];
    if (real(5u) != 0.0) {
        g = g + real(5u) * w;
    }
    weights[i] = w + (-real(2u)) * g;
}

{{ELEMENT_ENTRY sgd_momentum}}
    let flags = word(1u);
    let w = weights[i];
    var g = gradients[i];
    if (real(5u) != 0.0) {
        g = g + real(5u) * w;
    }
    var buffer = g;
    if ((flags & 2u) == 0u) {
        buffer = first[i] * real(3u) + real(4u) * g;
    }
    first[i] = buffer;
    if ((flags & 4u) != 0u) {
        g = g + real(3u) * buffer;
    } else {
        g = buffer;
    }
    weights[i] = w + (-real(2u)) * g;
}

{{ELEMENT_ENTRY adam}}
    let decoupled = (word(1u) & 1u) != 0u;
    var w = weights[i];
    var g = gradients[i];
    let weight_decay = real(5u);
    if (weight_decay != 0.0) {
        if (decoupled) {
            w = w * real(11u);
        } else {
            g = g + weight_decay * w;
        }
    }
    let m = first[i] + real(9u) * (g - first[i]);
    let v = second[i] * real(4u) + real(10u) * g * g;
    first[i] = m;
    second[i] = v;
    let denominator = sqrt(v) / real(8u) + real(6u);
    weights[i] = w + (-real(7u)) * m / denominator;
}
