// The graph reading: nodes laid out by dagre (in a worker, see graph-layout.ts), drawn
// as SVG. Every label is SVG text (textContent), one node a line of the pane's text
// content: "k Opcode shape".

import type { GraphJson, Reading } from "../../protocol";
import { graphLabel, layOut, layoutKey, USE_CACHE, type LayoutResult } from "./graph-layout";

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

type Position = { x: number; y: number };

/** Draw a laid-out graph into `host`; returns the node groups by index. */
function draw(host: Element, graph: GraphJson, layout: LayoutResult["layout"]): Map<number, SVGGElement> {
  const root = svg("svg", { width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`, role: "img" });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow-head" }));
  defs.append(marker);
  const edges = svg("g", { class: "edges" });
  for (const points of layout.edges) {
    const path = points.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
    edges.append(svg("path", { d: path, "marker-end": "url(#arrow)" }));
  }
  root.append(defs, edges);

  const positions = new Map(layout.nodes.map((node) => [node.index, node]));
  const groups = new Map<number, SVGGElement>();
  for (const node of graph.nodes) {
    const group = svg("g", { "data-nodes": node.index });
    group.append(svg("rect", { height: 34, rx: 5 }), svg("text", { y: 21, "text-anchor": "middle" }));
    labelNode(group, node, positions.get(node.index)!);
    // A newline between nodes makes the pane's text content read one label a line.
    if (groups.size) root.append("\n");
    root.append(group);
    groups.set(node.index, group);
  }
  host.replaceChildren(root);
  return groups;
}

/**
 * Write a node's label into its group (drawn by `draw`): the box sized to the label and centred on
 * the node's place. A group that already shows the label is left alone.
 */
function labelNode(group: SVGGElement, node: GraphJson["nodes"][number], { x, y }: Position): void {
  const label = graphLabel(node);
  const text = group.lastElementChild!;
  if (text.textContent === label) return;
  const width = label.length * 7.2 + 16;
  group.setAttribute("class", `node op-${node.opcode.toLowerCase()}`); // the selection's class is put back by highlight()
  group.setAttribute("transform", `translate(${x - width / 2},${y - 17})`);
  group.firstElementChild!.setAttribute("width", String(width));
  text.setAttribute("x", String(width / 2));
  text.textContent = label;
}

/** Lay out and draw `graph` into `host` (the output pane's graph cards). */
export async function drawGraph(host: Element, graph: GraphJson): Promise<void> {
  draw(host, graph, await layOut(graph));
}

export class GraphPane {
  readonly element: HTMLDivElement;
  private groups = new Map<number, SVGGElement>();
  private generation = 0;
  private selected = new Set<number>();
  /** The layout key (graph-layout.ts) of the graph drawn now; null when none is drawn. */
  private drawnKey: string | null = null;
  private positions = new Map<number, Position>();

  constructor(private readonly onSelect: (nodes: number[]) => void) {
    this.element = document.createElement("div");
    this.element.className = "reading graph-reading";
    this.element.dataset.reading = "graph";
    this.element.addEventListener("click", (event) => {
      const group = (event.target as Element).closest("[data-nodes]");
      const nodes = group?.getAttribute("data-nodes");
      if (nodes) this.onSelect(nodes.split(" ").map(Number));
    });
  }

  /** Draws the reading once its layout arrives; a newer render makes an older one give up. */
  async render(reading: Reading): Promise<void> {
    const generation = ++this.generation;
    this.element.classList.toggle("reading-error", Boolean(reading.error));
    if (!reading.graph) {
      this.groups.clear();
      this.drawnKey = null;
      this.element.textContent = reading.error ?? reading.empty ?? "";
      return;
    }
    const key = layoutKey(reading.graph);
    if (USE_CACHE && key === this.drawnKey) {
      // The same layout as the graph drawn now: every node keeps its place, and only changed labels are written.
      for (const node of reading.graph.nodes) labelNode(this.groups.get(node.index)!, node, this.positions.get(node.index)!);
      this.highlight(this.selected);
      return;
    }
    this.element.ariaBusy = "true";
    this.drawnKey = null; // until the new layout is drawn
    const layout = await layOut(reading.graph);
    if (generation !== this.generation) return;
    this.groups = draw(this.element, reading.graph, layout);
    this.positions = new Map(layout.nodes.map((node) => [node.index, node]));
    this.drawnKey = key;
    this.element.ariaBusy = "false";
    this.highlight(this.selected);
  }

  highlight(selected: Set<number>): void {
    this.selected = selected;
    let first: SVGGElement | null = null;
    for (const [index, group] of this.groups) {
      const on = selected.has(index);
      group.classList.toggle("linked", on);
      if (on && !first) first = group;
    }
    first?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}
