"""Matrix products: ``MatMul`` over the last two axes, batched over the rest."""

from ..text import format_shape
from . import batching
from .hooks import matmul
from .registry import Meta, Primitive, bytes_moved, register, require_float


@register
class MatMul(Primitive):
    """``MatMul(a, b)``: a [..., m, k] times b [..., k, n] gives [..., m, n].

    Both operands have the same rank (at least 2) and the same batch axes:
    recording reshapes vectors and broadcasts batch axes before the product.
    """

    name = "MatMul"
    arity = 2
    kernel = "matmul"

    def batch(self, e, operands, dims, attrs):
        # One operand batched: the batch joins its free axis (JAX's dot_general rule), so the other
        # operand is read once, not broadcast: a [B, m, k] times b [k, n] is [B m, k] times [k, n].
        (a, b), (da, db) = operands, dims
        if da is not None and db is not None:
            return batching.leading(self, e, operands, dims, attrs)
        batched = a if db is None else b
        x = batching.move(e, batched, da if db is None else db, len(e.shape(batched)) - (3 if db is None else 2))
        shape = e.shape(x)
        if db is None:  # [..., B, m, k]: rows of a
            out = e.matmul(e.reshape(x, shape[:-3] + (shape[-3] * shape[-2], shape[-1])), b)
            return e.reshape(out, shape[:-1] + (e.shape(out)[-1],)), len(shape) - 3
        out = e.matmul(a, e.reshape(x, shape[:-2] + (shape[-2] * shape[-1],)))  # [..., k, B, n]: columns of b
        return e.reshape(out, e.shape(out)[:-1] + shape[-2:]), len(shape) - 2

    def infer(self, metas, attrs):
        require_float(self, metas)
        a, b = metas
        if a.dtype != b.dtype:
            self.fail(f"operand dtypes {a.dtype} and {b.dtype} differ", metas)
        if a.rank < 2 or a.rank != b.rank:
            self.fail(
                f"needs operands of one rank >= 2, got {format_shape(a.shape)} and {format_shape(b.shape)}", metas
            )
        if a.shape[:-2] != b.shape[:-2]:
            self.fail(f"batch axes of {format_shape(a.shape)} and {format_shape(b.shape)} differ", metas)
        if a.shape[-1] != b.shape[-2]:
            self.fail(
                f"contracting axes differ: {format_shape(a.shape)} has {a.shape[-1]}, "
                f"{format_shape(b.shape)} has {b.shape[-2]}",
                metas,
            )
        return Meta(a.shape[:-1] + (b.shape[-1],), a.dtype)

    def forward(self, inputs, attrs):
        # np.matmul, or the product a runtime installed (ops/hooks.py: the page's SIMD kernels).
        return matmul(inputs[0], inputs[1])

    def forward_into(self, inputs, attrs, out):
        return matmul(inputs[0], inputs[1], out)

    def vjp(self, e, g, operands, out, attrs):
        a, b = operands
        grad_a = e.matmul(g, swap_last(e, b)) if e.wants(0) else None
        grad_b = e.matmul(swap_last(e, a), g) if e.wants(1) else None
        return [grad_a, grad_b]

    def stablehlo(self, ctx, node):
        a, b = ctx.operands(node)
        rank = len(node.shape)
        batch = ", ".join(str(axis) for axis in range(rank - 2))
        batching = f"batching_dims = [{batch}] x [{batch}], " if rank > 2 else ""
        a_type, b_type = (ctx.type(ctx.operand_node(node, i)) for i in (0, 1))
        return ctx.emit(
            f"stablehlo.dot_general {a}, {b}, {batching}contracting_dims = [{rank - 1}] x [{rank - 2}] : "
            f"({a_type}, {b_type}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.matmul(node, *views)

    def wgsl_declines(self, k, node):
        if len(node.shape) - 2 > k.MAX_BATCH_RANK:
            return f"more than {k.MAX_BATCH_RANK} batch axes"
        if k.operand_node(node, 0).shape[-1] > 16 * k.LOOP_LIMIT:
            return f"a contracting axis longer than {16 * k.LOOP_LIMIT} (the kernels' loop limit)"
        return None

    def cost(self, operands, meta, attrs):
        # A multiply and an add for each term of each result element.
        return 2 * meta.size * operands[0].shape[-1], bytes_moved(operands, meta)


def swap_last(e, value):
    rank = len(e.shape(value))
    axes = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    return e.transpose(value, axes)
