"""The gallery's transformer (``docs/examples/06_char_transformer.py``) in plain JAX, for ``train_step.py --xla``.

The model is written as a JAX user would write it (``jax.numpy``, ``jax.nn``),
operation for operation as the example records it: pre-norm blocks, one
query-key-value product split into heads, a causal mask applied with ``where``
before the softmax, a tanh GELU MLP, a final layer norm, a head without bias
and the mean cross-entropy. The parameters are a dict named as the topos
network names them, so they start from the same numbers.

A training step (forward, backward, Adam) is one ``jax.jit`` function whose
parameters, moments and step count are donated, so XLA updates them in place
and only the batch goes up and the loss comes back. Adam is written out in
``jnp`` as ``topos.model.optim.Adam`` (PyTorch's) computes it; optax is not a
dependency of the project.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np


def layer_norm(x, weight, bias, eps):
    centred = x - jnp.mean(x, axis=-1, keepdims=True)
    variance = jnp.mean(centred * centred, axis=-1, keepdims=True)
    return centred * jax.lax.rsqrt(variance + eps) * weight + bias


def causal_self_attention(x, w, prefix, config):
    """Multi-head causal attention over rows of ``x`` [batch * context, embed]."""
    b, t, c, h = config.batch, config.context, config.embed, config.heads
    d = c // h
    qkv = x @ w[prefix + "attention.qkv.weight"] + w[prefix + "attention.qkv.bias"]

    def split_heads(part):
        return part.reshape(b, t, h, d).transpose(0, 2, 1, 3)

    q, k, v = (split_heads(part) for part in jnp.split(qkv, 3, axis=-1))
    scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(d))
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    attended = jax.nn.softmax(scores, axis=-1) @ v
    merged = attended.transpose(0, 2, 1, 3).reshape(b * t, c)
    return merged @ w[prefix + "attention.out.weight"] + w[prefix + "attention.out.bias"]


def loss(w, tokens, targets, config):
    """The mean cross-entropy of the model with weights ``w`` on int32 ``tokens`` and ``targets`` [batch, context]."""
    b, t, c, eps = config.batch, config.context, config.embed, config.layer_norm_eps
    x = (w["token_embedding"][tokens] + w["position_embedding"][jnp.arange(t)]).reshape(b * t, c)
    for layer in range(config.layers):
        p = f"blocks.{layer}."
        normed = layer_norm(x, w[p + "ln1.weight"], w[p + "ln1.bias"], eps)
        x = x + causal_self_attention(normed, w, p, config)
        normed = layer_norm(x, w[p + "ln2.weight"], w[p + "ln2.bias"], eps)
        hidden = jax.nn.gelu(normed @ w[p + "mlp.in.weight"] + w[p + "mlp.in.bias"], approximate=True)
        x = x + hidden @ w[p + "mlp.out.weight"] + w[p + "mlp.out.bias"]
    x = layer_norm(x, w["ln_final.weight"], w["ln_final.bias"], eps)
    logits = (x @ w["head.weight"]).reshape(b, t, config.vocab_size)
    picked = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), targets[..., None], axis=-1)
    return -jnp.mean(picked)


def adam(parameters, gradients, exp_avg, exp_avg_sq, step, learning_rate, betas=(0.9, 0.999), eps=1e-8):
    """One Adam step (``step`` counts from 1) on dicts of arrays; returns the new parameters and moments."""
    beta1, beta2 = betas
    # The bias corrections are computed in the program, in float32, as optax does; topos and PyTorch
    # compute them on the host in float64, so the losses drift apart by rounding over the steps.
    bias_correction1 = 1.0 - beta1**step
    bias_correction2 = 1.0 - beta2**step
    step_size = learning_rate / bias_correction1
    exp_avg = jax.tree.map(lambda m, g: m + (1.0 - beta1) * (g - m), exp_avg, gradients)
    exp_avg_sq = jax.tree.map(lambda s, g: s * beta2 + (1.0 - beta2) * g * g, exp_avg_sq, gradients)
    parameters = jax.tree.map(
        lambda p, m, s: p - step_size * m / (jnp.sqrt(s) / jnp.sqrt(bias_correction2) + eps),
        parameters,
        exp_avg,
        exp_avg_sq,
    )
    return parameters, exp_avg, exp_avg_sq


class JaxTrainer:
    """Adam training of the transformer under ``jax.jit``: ``step(tokens, targets)`` returns the step's loss.

    ``weights`` is {name: float32 array} (the topos network's parameters by name),
    ``betas`` and ``eps`` those of the topos optimizer it is compared with.
    """

    def __init__(self, config, weights, learning_rate, betas, eps):
        self.config = config
        self.parameters = {name: jnp.array(array) for name, array in weights.items()}
        self.exp_avg = jax.tree.map(jnp.zeros_like, self.parameters)
        self.exp_avg_sq = jax.tree.map(jnp.zeros_like, self.parameters)
        self.count = jnp.zeros((), jnp.int32)

        def train_step(parameters, exp_avg, exp_avg_sq, count, tokens, targets):
            value, gradients = jax.value_and_grad(loss)(parameters, tokens, targets, config)
            count = count + 1
            step = count.astype(jnp.float32)
            parameters, exp_avg, exp_avg_sq = adam(
                parameters, gradients, exp_avg, exp_avg_sq, step, learning_rate, betas, eps
            )
            return value, parameters, exp_avg, exp_avg_sq, count

        self.train_step = jax.jit(train_step, donate_argnums=(0, 1, 2, 3))

    def loss_and_gradients(self, tokens, targets):
        """The loss and {name: gradient} of the current parameters on one batch, without a step."""
        value, gradients = jax.jit(jax.value_and_grad(loss), static_argnums=3)(
            self.parameters, tokens.astype(np.int32), targets.astype(np.int32), self.config
        )
        return float(value), {name: np.asarray(gradient) for name, gradient in gradients.items()}

    def step(self, tokens, targets):
        value, self.parameters, self.exp_avg, self.exp_avg_sq, self.count = self.train_step(
            self.parameters,
            self.exp_avg,
            self.exp_avg_sq,
            self.count,
            tokens.astype(np.int32),
            targets.astype(np.int32),
        )
        return float(value)
