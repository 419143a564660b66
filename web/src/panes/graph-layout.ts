// The page's side of the graph layout worker: one request at a time per caller,
// answered with positions; an answer to a request that a newer one replaced is dropped.

import type { GraphJson } from "../../protocol";
import LayoutWorker from "./graph-layout.worker?worker";

export interface LayoutRequest {
  id: number;
  /** False to lay out again even when the same graph was laid out before (the benchmark's ?layoutCache=0). */
  cache: boolean;
  nodes: { index: number; width: number; height: number }[];
  edges: [number, number][];
}

export interface LayoutResult {
  id: number;
  layout: {
    width: number;
    height: number;
    nodes: { index: number; x: number; y: number }[];
    /** Each edge's polyline, in dagre's order of edges. */
    edges: [number, number][][];
  };
}

const NODE_HEIGHT = 34;
/** Layouts are reused unless the page is opened with ?layoutCache=0 (the benchmark's). */
export const USE_CACHE = new URLSearchParams(self.location.search).get("layoutCache") !== "0";
const CHARACTER_WIDTH = 7.2;

export function graphLabel(node: GraphJson["nodes"][number]): string {
  return `${node.index} ${node.opcode} ${node.shape}`;
}

// A node is laid out in room for its label rounded up to whole steps of this many characters, so that
// an edit that lengthens a label a little ([16, 96] to [16, 100]) keeps the layout, and every node its place.
const LABEL_STEP = 4;

/** The width a node's box is laid out in: its label's, rounded up to whole steps. */
export function boxWidth(node: GraphJson["nodes"][number]): number {
  return Math.ceil(graphLabel(node).length / LABEL_STEP) * LABEL_STEP * CHARACTER_WIDTH + 16;
}

/** What a layout depends on: the boxes' sizes and the edges. Graphs with the same key have the same layout. */
export function layoutKey(graph: GraphJson): string {
  return JSON.stringify([graph.nodes.map((node) => [node.index, boxWidth(node)]), graph.edges]);
}

let worker: Worker | null = null;
let nextId = 1;
const waiting = new Map<number, (result: LayoutResult["layout"]) => void>();

/** Positions for `graph`'s nodes (boxes sized to their labels) and edges. */
export function layOut(graph: GraphJson): Promise<LayoutResult["layout"]> {
  if (!worker) {
    worker = new LayoutWorker({ name: "graph-layout" });
    worker.addEventListener("message", (event: MessageEvent<LayoutResult>) => {
      waiting.get(event.data.id)?.(event.data.layout);
      waiting.delete(event.data.id);
    });
  }
  const request: LayoutRequest = {
    id: nextId++,
    cache: USE_CACHE,
    nodes: graph.nodes.map((node) => ({ index: node.index, width: boxWidth(node), height: NODE_HEIGHT })),
    edges: graph.edges,
  };
  return new Promise((resolve) => {
    waiting.set(request.id, resolve);
    worker!.postMessage(request);
  });
}
