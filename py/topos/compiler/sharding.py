"""Sharding annotations: the StableHLO reading split over a mesh of devices.

``shard_batch(plan, batch_axes, devices)`` is the plan's StableHLO text with
the annotations XLA's SPMD partitioner (Shardy) reads, and nothing else
changed: the module still computes on whole arrays, and XLA divides the work.

- the module says how many partitions it has: ``mhlo.num_partitions``;
- a one-axis mesh of the devices, ``sdy.mesh @mesh = <["batch"=N]>``;
- each argument named in ``batch_axes`` is split along its axis over the mesh
  (``#sdy.sharding<@mesh, [{}, {"batch"}]>`` splits axis 1); every other argument
  and every result is replicated (``[{}, {}]``).

A loss that averages over the batch then reads a reduction across devices, and
a gradient that sums over it too: XLA inserts the all-reduces. The results are
the single-device results up to the order of those sums (float rounding).
``topos.xla.spmd.DataParallel`` compiles and runs such a module.
"""

import re
from collections.abc import Mapping

from ..errors import ArgumentError, ArgumentTypeError
from ..model.nodes import Symbol, describe_node
from ..model.value import Value
from ..text import format_shape
from .stablehlo import emit_plan

MESH_AXIS = "batch"

# The function's header as emit_plan writes it: arguments, then result types.
_HEADER = re.compile(r"^  func\.func @main\((?P<arguments>.*)\) -> \((?P<results>.*)\) \{$", re.MULTILINE)


def shard_batch(plan, batch_axes, devices):
    """The plan's StableHLO text, annotated to run on ``devices`` devices with arguments split.

    ``batch_axes`` maps an input (a ``Symbol`` of the plan's network, or a node index) to the
    axis along which it is split; that axis's extent must divide evenly by ``devices``.
    """
    arguments = plan.arguments()
    split = split_positions(plan, batch_axes, devices, arguments)
    ranks = [len(plan.nodes[index].shape) for index in arguments]
    result_ranks = [len(plan.nodes[index].shape) for index in plan.outputs]
    return annotate(emit_plan(plan), devices, split, ranks, result_ranks)


def split_positions(plan, batch_axes, devices, arguments):
    """``{argument position: axis}`` for ``batch_axes`` over ``arguments`` (node indices in argument
    order), each checked: an argument of the module, an axis it has, an extent that divides.

    An argument is named by its node index or its symbol; errors name its node as a feed's
    errors do (``input 0 'x' (recorded at main.py:3)``).
    """
    if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
        raise ArgumentError(f"devices is a positive int, the size of the mesh; got {devices!r}")
    if not isinstance(batch_axes, Mapping):
        raise ArgumentTypeError(
            f"batch_axes maps each split argument to its axis ({{x: 0}}), got {type(batch_axes).__name__}"
        )
    split = {}
    for source, axis in batch_axes.items():
        index = _argument_index(plan, source)
        if index not in arguments:
            named = describe_node(plan.nodes[index]) if 0 <= index < len(plan.nodes) else f"node {index}"
            raise ArgumentError(f"{named} is not an argument of this plan (its arguments: nodes {list(arguments)})")
        node = plan.nodes[index]
        where = f"batch axis of {describe_node(node)}, of shape {format_shape(node.shape)}"
        if not isinstance(axis, int) or isinstance(axis, bool) or not -len(node.shape) <= axis < len(node.shape):
            raise ArgumentError(f"{where}: it has no axis {axis!r} to split")
        axis %= len(node.shape)
        if node.shape[axis] % devices:
            raise ArgumentError(
                f"{where}: axis {axis} of extent {node.shape[axis]} does not divide over {devices} devices"
            )
        split[tuple(arguments).index(index)] = axis
    return split


def _argument_index(plan, source):
    """The node index that a key of ``batch_axes`` names: an int, or a symbol of the plan's network."""
    if isinstance(source, int) and not isinstance(source, bool):
        return source
    if not isinstance(source, (Symbol, Value)):
        raise ArgumentTypeError(
            f"batch_axes names an argument by its node index or symbol, got {type(source).__name__}"
        )
    return plan.network.index_of(source)  # FeedError for a symbol of another network


def sharding(rank, axis=None):
    """The ``sdy.sharding`` attribute of a value of ``rank`` axes, split along ``axis`` (or replicated)."""
    dimensions = ", ".join('{"' + MESH_AXIS + '"}' if a == axis else "{}" for a in range(rank))
    return f"{{sdy.sharding = #sdy.sharding<@mesh, [{dimensions}]>}}"


def annotate(text, devices, split, ranks, result_ranks):
    """Annotate emitted text (``emit_stablehlo``'s, or a training step's): ``split`` maps argument
    positions to axes; ``ranks`` and ``result_ranks`` are the ranks of the arguments and of the
    results, in order. An argument's own attributes (``tf.aliasing_output``) are kept."""
    header = _HEADER.search(text)
    if header is None:
        raise ArgumentError("the text has no `func.func @main(...) -> (...)` header as emit_stablehlo writes it")
    # Types and attributes hold no ", %" and result types no ", ": the header splits on them.
    arguments = [a for a in header["arguments"].split(", %") if a]
    results = [r for r in header["results"].split(", ") if r]
    if len(arguments) != len(ranks) or len(results) != len(result_ranks):
        raise ArgumentError(
            f"the module has {len(arguments)} arguments and {len(results)} results; "
            f"the ranks given are for {len(ranks)} and {len(result_ranks)}"
        )
    annotated_arguments = []
    for position, (argument, rank) in enumerate(zip(arguments, ranks)):
        attribute = sharding(rank, split.get(position))
        if argument.endswith("}"):  # attributes already: add the sharding to them
            argument, attribute = argument[:-1] + ", " + attribute[1:-1] + "}", ""
        annotated_arguments.append(("" if argument.startswith("%") else "%") + argument + (" " + attribute).rstrip())
    annotated_results = ", ".join(f"{result} {sharding(rank)}" for result, rank in zip(results, result_ranks))
    function = f"  func.func @main({', '.join(annotated_arguments)}) -> ({annotated_results}) {{"
    module = (
        f"module @topos attributes {{mhlo.num_partitions = {devices} : i32, mhlo.num_replicas = 1 : i32}} {{\n"
        f'  sdy.mesh @mesh = <["{MESH_AXIS}"={devices}]>'
    )
    text = text[: header.start()] + function + text[header.end() :]
    return text.replace("module @topos {", module, 1)
