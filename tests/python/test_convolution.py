"""Convolution in all six readings, against independent oracles.

- values and both gradients of ``topos.conv`` / ``conv1d`` / ``conv2d`` against
  ``torch.nn.functional.conv1d`` / ``conv2d`` / ``conv3d``, for every option (strides, explicit
  and asymmetric pairs, ``"same"``, ``"valid"``, dilation, groups up to depthwise, a bias, a
  batch of one, 1x1 images, a kernel as large as the image, a stride past the kernel): float64
  at rtol 1e-9; float32 at rtol 1e-5 plus 1e-5 of the largest magnitude (``FLOAT32``: a float32
  sum of n terms rounds differently in torch's order and topos's);
- what torch does not have (``"same"`` with a stride, the primitive's lhs dilation, batch groups
  and negative padding) against JAX's ``lax.conv_general_dilated`` and ``jax.vjp``;
- second derivatives: the first gradients recorded as nodes on a tape (the rule's own
  ``Convolution`` nodes) and differentiated again, against torch's double backward;
- the StableHLO of the forward and of the backward (whose convolutions carry lhs dilation and batch
  groups) run by XLA equal to the interpreter;
- the WGSL kernel on lavapipe equal to numpy at edge sizes, and whole backward plans on the device;
- bad inputs raise ``ShapeError`` / ``ArgumentError`` naming the cause.
"""

import jax
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from jax import lax
from test_stablehlo import check_against_xla

import topos
from topos import ArgumentError, ShapeError, Tape, detach
from topos.model.autodiff import Emitter
from topos.ops import Meta, lookup
from topos.ops.convolution import input_gradient, kernel_gradient

jax.config.update("jax_enable_x64", True)

FLOAT64 = dict(rtol=1e-9, atol=1e-12)
#: float32 against torch: rtol 1e-5, plus 1e-5 of the result's largest magnitude.
FLOAT32_RTOL = 1e-5
TORCH_CONV = {3: TF.conv1d, 4: TF.conv2d, 5: TF.conv3d}


def assert_close(got, want, dtype, what):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if dtype == "float64":
        np.testing.assert_allclose(got, want, err_msg=what, **FLOAT64)
    else:
        scale = float(np.max(np.abs(want), initial=0.0))
        np.testing.assert_allclose(got, want, rtol=FLOAT32_RTOL, atol=FLOAT32_RTOL * scale, err_msg=what)


def run_topos(x0, w0, b0, dtype, **options):
    """(output, d x, d w, d b) of ``sum(conv(x, w, b) * u)``, and u."""
    tape = Tape(dtype)
    x, w = tape.parameter(x0), tape.parameter(w0)
    b = tape.parameter(b0) if b0 is not None else None
    y = topos.conv(x, w, b, **options)
    u = np.random.default_rng(7).standard_normal(y.shape)
    loss = topos.sum(y * tape.leaf(u))
    network = tape.seal()
    run = network.forward(network.parameters())
    field = run.backward(detach(loss))
    grads = [field.of(detach(v)).numpy() for v in (x, w) + ((b,) if b is not None else ())]
    return run.of(detach(y)).numpy(), grads, u


def run_torch(x0, w0, b0, u, dtype, pad=None, **options):
    torch_dtype = torch.float64 if dtype == "float64" else torch.float32
    tensors = [torch.tensor(a, dtype=torch_dtype, requires_grad=True) for a in (x0, w0, b0) if a is not None]
    x = tensors[0] if pad is None else TF.pad(tensors[0], pad)
    y = TORCH_CONV[x0.ndim](x, tensors[1], tensors[2] if b0 is not None else None, **options)
    y.backward(torch.tensor(u, dtype=torch_dtype))
    return y.detach().numpy(), [t.grad.numpy() for t in tensors]


# (name, x shape, w shape, topos options, torch options, torch's explicit F.pad or None, with a bias)
TORCH_CASES = [
    ("1-D", (2, 3, 11), (4, 3, 3), {}, {}, None, False),
    ("1-D strided, padded, dilated", (2, 3, 17), (4, 3, 3), dict(stride=2, padding=2, dilation=3), None, None, True),
    ("2-D", (2, 3, 8, 7), (5, 3, 3, 3), {}, {}, None, False),
    ("2-D padding 1 with a bias", (2, 3, 8, 7), (5, 3, 3, 3), dict(padding=1), None, None, True),
    ("2-D strides per axis", (2, 3, 9, 8), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0)), None, None, False),
    ("2-D explicit pairs", (2, 2, 7, 6), (3, 2, 3, 3), dict(padding=((2, 0), (1, 3))), {}, (1, 3, 2, 0), False),
    ("2-D same", (2, 3, 7, 8), (4, 3, 3, 5), dict(padding="same"), None, None, False),
    ("2-D same dilated", (2, 3, 9, 8), (4, 3, 3, 3), dict(padding="same", dilation=2), None, None, False),
    ("2-D valid", (2, 3, 7, 8), (4, 3, 3, 3), dict(padding="valid"), None, None, False),
    ("2-D dilation per axis", (1, 2, 9, 9), (3, 2, 2, 3), dict(dilation=(3, 2)), None, None, False),
    ("2-D groups", (2, 6, 7, 7), (9, 2, 3, 3), dict(groups=3, padding=1), None, None, True),
    ("2-D depthwise, strided", (2, 4, 8, 8), (4, 1, 3, 3), dict(groups=4, stride=2, padding=1), None, None, False),
    ("2-D depthwise multiplier 2", (2, 3, 6, 6), (6, 1, 3, 3), dict(groups=3), None, None, False),
    ("2-D batch of one", (1, 3, 5, 5), (2, 3, 3, 3), dict(padding=1), None, None, False),
    ("2-D 1x1 images", (3, 4, 1, 1), (5, 4, 1, 1), {}, None, None, True),
    ("2-D kernel = image", (2, 3, 5, 4), (4, 3, 5, 4), {}, None, None, False),
    ("2-D stride past the kernel", (2, 3, 10, 11), (4, 3, 2, 2), dict(stride=4), None, None, False),
    ("3-D", (2, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=1), None, None, False),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", TORCH_CASES, ids=[case[0] for case in TORCH_CASES])
def test_values_and_gradients_match_torch(case, dtype):
    name, x_shape, w_shape, options, torch_options, pad, with_bias = case
    rng = np.random.default_rng(len(name))
    x0, w0 = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    b0 = rng.standard_normal(w_shape[0]) if with_bias else None
    if torch_options is None:
        torch_options = dict(options)
    out, grads, u = run_topos(x0, w0, b0, dtype, **options)
    want, want_grads = run_torch(x0, w0, b0, u, dtype, pad, **torch_options)
    assert out.dtype.name == dtype
    assert_close(out, want, dtype, f"{name}: forward")
    for what, got, expected in zip(("d input", "d weight", "d bias"), grads, want_grads):
        assert_close(got, expected, dtype, f"{name}: {what}")


def test_conv1d_and_conv2d_are_conv_with_a_rank_check():
    tape = Tape()
    x1, w1 = tape.input(np.ones((1, 2, 5))), tape.parameter(np.ones((3, 2, 2)))
    x2, w2 = tape.input(np.ones((1, 2, 5, 5))), tape.parameter(np.ones((3, 2, 2, 2)))
    assert topos.conv1d(x1, w1).shape == (1, 3, 4)
    assert topos.conv2d(x2, w2, stride=2).shape == (1, 3, 2, 2)
    with pytest.raises(ShapeError, match="conv2d: needs an input of rank 4"):
        topos.conv2d(x1, w1)
    with pytest.raises(ShapeError, match="conv1d: needs an input of rank 3"):
        topos.conv1d(x2, w2)


# What torch lacks: JAX's conv_general_dilated is the oracle -------------------------------------


def jax_conv(x, w, attrs):
    spatial = "DHW"[3 - (x.ndim - 2) :]
    numbers = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
    return lax.conv_general_dilated(
        x,
        w,
        attrs["strides"],
        list(attrs["padding"]),
        lhs_dilation=attrs["lhs_dilation"],
        rhs_dilation=attrs["rhs_dilation"],
        dimension_numbers=numbers,
        feature_group_count=attrs["feature_groups"],
        batch_group_count=attrs["batch_groups"],
        precision=lax.Precision.HIGHEST,
    )


PRIMITIVE_CASES = [
    (
        (2, 4, 9),
        (6, 2, 3),
        dict(strides=(2,), padding=((1, -1),), lhs_dilation=(3,), rhs_dilation=(2,), feature_groups=2),
    ),
    ((4, 3, 5, 6), (6, 3, 2, 3), dict(strides=(1, 2), padding=((2, 1), (-1, 3)), lhs_dilation=(2, 1), batch_groups=2)),
    (
        (6, 2, 4, 4),
        (3, 2, 3, 3),
        dict(padding=((3, 3), (0, 0)), lhs_dilation=(2, 2), rhs_dilation=(1, 2), batch_groups=3),
    ),
    (
        (2, 2, 4, 5, 3),
        (2, 2, 2, 2, 2),
        dict(strides=(2, 1, 1), padding=((1, 1), (0, -1), (2, 0)), lhs_dilation=(1, 1, 2)),
    ),
]


def full_attrs(x_shape, w_shape, attrs):
    metas = [Meta(x_shape, "float64"), Meta(w_shape, "float64")]
    return lookup("Convolution").normalize(metas, attrs)


@pytest.mark.parametrize("case", range(len(PRIMITIVE_CASES)))
def test_the_primitive_and_both_gradient_rules_match_jax(case):
    """lhs dilation, batch groups and negative padding, which torch has not, against jax.vjp."""
    x_shape, w_shape, attrs = PRIMITIVE_CASES[case]
    attrs = full_attrs(x_shape, w_shape, attrs)
    rng = np.random.default_rng(case)
    x0, w0 = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    tape = Tape("float64")
    x, w = tape.parameter(x0), tape.parameter(w0)
    y = tape.apply("Convolution", [x, w], **attrs)
    u = rng.standard_normal(y.shape)
    loss = topos.sum(y * tape.leaf(u))
    network = tape.seal()
    run = network.forward(network.parameters())
    field = run.backward(detach(loss))
    want, pullback = jax.vjp(lambda a, b: jax_conv(a, b, attrs), x0, w0)
    want_x, want_w = pullback(u)
    np.testing.assert_allclose(run.of(detach(y)).numpy(), want, **FLOAT64)
    np.testing.assert_allclose(field.of(detach(x)).numpy(), want_x, **FLOAT64)
    np.testing.assert_allclose(field.of(detach(w)).numpy(), want_w, **FLOAT64)


@pytest.mark.parametrize("stride", [1, 2, 3])
def test_same_padding_follows_jax_with_any_stride(stride):
    rng = np.random.default_rng(stride)
    x0, w0 = rng.standard_normal((2, 3, 8, 7)), rng.standard_normal((4, 3, 3, 2))
    tape = Tape("float64")
    y = topos.conv2d(tape.input(x0), tape.parameter(w0), stride=stride, padding="same")
    assert y.shape[2:] == (-(-8 // stride), -(-7 // stride))
    network = tape.seal()
    got = network.forward(network.parameters()).of(detach(y)).numpy()
    numbers = ("NCHW", "OIHW", "NCHW")
    want = lax.conv_general_dilated(x0, w0, (stride, stride), "SAME", dimension_numbers=numbers)
    np.testing.assert_allclose(got, want, **FLOAT64)


# Second derivatives ---------------------------------------------------------------------------------


class TapeEmitter(Emitter):
    """An emitter whose handles are values on a user's tape: a derivative rule records its nodes there,
    so the first gradients are a recording that the engine differentiates again."""

    def __init__(self, tape):
        self.tape = tape

    def apply(self, opcode, operands, **attrs):
        return self.tape.apply(opcode, list(operands), **attrs)

    def shape(self, handle):
        return handle.shape

    def like(self, handle, value):
        return self.tape.leaf(np.full(handle.shape, value))


SECOND_ORDER = [
    ((2, 3, 7, 6), (4, 3, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 6, 6), (4, 2, 3, 2), dict(groups=2, dilation=(1, 2), padding=(1, 2))),
    ((2, 3, 9), (2, 3, 3), dict(stride=3, padding=2)),
]


@pytest.mark.parametrize("case", range(len(SECOND_ORDER)))
def test_a_gradient_of_the_gradient_matches_torch_double_backward(case):
    x_shape, w_shape, options = SECOND_ORDER[case]
    rng = np.random.default_rng(case)
    x0, w0 = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    tape = Tape("float64")
    x, w = tape.parameter(x0), tape.parameter(w0)
    y = topos.conv(x, w, **options)
    g0, v0, r0 = rng.standard_normal(y.shape), rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    g = tape.parameter(g0)
    attrs = tape.nodes()[y.index].attrs
    e = TapeEmitter(tape)
    grad_x = input_gradient(e, g, x_shape, w, attrs)
    grad_w = kernel_gradient(e, g, x, w_shape, attrs)
    second = topos.sum(grad_x * tape.leaf(v0)) + topos.sum(grad_w * tape.leaf(r0))
    network = tape.seal()
    opcodes = [n.opcode for n in network.nodes()]
    assert opcodes.count("Convolution") == 3 and "Reverse" in opcodes
    field = network.forward(network.parameters()).backward(detach(second))

    tx, tw, tg = (torch.tensor(a, requires_grad=True) for a in (x0, w0, g0))
    pad = options.get("padding", 0)
    ty = TORCH_CONV[len(x_shape)](
        tx,
        tw,
        stride=options.get("stride", 1),
        padding=pad,
        dilation=options.get("dilation", 1),
        groups=options.get("groups", 1),
    )
    first_x, first_w = torch.autograd.grad(ty, (tx, tw), tg, create_graph=True)
    np.testing.assert_allclose(
        network.forward(network.parameters()).of(detach(grad_x)).numpy(), first_x.detach(), **FLOAT64
    )
    total = (first_x * torch.tensor(v0)).sum() + (first_w * torch.tensor(r0)).sum()
    want = torch.autograd.grad(total, (tx, tw, tg))
    for value, expected, what in zip((x, w, g), want, ("x", "w", "g")):
        np.testing.assert_allclose(field.of(detach(value)).numpy(), expected.numpy(), err_msg=what, **FLOAT64)


# StableHLO through XLA -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(PRIMITIVE_CASES)))
def test_xla_runs_the_forward_and_the_backward_as_the_interpreter_does(case, dtype):
    x_shape, w_shape, attrs = PRIMITIVE_CASES[case]
    rng = np.random.default_rng(case)
    tape = Tape(dtype)
    x, w = tape.parameter(rng.standard_normal(x_shape)), tape.parameter(rng.standard_normal(w_shape))
    y = tape.apply("Convolution", [x, w], **attrs)
    loss = topos.sum(y * tape.leaf(rng.standard_normal(y.shape)))
    network = tape.seal()
    forward, backward = check_against_xla(network, [detach(y), detach(loss)], detach(loss))
    backward_convolutions = [backward.nodes[i] for i in backward.schedule if backward.nodes[i].opcode == "Convolution"][
        1:
    ]
    assert len(backward_convolutions) == 2
    text = backward.emit_stablehlo()
    assert text.count("stablehlo.convolution") == 3 and "stablehlo.reverse" in text
    if max(attrs.get("strides", (1,))) > 1:  # the input gradient dilates g by the strides
        assert any(max(n.attrs["lhs_dilation"]) > 1 for n in backward_convolutions)
    if attrs.get("batch_groups", 1) > 1:  # and the kernel gradient's groups are feature groups
        assert any(n.attrs["feature_groups"] == attrs["batch_groups"] for n in backward_convolutions)


def test_the_backward_of_a_grouped_convolution_has_batch_groups_and_xla_runs_it():
    rng = np.random.default_rng(5)
    tape = Tape("float64")
    x, w = tape.parameter(rng.standard_normal((2, 6, 7, 7))), tape.parameter(rng.standard_normal((6, 2, 3, 3)))
    y = topos.conv2d(x, w, stride=2, padding=1, groups=3)
    loss = topos.sum(y * y)
    network = tape.seal()
    _, backward = check_against_xla(network, [detach(loss)], detach(loss))
    attrs = [backward.nodes[i].attrs for i in backward.schedule if backward.nodes[i].opcode == "Convolution"]
    assert any(a["batch_groups"] == 3 for a in attrs) and any(a["lhs_dilation"] == (2, 2) for a in attrs)


def test_cost_counts_two_flops_a_multiply_add():
    tape = Tape()
    y = topos.conv2d(tape.input(np.ones((2, 3, 6, 6))), tape.parameter(np.ones((4, 3, 3, 3))), groups=1)
    network = tape.seal()
    plan = network.entry([detach(y)]).lower()
    costs = plan.costs()
    assert costs.per_node[y.index][0] == 2 * (2 * 4 * 4 * 4) * (3 * 3 * 3)


# Bad inputs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x_shape, w_shape, options, error, message",
    [
        ((1, 3, 5, 5), (4, 2, 3, 3), {}, ShapeError, "channels differ: the input .* has 3, the kernel .* takes 2"),
        ((1, 4, 5, 5), (4, 1, 3, 3), dict(groups=3), ShapeError, "feature_groups 3 does not divide the input's 4"),
        ((1, 4, 5, 5), (3, 2, 3, 3), dict(groups=2), ShapeError, "feature_groups 2 does not divide the kernel's 3"),
        ((1, 3, 2, 5), (4, 3, 3, 3), {}, ShapeError, "the window spans 3 .* more than the 2 of the padded input"),
        ((1, 3, 5, 5), (4, 3, 3, 3), dict(dilation=3), ShapeError, "the window spans 7"),
        ((1, 3, 5, 5), (4, 3, 3), {}, ShapeError, "needs the input's rank 4"),
        ((3, 5), (4, 3, 3), {}, ShapeError, "rank >= 3"),
        ((1, 3, 5, 5), (4, 3, 3, 3), dict(padding="full"), ArgumentError, 'is not "same", "valid"'),
        ((1, 3, 5, 5), (4, 3, 3, 3), dict(stride=0), ArgumentError, "stride .* must be positive"),
        ((1, 3, 5, 5), (4, 3, 3, 3), dict(stride=(1, 2, 3)), ArgumentError, "one entry per spatial axis"),
        ((1, 3, 5, 5), (4, 3, 3, 3), dict(groups=0), ArgumentError, "groups must be a positive int"),
    ],
)
def test_bad_inputs_raise_errors_that_name_the_cause(x_shape, w_shape, options, error, message):
    tape = Tape()
    x, w = tape.input(np.ones(x_shape)), tape.parameter(np.ones(w_shape))
    before = len(tape.nodes())
    with pytest.raises(error, match=message):
        topos.conv(x, w, **options)
    assert len(tape.nodes()) == before, "a failed conv left nodes on the tape"


def test_the_primitive_refuses_both_group_kinds_at_once_and_a_bias_of_the_wrong_size():
    tape = Tape()
    x, w = tape.input(np.ones((4, 4, 5, 5))), tape.parameter(np.ones((4, 2, 3, 3)))
    with pytest.raises(ShapeError, match="at most one of feature_groups"):
        tape.apply("Convolution", [x, w], feature_groups=2, batch_groups=2)
    with pytest.raises(ShapeError, match="batch_groups 3 does not divide the batch of 4"):
        tape.apply("Convolution", [x, tape.parameter(np.ones((3, 4, 3, 3)))], batch_groups=3)
    with pytest.raises(ShapeError, match="needs one value per output channel"):
        topos.conv(x, tape.parameter(np.ones((4, 4, 3, 3))), bias=np.ones(3))


# WGSL on lavapipe ---------------------------------------------------------------------------------------

#: (x shape, w shape, attributes): 1x1 images, a kernel as large as the image, a stride past the kernel,
#: groups = channels, an output count past one workgroup, and the backward's attributes.
KERNEL_CASES = [
    ((1, 1, 1, 1), (1, 1, 1, 1), {}),
    ((3, 5, 1, 1), (7, 5, 1, 1), {}),
    ((2, 3, 5, 4), (4, 3, 5, 4), {}),
    ((2, 3, 10, 11), (4, 3, 2, 2), dict(strides=(4, 5))),
    ((2, 6, 7, 7), (6, 1, 3, 3), dict(padding=((1, 1), (1, 1)), feature_groups=6)),
    ((3, 4, 13, 11), (5, 4, 3, 3), dict(padding=((1, 1), (1, 1)))),
    ((2, 3, 17), (4, 3, 3), dict(strides=(2,), padding=((2, 0),), rhs_dilation=(3,))),
    ((2, 3, 8, 7), (4, 3, 3, 3), dict(strides=(2, 1), padding=((-1, 0), (0, -2)))),
    ((4, 3, 9, 8), (4, 3, 7, 6), dict(padding=((1, 0), (0, 1)))),
] + PRIMITIVE_CASES


@pytest.mark.parametrize("case", range(len(KERNEL_CASES)))
def test_the_direct_kernel_agrees_with_numpy_on_lavapipe(case):
    from topos.compiler.wgsl.convolution import convolution as build
    from topos.webgpu import View, run_launches

    x_shape, w_shape, attrs = KERNEL_CASES[case]
    attrs = full_attrs(x_shape, w_shape, attrs)
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(x_shape).astype(np.float32), rng.standard_normal(w_shape).astype(np.float32)
    exact = lookup("Convolution").forward([x.astype(np.float64), w.astype(np.float64)], attrs)
    magnitude = lookup("Convolution").forward([np.abs(x).astype(np.float64), np.abs(w).astype(np.float64)], attrs)
    launch = build(View.of_buffer(0, x.shape), View.of_buffer(1, w.shape), attrs, 9)
    sizes = {9: exact.size}
    got = run_launches([launch], {0: x, 1: w}, sizes, {"out": View.of_buffer(9, exact.shape)})["out"]
    # tests/cases/README.md's rule: 1e-5 relative plus 4 sqrt(n) 2^-24 sum(|terms|) for n terms.
    terms = int(np.prod(w_shape[1:]))
    allowed = 1e-5 * np.abs(exact) + 4 * np.sqrt(terms) * 2.0**-24 * magnitude + 1e-37
    assert got.shape == exact.shape
    assert np.all(np.abs(got - exact) <= allowed), float(np.max(np.abs(got - exact) - allowed))


@pytest.mark.parametrize("path, groups", [("rule", 1), ("direct", 2)])
def test_a_whole_training_step_of_a_convolution_runs_on_the_device(path, groups, monkeypatch):
    """Forward and backward (the reversed kernel, the transposed operands, the strided and grouped
    convolutions of the gradients) all on WebGPU, no host step, equal to numpy: by the rule's path (im2col
    into the matmul, forward and weight-gradient layouts), and, grouped, on the direct kernel forced."""
    import topos.compiler.wgsl.convolution as paths

    if path == "direct":
        monkeypatch.setattr(paths, "FORCED_PATH", "direct")
    rng = np.random.default_rng(11)
    tape = Tape("float32")
    x = tape.parameter(rng.standard_normal((2, 8, 9, 8)))
    w = tape.parameter(rng.standard_normal((8, 8 // groups, 3, 3)))
    b = tape.parameter(rng.standard_normal(8))
    y = topos.relu(topos.conv2d(x, w, b, stride=2, padding="same", groups=groups))
    loss = topos.sum(y * tape.leaf(rng.standard_normal(y.shape)))
    network = tape.seal()
    plan = network.entry([detach(loss)]).backward(detach(loss)).lower()
    reading = plan.kernels()
    assert reading.declined == {}
    kernels = [launch.kernel for launch in reading.launches]
    assert kernels.count("convolution") == (3 if path == "direct" else 0)
    assert path == "direct" or kernels.count("matmul") == 3
    assert "copy" in kernels  # the kernel's Reverse, and the im2col gathers
    numpy_outputs = plan.run(network.parameters()).outputs()
    device_outputs = plan.run(network.parameters(), backend="webgpu").outputs()
    for want, got in zip(numpy_outputs, device_outputs):
        want, got = np.asarray(want, dtype=np.float64), np.asarray(got, dtype=np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.max(np.abs(want))))


@pytest.mark.parametrize("case", range(len(KERNEL_CASES)))
def test_the_im2col_path_agrees_with_numpy_where_the_rule_takes_it(case):
    """Every kernel case as a plan on the device: im2col where its views fit (forward and weight-gradient
    layouts, crops, dilations), the direct kernel where they do not (batch groups, three spatial axes)."""
    from topos.compiler.wgsl.convolution import MIN_IM2COL_CHANNELS, strategy
    from topos.webgpu import View

    x_shape, w_shape, attrs = KERNEL_CASES[case]
    rng = np.random.default_rng(case)
    tape = Tape("float32")
    x, w = tape.input(rng.standard_normal(x_shape)), tape.parameter(rng.standard_normal(w_shape))
    y = tape.apply("Convolution", [x, w], **attrs)
    network = tape.seal()
    plan = network.entry([detach(y)]).lower()
    chosen = strategy(View.of_buffer(0, x_shape), w_shape, tape.nodes()[y.index].attrs)
    groups = max(attrs.get("feature_groups", 1), attrs.get("batch_groups", 1))
    few_channels = w_shape[0] // groups < MIN_IM2COL_CHANNELS  # the direct kernel runs these faster
    expected = "direct" if attrs.get("batch_groups", 1) > 1 or len(x_shape) > 4 or few_channels else "im2col"
    assert chosen == expected
    kernels = {launch.kernel for launch in plan.kernels().launches}
    assert ("matmul" in kernels) == (expected == "im2col") and ("convolution" in kernels) == (expected == "direct")
    feeds = {detach(x): rng.standard_normal(x_shape).astype(np.float32)}
    want = np.asarray(plan.run(network.parameters(), feeds).outputs()[0], dtype=np.float64)
    got = np.asarray(plan.run(network.parameters(), feeds, backend="webgpu").outputs()[0], dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * float(np.max(np.abs(want))))


def test_the_device_declines_only_what_neither_path_can_run_and_says_why():
    from topos.compiler.wgsl.convolution import MAX_TERMS

    tape = Tape("float32")
    channels = MAX_TERMS // 8 + 1
    # three spatial axes (no im2col) and more terms than the direct kernel's loop: the host runs it
    big = topos.conv(tape.input(np.ones((2, channels, 3, 3, 3))), tape.parameter(np.ones((1, channels, 2, 2, 2))))
    # the same terms over two spatial axes: the im2col path runs it (its matmul splits the long sum)
    wide = topos.conv2d(tape.input(np.ones((1, channels, 2, 4))), tape.parameter(np.ones((1, channels, 2, 4))))
    network = tape.seal()
    reading = network.entry([detach(big), detach(wide)]).lower().kernels()
    assert "more than the convolution kernel's loop limit" in reading.declined[big.index]
    assert wide.index not in reading.declined


def test_a_saved_convolutional_network_loads_with_its_attributes_and_refuses_damaged_ones(tmp_path):
    import json

    from topos import CheckpointError, Network

    rng = np.random.default_rng(12)
    tape = Tape("float64")
    x, w = tape.input(rng.standard_normal((2, 3, 7, 7))), tape.parameter(rng.standard_normal((4, 3, 3, 3)))
    y = topos.conv2d(x, w, stride=2, padding=((1, 0), (2, 1)), dilation=(1, 2))
    network = tape.seal()
    path = tmp_path / "conv.json"
    network.save(path)
    loaded = Network.load(path)
    node = next(n for n in loaded.nodes() if n.opcode == "Convolution")
    assert node.attrs == network.nodes()[y.index].attrs
    images = rng.standard_normal((2, 3, 7, 7))
    want = network.forward(network.parameters(), {detach(x): images}).of(detach(y)).numpy()
    feeds = {loaded.input_symbols()[0]: images}
    got = loaded.forward(loaded.adopt(network.parameters()), feeds).of(loaded.symbol(y.index)).numpy()
    np.testing.assert_array_equal(got, want)
    text = path.read_text()
    document = json.loads(text)
    for entry in document["nodes"]:
        if entry["opcode"] == "Convolution":
            entry["attrs"]["padding"] = {"tuple": [{"tuple": [1, 0]}]}  # one pair for two spatial axes
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match="padding"):
        Network.load(path)
