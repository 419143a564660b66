// Lays graphs out with dagre off the main thread: a large graph (a transformer's few
// hundred nodes, a recording of thousands) takes dagre from a few hundred milliseconds to
// seconds, which the editor must not feel. Expanded groups are dagre's compound nodes, so
// that a group's members stay together inside its frame. The last few layouts are kept, so a
// graph seen again (an edit that does not change the recording, an undo) is answered at once.

import dagre from "@dagrejs/dagre";
import type { Layout, LayoutRequest, LayoutResult } from "./graph-layout";

const CACHE_SIZE = 8;
const cache = new Map<string, Layout>();

function layOut(request: LayoutRequest): Layout {
  const started = performance.now();
  const compound = request.parents.length > 0;
  const graph = new dagre.graphlib.Graph({ compound });
  // The tight-tree ranker: a third cheaper than dagre's default (network simplex, which starts from the
  // same tight tree), and for the gallery's graphs the same picture.
  graph.setGraph({ rankdir: "TB", ranker: "tight-tree", nodesep: 14, ranksep: 26, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const box of request.boxes) graph.setNode(box.id, { width: box.width, height: box.height });
  for (const [child, parent] of request.parents) {
    if (!graph.hasNode(parent)) graph.setNode(parent, {});
    graph.setParent(child, parent);
  }
  for (const [from, to] of request.edges) {
    if (graph.hasNode(from) && graph.hasNode(to) && !graph.hasEdge(from, to)) graph.setEdge(from, to);
  }
  dagre.layout(graph);
  const { width = 0, height = 0 } = graph.graph();
  const boxes: Layout["boxes"] = {};
  for (const id of graph.nodes()) {
    const { x, y, width: w, height: h } = graph.node(id);
    boxes[id] = { x, y, width: w, height: h };
  }
  return {
    width,
    height,
    boxes,
    edges: request.edges.map(([from, to]) => {
      const edge = graph.edge(from, to);
      return (edge?.points ?? []).map((p: { x: number; y: number }) => [p.x, p.y] as [number, number]);
    }),
    ms: performance.now() - started,
  };
}

self.addEventListener("message", (event: MessageEvent<LayoutRequest>) => {
  const request = event.data;
  const key = JSON.stringify([request.boxes, request.parents, request.edges]);
  let layout = request.cache ? cache.get(key) : undefined;
  if (layout) {
    cache.delete(key); // re-inserted below: the most recently used is the last to go
    layout = { ...layout, ms: 0 };
  } else {
    layout = layOut(request);
  }
  cache.set(key, layout);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  self.postMessage({ id: request.id, layout } satisfies LayoutResult);
});
