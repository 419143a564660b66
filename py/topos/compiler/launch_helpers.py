"""The launch helpers a primitive's kernel rule writes through: the ``k`` of ``Primitive.wgsl_launch(k, node, views)``.

``Selector`` (``topos.compiler.kernels``) walks the plan and inherits these: each
launches one kernel family for one node into a new buffer and returns the view of
its value. A new kernel family adds its method here, and its launch builder in a
module of its own under ``topos.compiler.wgsl``.
"""

from ..ops.convolution import columns_last, padded_extents, placement
from .wgsl import convolution as convolution_build
from .wgsl import eigh as eigh_build
from .wgsl import fft as fourier_build
from .wgsl import launch as build
from .wgsl import linalg as linalg_build
from .wgsl import random as random_build
from .wgsl import scans, scatter, windows
from .wgsl import sort as sort_build
from .wgsl.dispatch import MAX_ELEMENTS
from .wgsl.program import ViewStep
from .wgsl.views import element_count


class LaunchHelpers:
    """The launches of each kernel family that a primitive's rule calls (mixed into ``Selector``);
    the rules themselves live in the op blocks (``wgsl_launch``)."""

    # What a primitive's rule writes through -----------------------------------------------
    # Each allocates the node's buffer before it copies an operand, so that buffers are numbered
    # (and then shared) in one order whatever the op.
    def scratch(self, shape, dtype="float32"):
        """A new buffer a launch works in that holds no node's value (im2col's columns): the program
        counts these apart (``Program.scratch_bytes``), since the plan's peak does not."""
        view = self.allocate(shape, dtype)
        self.pool.scratch.add(view.buffer)
        return view

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

    def convolution(self, node, lhs, rhs):
        """A convolution over views ``lhs`` [N, C, *in] and ``rhs`` [O, I, *window] with the node's
        attributes: the direct kernel, or the im2col path where the rule chooses it
        (``topos.compiler.wgsl.convolution.strategy``)."""
        lhs, rhs = (self.with_buffer(view, node) for view in (lhs, rhs))
        strategy = convolution_build.strategy(lhs, rhs.shape, node.attrs)
        if strategy == "im2col over a dense copy":
            return self.convolution_im2col(node, self.dense(lhs, node), rhs)
        if strategy == "im2col":
            return self.convolution_im2col(node, lhs, rhs)
        out = self.output(node)
        self.launch(convolution_build.convolution(lhs, rhs, node.attrs, out.buffer), node.index)
        return out

    def convolution_im2col(self, node, lhs, rhs):
        """The im2col path: the dilated, padded input in a buffer (fill and copy; a view where the padding
        only crops), its windows gathered into columns (copy), and each group's kernel times them (matmul):
        [M, groups, I * window, out] for a forward, [groups, M * out, I * window] for a weight gradient,
        whose product is then copied into the output's layout."""
        attrs = node.attrs
        out_spatial = node.shape[2:]
        m, channels = node.shape[:2]
        groups = max(attrs["feature_groups"], attrs["batch_groups"])
        per_group_out = channels // groups
        out = self.output(node)
        padded = convolution_build.cropped(lhs, attrs)
        if padded is None:
            padded = self.padded_input(node, lhs)
        windows = convolution_build.gathered_windows(padded, rhs.shape, attrs, out_spatial)
        columns = self.scratch(windows.shape)
        self.place(windows, columns, node)
        taps, outputs = element_count(rhs.shape[1:]), element_count(out_spatial)
        kernel = self.dense(rhs, node).reshape((groups, per_group_out, taps))
        if columns_last(out_spatial, rhs.shape):
            kernel = kernel.broadcast((m, groups, per_group_out, taps))
            self.launch(build.matmul(kernel, columns.reshape((m, groups, taps, outputs)), out.buffer), node.index)
            return out
        product = self.scratch((groups, m * outputs, per_group_out))
        rows = columns.reshape((groups, m * outputs, taps))
        self.launch(build.matmul(rows, kernel.transpose((0, 2, 1)), product.buffer), node.index)
        by_item = product.reshape((groups, m, outputs, per_group_out)).transpose((1, 0, 3, 2))
        self.place(by_item, out.reshape((m, groups, per_group_out, outputs)), node)
        return out

    def padded_input(self, node, lhs):
        """The convolution's input with its dilation's zeros and its padding, in a buffer of its own."""
        attrs = node.attrs
        rank = len(lhs.shape)
        padded = self.scratch(lhs.shape[:2] + padded_extents(lhs.shape, attrs))
        self.fill(padded, 0.0, node)
        places = placement(lhs.shape, attrs)
        if places is not None:
            counts = lhs.shape[:2] + tuple(count for _, count, _, _ in places)
            source = lhs.slice((0, 0) + tuple(first for first, _, _, _ in places), (1,) * rank, counts)
            starts = (0, 0) + tuple(start for _, _, start, _ in places)
            target = padded.slice(starts, (1, 1) + tuple(step for _, _, _, step in places), counts)
            self.place(source, target, node)
        return padded

    def convolution_declines(self, node):
        """Why the convolution kernel cannot run ``node`` (a sentence), or None."""
        lhs, rhs = (self.operand_node(node, i).shape for i in (0, 1))
        return convolution_build.declines(lhs, rhs, node.attrs)

    def random(self, entry, node, view, extra=()):
        """The random kernel family (``kernels/random.wgsl``) for a RandomBits, SplitKey, FoldIn, Uniform or
        RandomInt node reading ``view`` (the key, or the bits): ``entry`` names the kernel's entry point,
        ``extra`` the words RandomInt adds (its span, multiplier and low bound)."""
        out = self.output(node)
        source = self.with_buffer(view, node)
        data = node.attrs.get("data", 0)
        self.launch(random_build.random(entry, source, out.buffer, node.shape, data=data, extra=extra), node.index)
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

    def window(self, entry, node, views):
        """The window kernel's ``entry`` (``kernels/window.wgsl``) for a pooling op: views ``[x]``, or
        ``[t, x]`` / ``[g, x]`` for max pooling's derivatives (the windowed operand x last)."""
        out = self.output(node)
        views = [self.with_buffer(view, node) for view in views]
        x, second = views[-1], (views[0] if len(views) == 2 else None)
        self.launch(windows.window(entry, node.attrs, x, out.buffer, second), node.index)
        return out

    # The scan kernels (kernels/scan.wgsl) ---------------------------------------------------
    def _axis_last(self, view, axis, node):
        """``view`` re-viewed with ``axis`` moved last (nothing moves), with a buffer."""
        order = tuple(a for a in range(view.rank) if a != axis) + (axis,)
        return self.with_buffer(view, node).transpose(order), order

    def arg_extreme(self, opcode, node, view):
        """``ArgMax`` or ``ArgMin`` along the node's ``axis``: its int32 indices, one a row."""
        out = self.output(node)
        rows, _ = self._axis_last(view, node.attrs["axis"], node)
        self.launch(scans.arg_extreme(opcode, rows, out.buffer), node.index)
        return out

    def cumsum(self, node, view):
        """The running sum along the node's ``axis``: along the last axis straight into the node's
        buffer, along another into one laid out with that axis last, then copied back in place."""
        axis, last = node.attrs["axis"], len(node.shape) - 1
        out = self.output(node)
        rows, order = self._axis_last(view, axis, node)
        if axis == last:
            self.launch(scans.cumsum(rows, out.buffer, node.attrs["reverse"]), node.index)
            return out
        moved = self.allocate(rows.shape)
        self.launch(scans.cumsum(rows, moved.buffer, node.attrs["reverse"]), node.index)
        back = tuple(order.index(a) for a in range(len(order)))
        self.place(moved.transpose(back), out, node)
        return out

    def cumulative(self, fold, node, view):
        """The running fold number ``fold`` (CumProd, CumMax, CumMin, LogCumSumExp) along the node's
        ``axis``, laid out as ``cumsum`` lays out the running sum."""
        axis, last = node.attrs["axis"], len(node.shape) - 1
        out = self.output(node)
        rows, order = self._axis_last(view, axis, node)
        target = out if axis == last else self.allocate(rows.shape)
        self.launch(scans.cumulative(fold, rows, target.buffer, node.attrs["reverse"]), node.index)
        if axis != last:
            self.place(target.transpose(tuple(order.index(a) for a in range(len(order)))), out, node)
        return out

    def top_k(self, node, view):
        """The int32 indices of the node's ``k`` largest along the last axis."""
        out = self.output(node)
        source = self.with_buffer(view, node)
        self.launch(scans.top_k(source, node.attrs["k"], out.buffer), node.index)
        return out

    def index_to_float(self, node, indices):
        """int32 values as float32 (the gather kernel's ``index_to_float``; it reads them dense)."""
        out = self.output(node)
        self.launch(scans.index_to_float(self.dense(indices, node), out.buffer), node.index)
        return out

    # The Fourier transforms (kernels/fft.wgsl) ---------------------------------------------
    #: The longest transform the FFT kernels take (one workgroup holds it in its memory).
    MAX_FFT_LENGTH = fourier_build.LARGEST

    def fourier(self, node, view, n, inverse=False):
        """``Fft``, ``Rfft`` or ``Irfft`` of ``n`` points (``inverse``: the inverse DFT, over n) along the
        node's transformed axis, one workgroup a transform: Stockham for a power of two, else the direct sum."""
        out = self.output(node)
        source = self.with_buffer(view, node)
        self.launch(fourier_build.transform(node.opcode, source, n, inverse, out.buffer, node.shape), node.index)
        return out

    def fourier_declines(self, n):
        """Why the FFT kernels cannot run a transform of ``n`` points (a sentence), or None."""
        return fourier_build.declines(n)

    # The Jacobi eigensolver (kernels/eigh.wgsl) ---------------------------------------------
    def eigh(self, node, view):
        """``Eigh`` of the [..., n, n] view ``view``: one workgroup a matrix, working in a scratch buffer
        (A and V), writing the node's packed value (``topos.compiler.wgsl.eigh``)."""
        out = self.output(node)
        source = self.with_buffer(view, node)
        work = self.scratch(eigh_build.work_shape(source.shape))
        self.launch(eigh_build.eigh(source, out.buffer, work.buffer), node.index)
        return out

    def eigh_declines(self, node):
        """Why the Jacobi kernel cannot run ``node`` (a sentence), or None."""
        return eigh_build.declines(self.operand_node(node, 0).shape, MAX_ELEMENTS)

    # The factorisations (kernels/linalg.wgsl) -----------------------------------------------
    #: The largest n x n each factorisation kernel takes (lavapipe's loop budget: topos.compiler.wgsl.linalg).
    MAX_CHOLESKY = linalg_build.MAX_CHOLESKY
    MAX_SOLVE = linalg_build.MAX_SOLVE

    def cholesky(self, node, view):
        """The lower Cholesky factor of each [n, n] matrix of ``view``, one workgroup a matrix."""
        out = self.output(node)
        self.launch(linalg_build.cholesky(self.with_buffer(view, node), out.buffer), node.index)
        return out

    def triangular_solve(self, node, a, b):
        """``TriangularSolve`` of views ``a`` [..., n, n] and ``b`` with the node's flags, one invocation a
        right-hand side."""
        out = self.output(node)
        a, b = (self.with_buffer(view, node) for view in (a, b))
        self.launch(linalg_build.triangular_solve(a, b, node.attrs, out.buffer), node.index)
        return out

    # Sorting, gathering and scattering along an axis (kernels/sort.wgsl) ----------------------
    def _last_dense(self, view, axis, node, dtype="float32"):
        """``view`` with ``axis`` moved last, dense (a copy of its words where the move strides it)."""
        order = tuple(a for a in range(view.rank) if a != axis) + (axis,)
        moved = self.with_buffer(view, node).transpose(order)
        if moved.is_dense:
            return moved
        dense = self.allocate(moved.shape, dtype)
        self.place(moved, dense, node)
        return dense

    def _along_axis(self, node, axis, launch):
        """Run ``launch(out_buffer)`` (a launch or a list of them) into the node's value laid out with
        ``axis`` last, then put that axis back in place (a copy) unless it is the last already."""
        out = self.output(node)
        order = tuple(a for a in range(len(node.shape)) if a != axis) + (axis,)
        moved = out if axis == len(node.shape) - 1 else self.allocate(tuple(node.shape[a] for a in order), node.dtype)
        launches = launch(moved.buffer)
        for one in launches if isinstance(launches, list) else [launches]:
            self.launch(one, node.index)
        if moved is not out:
            self.place(moved.transpose(tuple(order.index(a) for a in range(len(order)))), out, node)
        return out

    def sort(self, node, view):
        """``Sort`` (the values) or ``Argsort`` (the int32 positions) along the node's ``axis``: one workgroup
        a row up to 1024 long, else one launch a stage through two scratch buffers (``topos.compiler.wgsl.sort``)."""
        axis, descending = node.attrs["axis"], node.attrs["descending"]
        rows = self._last_dense(view, axis, node)
        indices = node.opcode == "Argsort"

        def scratch(elements, dtype):
            return self.scratch((elements,), dtype).buffer

        def launches(buffer):
            return sort_build.sort_rows(rows, buffer, descending, indices, scratch=scratch)

        return self._along_axis(node, axis, launches)

    def sort_declines(self, node):
        """Why the sort kernel cannot sort ``node``'s rows (a sentence), or None."""
        shape, axis = self.operand_node(node, 0).shape, node.attrs["axis"]
        return sort_build.sort_declines(element_count(shape) // max(shape[axis], 1), shape[axis])

    def take_along_axis(self, node, values, indices):
        """``TakeAlongAxis``: one invocation an output element, the axis moved last."""
        axis = node.attrs["axis"]
        values = self._last_dense(values, axis, node)
        indices = self._last_dense(indices, axis, node, "int32")
        return self._along_axis(node, axis, lambda buffer: sort_build.take_along(values, indices, buffer))

    def scatter_add_along_axis(self, node, updates, indices):
        """``ScatterAddAlongAxis``: each output element sums its row's updates at its slot, in order."""
        axis, extent = node.attrs["axis"], node.attrs["extent"]
        updates = self._last_dense(updates, axis, node)
        indices = self._last_dense(indices, axis, node, "int32")
        return self._along_axis(node, axis, lambda buffer: sort_build.scatter_along(updates, indices, extent, buffer))

    def scatter_along_declines(self, node):
        """Why the scatter entry cannot run ``node`` (a sentence), or None."""
        return sort_build.scatter_declines(self.operand_node(node, 1).shape[node.attrs["axis"]])

    def search_sorted(self, node, sorted_values, values):
        """``SearchSorted``: a binary search a value (both operands read dense)."""
        out = self.output(node)
        sorted_values, values = (self.dense(self.with_buffer(view, node), node) for view in (sorted_values, values))
        self.launch(sort_build.search_sorted(sorted_values, values, node.attrs["right"], out.buffer), node.index)
        return out
