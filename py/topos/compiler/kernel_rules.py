"""What a primitive's kernel rule writes through: the ``k`` of ``Primitive.wgsl_launch(k, node, views)``.

``Selector`` (``topos.compiler.kernels``) walks the plan and inherits these: each
launches one kernel family for one node into a new buffer and returns the view of
its value. A new kernel family adds its method here, and its launch builder in a
module of its own under ``topos.compiler.wgsl``.
"""

from .wgsl import launch as build
from .wgsl import scatter
from .wgsl.program import ViewStep


class KernelRules:
    """The kernel families a primitive's rule launches (mixed into ``Selector``)."""

    # What a primitive's rule writes through -----------------------------------------------
    # Each allocates the node's buffer before it copies an operand, so that buffers are numbered
    # (and then shared) in one order whatever the op.
    def output(self, node):
        """A new buffer for the node's value, as a dense view."""
        return self.allocate(node.shape, node.dtype)

    def new_view(self, node, view):
        """The node's value is ``view``, of an operand's buffer or a constant: nothing runs."""
        self.steps.append(ViewStep(node.index, view))
        return view

    def elementwise(self, expression, node, views):
        """The elementwise template computing ``expression`` over x, y, z (``views``) for every element."""
        out = self.output(node)
        self.launch(build.elementwise(expression, out.buffer, node.shape, views), node.index)
        return out

    def reduce(self, fold, node, view):
        """The reduce kernel's ``fold`` ("Sum" or "Max") of ``view`` over the node's ``axes``."""
        out = self.output(node)
        source = self.with_buffer(view, node)
        for launch in build.reduce(fold, source, node.attrs["axes"], out.buffer, allocate=self.pool.allocate):
            self.launch(launch, node.index)
        return out

    def matmul(self, node, a, b):
        """The matrix product of views ``a`` [..., m, k] and ``b`` [..., k, n]."""
        out = self.output(node)
        a, b = (self.with_buffer(view, node) for view in (a, b))
        self.launch(build.matmul(a, b, out.buffer), node.index)
        return out

    def rows(self, kernel, entry, node, views):
        """A row kernel (``kernels/<kernel>.wgsl``'s ``entry``, one workgroup a row of the last axis)
        over the node's operands: the derivatives of softmax, log-softmax and layer norm."""
        out = self.output(node)
        views = [self.with_buffer(view, node) for view in views]
        self.launch(build.rows(kernel, entry, views[0], out.buffer, others=views[1:]), node.index)
        return out

    def fused_rows(self, kernel, entry, group, source, eps=0.0):
        """A row kernel (``kernels/<kernel>.wgsl``'s ``entry``) computing a fused group from view ``source``."""
        node = self.nodes[group.root]
        source = self.with_buffer(source, node)
        out = self.allocate(node.shape)
        self.launch(build.rows(kernel, entry, source, out.buffer, eps=eps), group.covered, group.kind)
        return out

    def fused_reduce(self, fold, group, source, axes, scale):
        """The reduce kernel's ``fold`` over ``axes`` of view ``source``, times ``scale``: a fused group."""
        node = self.nodes[group.root]
        source = self.with_buffer(source, node)
        out = self.allocate(node.shape)
        for launch in build.reduce(fold, source, axes, out.buffer, scale=scale, allocate=self.pool.allocate):
            self.launch(launch, group.covered, group.kind)
        return out

    def take(self, node, values, indices):
        """The gather kernel's ``take`` along the node's ``axis`` (it reads both operands dense)."""
        out = self.output(node)
        values, indices = (self.dense(view, node) for view in (values, indices))
        self.launch(build.take(values, indices, node.attrs["axis"], out.buffer), node.index)
        return out

    def one_hot(self, node, indices):
        """The gather kernel's ``one_hot`` of the node's ``depth`` (it reads the indices dense)."""
        out = self.output(node)
        self.launch(build.one_hot(self.dense(indices, node), node.attrs["depth"], out.buffer), node.index)
        return out

    def fill(self, view, value, node):
        """Every element of ``view`` gets ``value``."""
        self.launch(build.fill(view, value), node.index)

    # Added for issue 22 (WebGPU without host steps) ---------------------------------------
    #: The most indices one ScatterAdd launch walks (its loop's limit, eight indices an iteration).
    MAX_SCATTER_INDICES = scatter.MAX_SCATTER_INDICES

    #: The most slots x indices the sorted form's u32 keys hold.
    MAX_SORT_KEYS = scatter.MAX_SORT_KEYS

    def scatter_add(self, node, updates, indices):
        """The scatter kernel's launches along the node's ``axis`` (it reads both operands dense): the gather
        form for a small table, the sorted form for a large one (``topos.compiler.wgsl.scatter``)."""
        out = self.output(node)
        updates, indices = (self.dense(view, node) for view in (updates, indices))
        axis, extent = node.attrs["axis"], node.attrs["extent"]
        for launch in scatter.scatter_add(updates, indices, axis, extent, out.buffer, allocate=self.pool.allocate):
            self.launch(launch, node.index)
        return out

    def fused_elementwise(self, chain, views):
        """One elementwise launch computing a chain of elementwise nodes (``topos.compiler.wgsl.fusion``)
        from ``views``, the chain's outside operands; the launch covers every node of the chain, and writes
        the chain's ``extra`` value, if any, to a buffer of its own."""
        node = self.nodes[chain.root]
        body, expression = chain.program(self.nodes)
        out = self.output(node)
        extra = None
        if chain.extra is not None:  # a value of the chain read outside it too: the launch writes it as well
            self.views[chain.extra] = self.output(self.nodes[chain.extra])
            extra = self.views[chain.extra].buffer
        opcodes = "+".join(self.nodes[i].opcode for i in chain.nodes)
        launch = build.elementwise(expression, out.buffer, node.shape, views, body=body, extra=extra)
        self.launch(launch, chain.nodes, opcodes)
        return out
