// Lays graphs out with dagre off the main thread: a large graph (a transformer's few
// hundred nodes) takes dagre a few hundred milliseconds, which the editor must not feel.
// The last few layouts are kept, so a graph seen again (an edit that does not change
// the recording, an undo) is answered at once.

import dagre from "@dagrejs/dagre";
import type { LayoutRequest, LayoutResult } from "./graph-layout";

const CACHE_SIZE = 8;
const cache = new Map<string, LayoutResult["layout"]>();

function layOut(request: LayoutRequest): LayoutResult["layout"] {
  const graph = new dagre.graphlib.Graph();
  // The tight-tree ranker: a third cheaper than dagre's default (network simplex, which starts from the
  // same tight tree), and for the gallery's graphs the same picture.
  graph.setGraph({ rankdir: "TB", ranker: "tight-tree", nodesep: 14, ranksep: 26, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of request.nodes) graph.setNode(String(node.index), { width: node.width, height: node.height });
  for (const [from, to] of request.edges) {
    // A node that reads one value twice (x * x) is drawn with one edge.
    if (graph.hasNode(String(from)) && !graph.hasEdge(String(from), String(to))) graph.setEdge(String(from), String(to));
  }
  dagre.layout(graph);
  const { width = 0, height = 0 } = graph.graph();
  return {
    width,
    height,
    nodes: request.nodes.map((node) => {
      const box = graph.node(String(node.index));
      return { index: node.index, x: box.x, y: box.y };
    }),
    edges: graph.edges().map((edge) => (graph.edge(edge).points ?? []).map((p: { x: number; y: number }) => [p.x, p.y] as [number, number])),
  };
}

self.addEventListener("message", (event: MessageEvent<LayoutRequest>) => {
  const request = event.data;
  const key = JSON.stringify([request.nodes, request.edges]);
  let layout = request.cache ? cache.get(key) : undefined;
  if (layout) {
    cache.delete(key); // re-inserted below: the most recently used is the last to go
  } else {
    layout = layOut(request);
  }
  cache.set(key, layout);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  self.postMessage({ id: request.id, layout } satisfies LayoutResult);
});
