// The graph drawn as SVG from a layout (graph-layout.ts) of what is visible (graph-groups.ts):
// nodes as labelled boxes ("k Opcode shape"), collapsed groups as boxes that name the call and
// hold a "+" to open them, expanded groups as frames (with a "−") around their members, and the
// edges. Every label is SVG text (textContent); one node or group is one line of the drawing's
// text, in the recording's order.

import type { GraphJson } from "../../protocol";
import type { GraphNode } from "./graph-bodies";
import type { Group, Item, Visible } from "./graph-groups";
import { boxWidth, NODE_HEIGHT, type Layout } from "./graph-layout";

const SVG = "http://www.w3.org/2000/svg";
/** Room at a group box's left for its "+" toggle. */
export const TOGGLE_ROOM = 18;
const TOGGLE_SIZE = 10;

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

export function nodeLabel(node: GraphNode): string {
  return `${node.local ?? node.index} ${node.opcode} ${node.shape}`;
}

export function groupLabel(group: Group): string {
  return `${group.name} · ${group.count ?? `${group.nodes.length} nodes`}`;
}

/** What selecting `indices` selects: the recording's nodes (a body's node stands for the node holding it). */
function selects(indices: number[], nodes: Map<number, GraphNode>): string {
  return [...new Set(indices.map((index) => nodes.get(index)?.holder ?? index))].join(" ");
}

/** The box dagre lays an item out in. */
export function itemBox(item: Item, nodes: Map<number, GraphNode>): { id: string; width: number; height: number } {
  if (item.kind === "node") return { id: item.id, width: boxWidth(nodeLabel(nodes.get(item.index)!)), height: NODE_HEIGHT };
  return { id: item.id, width: boxWidth(groupLabel(item.group), TOGGLE_ROOM), height: NODE_HEIGHT };
}

export interface Drawing {
  svg: SVGSVGElement;
  /** The element of each node, group box and frame, by item id (a frame by its group's id). */
  elements: Map<string, SVGGElement>;
}

let drawings = 0;

/**
 * A "+" (open) or "−" (close) in a small square at (x, y), a control that toggles `group`: a button
 * the Tab key reaches and Enter or Space presses (graph-view.ts), named for the group it opens.
 */
function toggle(group: Group, x: number, y: number, open: boolean): SVGGElement {
  const control = svg("g", { class: "toggle", "data-toggle": group.id, transform: `translate(${x},${y})` });
  control.setAttribute("tabindex", "0");
  control.setAttribute("role", "button");
  control.setAttribute("aria-expanded", String(open));
  control.setAttribute("aria-label", `${open ? "Collapse" : "Expand"} ${groupLabel(group)}`);
  const half = TOGGLE_SIZE / 2;
  control.append(svg("rect", { width: TOGGLE_SIZE, height: TOGGLE_SIZE, rx: 2 }));
  const bar = `M2,${half} H${TOGGLE_SIZE - 2}`;
  control.append(svg("path", { d: open ? bar : `${bar} M${half},2 V${TOGGLE_SIZE - 2}` }));
  return control;
}

/** Draw `visible`, laid out as `layout`. */
export function drawLayout(graph: GraphJson, visible: Visible, layout: Layout): Drawing {
  const arrow = `topos-arrow-${++drawings}`;
  const root = svg("svg", { class: "graph-drawing", role: "group", "aria-label": "Graph", width: "100%", height: "100%", viewBox: `0 0 ${layout.width} ${layout.height}` });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: arrow, viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow-head" }));
  defs.append(marker);
  const elements = new Map<string, SVGGElement>();
  const nodes = new Map<number, GraphNode>(graph.nodes.map((node) => [node.index, node]));

  const frames = svg("g", { class: "frames" });
  for (const group of visible.frames) {
    const box = layout.boxes[group.id];
    if (!box) continue;
    const frame = svg("g", { class: "frame", "data-group": group.id, "data-nodes": selects(group.nodes, nodes), transform: `translate(${box.x - box.width / 2},${box.y - box.height / 2})` });
    frame.append(svg("rect", { width: box.width, height: box.height, rx: 6 }));
    // The name sits on the frame's top edge, as a fieldset's legend does.
    const legend = svg("text", { x: TOGGLE_ROOM + 4, y: 4 });
    // A body's frame says what it runs (its count of steps) as its box did; a call's, its name.
    legend.textContent = group.count ? groupLabel(group) : group.name;
    frame.append(toggle(group, 4, -TOGGLE_SIZE / 2, true), legend);
    if (frames.childNodes.length) frames.append("\n");
    frames.append(frame);
    elements.set(group.id, frame);
  }

  const edges = svg("g", { class: "edges" });
  for (const points of layout.edges) {
    if (!points.length) continue;
    const path = points.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
    edges.append(svg("path", { d: path, "marker-end": `url(#${arrow})` }));
  }
  root.append(defs, frames, edges);
  if (visible.frames.length) root.append("\n");

  let first = true;
  for (const item of visible.items) {
    const box = layout.boxes[item.id];
    if (!box) continue;
    const element = svg("g", {});
    element.append(svg("rect", { height: NODE_HEIGHT, rx: 5 }), svg("text", { y: 21, "text-anchor": "middle" }));
    if (item.kind === "node") {
      element.setAttribute("data-nodes", selects([item.index], nodes));
      labelNode(element, nodes.get(item.index)!, box);
    } else {
      const label = groupLabel(item.group);
      const width = label.length * 7.2 + 16 + TOGGLE_ROOM;
      element.setAttribute("class", "group");
      element.setAttribute("data-group", item.group.id);
      element.setAttribute("data-nodes", selects(item.group.nodes, nodes));
      element.setAttribute("transform", `translate(${box.x - width / 2},${box.y - NODE_HEIGHT / 2})`);
      const [rect, text] = element.children;
      rect.setAttribute("width", String(width));
      text.setAttribute("x", String(TOGGLE_ROOM + (width - TOGGLE_ROOM) / 2));
      // The name and the count apart: far out, the name alone is drawn (graph-view.css); the text reads as the label.
      const name = svg("tspan", {});
      name.textContent = item.group.name;
      const count = svg("tspan", { class: "group-count" });
      count.textContent = label.slice(item.group.name.length);
      text.replaceChildren(name, count);
      element.append(toggle(item.group, 6, (NODE_HEIGHT - TOGGLE_SIZE) / 2, false));
    }
    // A newline between items makes the drawing's text content read one label a line.
    if (!first) root.append("\n");
    first = false;
    root.append(element);
    elements.set(item.id, element);
  }
  return { svg: root, elements };
}

/**
 * Write a node's label into its element (made by `drawLayout`): the box sized to the label and centred on
 * the node's place. An element that already shows the label is left alone.
 */
export function labelNode(element: SVGGElement, node: GraphNode, { x, y }: { x: number; y: number }): void {
  const label = nodeLabel(node);
  const text = element.children[1];
  if (text.textContent === label) return;
  const width = label.length * 7.2 + 16;
  const linked = element.classList.contains("linked");
  element.setAttribute("class", `node op-${node.opcode.toLowerCase()}${linked ? " linked" : ""}`);
  element.setAttribute("transform", `translate(${x - width / 2},${y - NODE_HEIGHT / 2})`);
  element.children[0].setAttribute("width", String(width));
  text.setAttribute("x", String(width / 2));
  text.textContent = label;
}
