// The page's side of the graph layout worker: one request at a time per caller,
// answered with positions; an answer to a request that a newer one replaced is dropped.

import LayoutWorker from "./graph-layout.worker?worker";

/** What dagre places: boxes (nodes and collapsed groups) by id, the expanded groups they sit in, and edges. */
export interface LayoutInput {
  boxes: { id: string; width: number; height: number }[];
  /** [box or frame, the expanded group (frame) around it]: dagre keeps each frame's members together. */
  parents: [string, string][];
  edges: [string, string][];
}

export interface LayoutRequest extends LayoutInput {
  id: number;
  /** False to lay out again even when the same graph was laid out before (the benchmark's ?layoutCache=0). */
  cache: boolean;
}

export interface Layout {
  width: number;
  height: number;
  /** Each box's and each frame's centre and size. */
  boxes: Record<string, { x: number; y: number; width: number; height: number }>;
  /** Each edge's polyline, in the request's order of edges. */
  edges: [number, number][][];
  /** Milliseconds dagre took in the worker (0: the layout came from its cache). */
  ms: number;
}

export interface LayoutResult {
  id: number;
  layout: Layout;
}

export const NODE_HEIGHT = 34;
/** Layouts are reused unless the page is opened with ?layoutCache=0 (the benchmark's). */
export const USE_CACHE = new URLSearchParams(self.location.search).get("layoutCache") !== "0";
export const CHARACTER_WIDTH = 7.2;

// A box is laid out in room for its label rounded up to whole steps of this many characters, so that
// an edit that lengthens a label a little ([16, 96] to [16, 100]) keeps the layout, and every box its place.
const LABEL_STEP = 4;

/** The width a box is laid out in: its label's (and `extra` pixels), rounded up to whole steps. */
export function boxWidth(label: string, extra = 0): number {
  return Math.ceil(label.length / LABEL_STEP) * LABEL_STEP * CHARACTER_WIDTH + 16 + extra;
}

/** What a layout depends on: inputs with the same key have the same layout. */
export function layoutKey(input: LayoutInput): string {
  return JSON.stringify([input.boxes, input.parents, input.edges]);
}

let worker: Worker | null = null;
let nextId = 1;
const waiting = new Map<number, (result: Layout) => void>();

/** Positions for the boxes and frames of `input`, and the edges' polylines. */
export function layOut(input: LayoutInput): Promise<Layout> {
  if (!worker) {
    worker = new LayoutWorker({ name: "graph-layout" });
    worker.addEventListener("message", (event: MessageEvent<LayoutResult>) => {
      waiting.get(event.data.id)?.(event.data.layout);
      waiting.delete(event.data.id);
    });
  }
  const request: LayoutRequest = { id: nextId++, cache: USE_CACHE, ...input };
  return new Promise((resolve) => {
    waiting.set(request.id, resolve);
    worker!.postMessage(request);
  });
}
