"""The gallery's transformer (docs/examples/06_char_transformer.py) against PyTorch.

The same model is written here a second time, independently, with PyTorch's
own layers (``F.layer_norm``, ``F.scaled_dot_product_attention`` with its causal
mask, ``F.gelu(approximate="tanh")``, ``F.cross_entropy``), in float64. Both are
given the same parameters, perturbed away from their initial values so that
no bias or norm weight sits at a trivial 0 or 1, and the same tokens. The loss
and every parameter's gradient must agree to 1e-10 relative, and so must the
parameters after two Adam steps, topos's ``optim.Adam`` against ``torch.optim.Adam``.
"""

import importlib.util
import math
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from topos import Tape
from topos.model import optim

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples", "06_char_transformer.py")
TOLERANCE = 1e-10


def load_example():
    spec = importlib.util.spec_from_file_location("char_transformer_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = load_example()

CONFIGS = {
    # The example's own sizes.
    "example": example.Config(),
    # Every size different from every other, so that a swapped axis cannot pass unnoticed.
    "uneven": example.Config(batch=3, context=7, embed=12, heads=3, layers=2, mlp=2, seed=5),
}


def torch_loss(weights, tokens, targets, config):
    """The model of the example, written with PyTorch's layers; ``weights`` maps names to tensors."""
    b, t, c, h = config.batch, config.context, config.embed, config.heads
    d = c // h
    eps = config.layer_norm_eps
    x = weights["token_embedding"][tokens] + weights["position_embedding"][torch.arange(t)]
    for layer in range(config.layers):
        w = {
            name[len(f"blocks.{layer}.") :]: tensor
            for name, tensor in weights.items()
            if name.startswith(f"blocks.{layer}.")
        }
        normed = F.layer_norm(x, (c,), w["ln1.weight"], w["ln1.bias"], eps)
        q, k, v = F.linear(normed, w["attention.qkv.weight"].T, w["attention.qkv.bias"]).split(c, dim=-1)
        q, k, v = (part.reshape(b, t, h, d).transpose(1, 2) for part in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        merged = attended.transpose(1, 2).reshape(b, t, c)
        x = x + F.linear(merged, w["attention.out.weight"].T, w["attention.out.bias"])
        normed = F.layer_norm(x, (c,), w["ln2.weight"], w["ln2.bias"], eps)
        hidden = F.gelu(F.linear(normed, w["mlp.in.weight"].T, w["mlp.in.bias"]), approximate="tanh")
        x = x + F.linear(hidden, w["mlp.out.weight"].T, w["mlp.out.bias"])
    x = F.layer_norm(x, (c,), weights["ln_final.weight"], weights["ln_final.bias"], eps)
    logits = x @ weights["head.weight"]
    return F.cross_entropy(logits.reshape(b * t, config.vocab_size), targets.reshape(b * t))


def relative_error(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = np.max(np.abs(expected))
    return np.max(np.abs(actual - expected)) / (scale if scale > 0 else 1.0)


def perturbed_parameters(network, config):
    """The recorded initial parameters plus seeded noise, as a new ``Parameters`` table."""
    rng = np.random.default_rng(config.seed + 100)
    parameters = network.parameters()
    noisy = {index: array + rng.normal(0.0, 0.1, array.shape) for index, array in parameters.slots.items()}
    return parameters.replace(noisy)


def token_batch(config, seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, config.vocab_size, (config.batch, config.context))
    targets = rng.integers(0, config.vocab_size, (config.batch, config.context))
    return tokens, targets


class Both:
    """The example's network in topos and its PyTorch twin, holding the same parameters."""

    def __init__(self, config):
        self.config = config
        self.network, (self.tokens, self.targets, _, self.loss) = Tape.record(lambda tape: example.build(tape, config))
        self.parameters = perturbed_parameters(self.network, config)
        self.torch_weights = {
            name: torch.tensor(np.array(tensor), dtype=torch.float64, requires_grad=True)
            for name, tensor in self.parameters.items()
        }

    def topos_step(self, tokens, targets):
        run = self.network.forward(self.parameters, {self.tokens: tokens, self.targets: targets})
        gradients = run.backward(self.loss).parameters(self.parameters)
        return run.of(self.loss).scalar(), dict(gradients.items())

    def torch_step(self, tokens, targets):
        for tensor in self.torch_weights.values():
            tensor.grad = None
        loss = torch_loss(self.torch_weights, torch.tensor(tokens), torch.tensor(targets), self.config)
        loss.backward()
        return loss.item(), {name: tensor.grad.numpy() for name, tensor in self.torch_weights.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_loss_and_every_gradient_agree_with_torch(name):
    config = CONFIGS[name]
    both = Both(config)
    tokens, targets = token_batch(config, seed=1)
    topos_loss, topos_gradients = both.topos_step(tokens, targets)
    torch_loss_value, torch_gradients = both.torch_step(tokens, targets)

    # A loss near ln(vocabulary) would also be what a broken model that ignores its input gives.
    assert abs(topos_loss - math.log(config.vocab_size)) > 1e-3
    assert abs(topos_loss - torch_loss_value) <= TOLERANCE * abs(torch_loss_value)
    assert set(topos_gradients) == set(torch_gradients) and len(topos_gradients) == 5 + 12 * config.layers
    for parameter, expected in torch_gradients.items():
        actual = np.asarray(topos_gradients[parameter])
        assert actual.shape == expected.shape, parameter
        assert np.max(np.abs(expected)) > 0, f"{parameter}: torch's gradient is zero, the check would be empty"
        assert relative_error(actual, expected) <= TOLERANCE, f"{parameter}: {relative_error(actual, expected):.2e}"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_adam_steps_agree_with_torch(name):
    config = CONFIGS[name]
    both = Both(config)
    learning_rate = 1e-2
    optimizer = optim.Adam(lr=learning_rate)
    state = optimizer.init(both.parameters)
    torch_optimizer = torch.optim.Adam(list(both.torch_weights.values()), lr=learning_rate)
    initial = {name: np.array(tensor) for name, tensor in both.parameters.items()}

    # Two steps on different batches: the second one reads the moments the first one left.
    for step in range(2):
        tokens, targets = token_batch(config, seed=10 + step)
        run = both.network.forward(both.parameters, {both.tokens: tokens, both.targets: targets})
        gradients = run.backward(both.loss).parameters(both.parameters)
        both.parameters, state = optimizer.step(both.parameters, gradients, state)
        both.torch_step(tokens, targets)
        torch_optimizer.step()

        for parameter, tensor in both.parameters.items():
            expected = both.torch_weights[parameter].detach().numpy()
            actual = np.asarray(tensor)
            assert relative_error(actual, expected) <= TOLERANCE, f"step {step}, {parameter}"
    for parameter, tensor in both.parameters.items():
        assert not np.array_equal(np.asarray(tensor), initial[parameter]), f"{parameter} did not move"
