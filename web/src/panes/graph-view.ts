// One graph on screen, at any size: laid out in the layout worker, drawn as SVG, zoomed and
// panned (zoom-pan.ts), its groups (graph-groups.ts) collapsed or expanded in place. The graph
// pane, the output pane's graph cards, the embed and JupyterLab all draw graphs through it.
//
// A graph opens fitted to the view when it is readable so. A larger one opens on its model: its
// groups collapsed, and the top-level groups fitted whole down to a floor of scale (their names
// drawn at a readable size however small the boxes, graph-view.css; past the floor, the topmost
// groups), as Netron and TensorBoard open a large graph fitted;
// a graph without groups opens at a readable scale on its sources (at the top: the graph runs
// downwards from its inputs and parameters). The fit control shows the whole. A graph of more
// than EXPANDED_UP_TO nodes always opens with its groups collapsed: a transformer reads as its
// blocks (layer_norm, causal_self_attention, mlp), each opened in place by its "+". A node that
// holds a body (a scan's step, a cond's branches) is a group too, collapsed until opened
// (graph-bodies.ts). A group's "+" is a button: Tab reaches it, Enter or Space opens it.

import type { GraphJson } from "../../protocol";
import { unfold, withBodies } from "./graph-bodies";
import { drawLayout, itemBox, labelNode, type Drawing } from "./graph-draw";
import { groupNodes, visibleItems, type Group, type Grouping, type Visible } from "./graph-groups";
import { layOut, layoutKey, USE_CACHE, type Layout, type LayoutInput } from "./graph-layout";
import "./graph-view.css";
import { ZoomPan, type Rect } from "./zoom-pan";

/** Graphs up to this many nodes open with every group expanded; larger ones with every group collapsed. */
export const EXPANDED_UP_TO = 80;

export interface GraphViewOptions {
  /** A click on a node or a group box selects its nodes. */
  onSelect?: (nodes: number[]) => void;
  /** Where the keyboard's zoom and pan keys are heard (the pane's tab panel); the view itself by default. */
  keyTarget?: HTMLElement;
  /** A card among others in a scrolling list: the wheel zooms only with Ctrl or Cmd, and the card is as tall as it needs up to a limit. */
  card?: boolean;
}

const CARD_MAX_HEIGHT = 420;
const CARD_MIN_HEIGHT = 96;

function button(action: string, label: string): HTMLButtonElement {
  const control = document.createElement("button");
  control.type = "button";
  control.dataset.action = action;
  // The label is the button's name and its tooltip; the glyph is drawn by the stylesheet, so that the
  // view's text content stays the graph's labels alone.
  control.ariaLabel = label;
  control.title = label;
  return control;
}

export class GraphView {
  readonly element: HTMLDivElement;
  private readonly canvas: HTMLDivElement;
  private readonly zoom: ZoomPan;
  private readonly expandAll: HTMLButtonElement;
  /** The recording's graph with its bodies' nodes numbered in (graph-bodies.ts). */
  private graph: GraphJson | null = null;
  private grouping: Grouping | null = null;
  private visible: Visible | null = null;
  private layout: Layout | null = null;
  private drawing: Drawing | null = null;
  private drawnKey: string | null = null;
  /** The groups the user opened or closed (by id), over the default for the graph's size. */
  private readonly choices = new Map<string, boolean>();
  private selected = new Set<number>();
  private generation = 0;
  /** Whether the drawing on screen has had its opening view (the first drawing, and after a new recording). */
  private opened = false;
  /** Whether a group the user has not opened or closed is drawn expanded: small graphs, until their opening view does not fit. */
  private expandedByDefault = true;

  constructor(private readonly options: GraphViewOptions = {}) {
    this.element = document.createElement("div");
    this.element.className = options.card ? "graph-view graph-view-card" : "graph-view";
    this.canvas = document.createElement("div");
    this.canvas.className = "graph-canvas";
    const controls = document.createElement("div");
    controls.className = "graph-controls";
    controls.role = "toolbar";
    controls.ariaLabel = "Graph view";
    const zoomOut = button("zoom-out", "Zoom out (-)");
    const zoomIn = button("zoom-in", "Zoom in (+)");
    const fit = button("fit", "Fit the whole graph (0)");
    this.expandAll = button("expand-all", "Expand every group");
    controls.append(zoomOut, zoomIn, fit, this.expandAll);
    this.element.append(this.canvas, controls);
    if (!options.keyTarget) this.element.tabIndex = 0;
    this.zoom = new ZoomPan(this.canvas, options.keyTarget ?? this.element, { wheelNeedsModifier: Boolean(options.card) });
    zoomOut.addEventListener("click", () => this.zoom.zoomBy(0.8));
    zoomIn.addEventListener("click", () => this.zoom.zoomBy(1.25));
    fit.addEventListener("click", () => this.zoom.fit());
    this.expandAll.addEventListener("click", () => this.setAll(this.expandAll.dataset.state !== "expanded"));
    this.canvas.addEventListener("click", (event) => this.click(event));
    this.canvas.addEventListener("keydown", (event) => {
      const toggle = (event.target as Element).closest?.("[data-toggle]")?.getAttribute("data-toggle");
      if (!toggle || (event.key !== "Enter" && event.key !== " ")) return;
      event.preventDefault();
      this.toggle(toggle, true);
    });
    this.canvas.addEventListener("dblclick", (event) => {
      const target = event.target as Element;
      const group = target.closest("[data-group]")?.getAttribute("data-group");
      if (group && !target.closest("[data-toggle]")) this.toggle(group); // a double click on a toggle toggled twice already
    });
  }

  /** Lay out and draw `graph`; resolves once it is drawn (or a newer graph replaced it). */
  async show(graph: GraphJson): Promise<void> {
    const unfolded = unfold(graph);
    const sameShape = this.graph !== null && shapeOf(this.graph) === shapeOf(unfolded.graph);
    if (!sameShape) {
      this.choices.clear();
      this.expandedByDefault = graph.nodes.length <= EXPANDED_UP_TO;
    }
    this.graph = unfolded.graph;
    this.grouping = withBodies(groupNodes(graph), unfolded);
    // A new recording opens afresh, unless the user has moved the view since the last one opened: then it stays.
    await this.redraw(!sameShape && !this.zoom.touched);
  }

  /** The view was taken off the page for good: a layout still on its way is dropped, and the zoom lets go. */
  dispose(): void {
    this.generation++;
    this.zoom.dispose();
  }

  /** Mark the boxes that show the selected nodes, and bring the first into view. */
  highlight(selected: Set<number>): void {
    this.mark(selected, true);
  }

  private mark(selected: Set<number>, reveal: boolean): void {
    this.selected = selected;
    if (!this.drawing || !this.visible) return;
    const lit = new Set<string>();
    for (const index of selected) {
      const id = this.visible.shownBy.get(index);
      if (id) lit.add(id);
    }
    for (const [id, element] of this.drawing.elements) {
      if (!element.classList.contains("frame")) element.classList.toggle("linked", lit.has(id));
    }
    if (!reveal) return;
    const first = [...selected].sort((a, b) => a - b).map((index) => this.visible!.shownBy.get(index)).find((id) => id !== undefined);
    const box = first && this.layout?.boxes[first];
    if (box) this.zoom.reveal({ x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width, height: box.height });
  }

  /** The drawing's rectangle in view and the scale (for tests: `data-scale` says the scale too). */
  view(): Rect & { scale: number } {
    return this.zoom.visible();
  }

  private isExpanded(group: Group): boolean {
    return this.choices.get(group.id) ?? group.opens ?? this.expandedByDefault;
  }

  /** Open or close the group `id`; `refocus`: its toggle had the keyboard's focus, which the new drawing's toggle gets. */
  private toggle(id: string, refocus = false): void {
    const group = this.grouping?.groups.find((candidate) => candidate.id === id);
    if (!group) return;
    this.choices.set(id, !this.isExpanded(group));
    // The group opened or closed stays in sight: its frame, or its box, is brought into view.
    void this.redraw(false, id).then(() => {
      if (refocus) this.canvas.querySelector<SVGGElement>(`[data-toggle="${CSS.escape(id)}"]`)?.focus();
    });
  }

  private setAll(expanded: boolean): void {
    for (const group of this.grouping?.groups ?? []) this.choices.set(group.id, expanded);
    void this.redraw(false);
  }

  private click(event: MouseEvent): void {
    const target = event.target as Element;
    const toggle = target.closest("[data-toggle]")?.getAttribute("data-toggle");
    if (toggle) return this.toggle(toggle);
    const nodes = target.closest(".node, .group")?.getAttribute("data-nodes");
    if (nodes && this.options.onSelect) this.options.onSelect(nodes.split(" ").map(Number));
  }

  /** Lay out and draw what is visible; `reopen` gives the opening view, `focus` names a box or frame to keep in sight. */
  private async redraw(reopen: boolean, focus?: string): Promise<void> {
    const generation = ++this.generation;
    const graph = this.graph!;
    const grouping = this.grouping!;
    const expanded = new Set(grouping.groups.filter((group) => this.isExpanded(group)).map((group) => group.id));
    const visible = visibleItems(graph, grouping, expanded);
    const nodes = new Map(graph.nodes.map((node) => [node.index, node]));
    const input: LayoutInput = {
      boxes: visible.items.map((item) => itemBox(item, nodes)),
      parents: [
        ...visible.items.filter((item) => item.frame).map((item) => [item.id, item.frame!.id] as [string, string]),
        ...visible.frames.filter((group) => group.parent && expanded.has(group.parent.id)).map((group) => [group.id, group.parent!.id] as [string, string]),
      ],
      edges: visible.edges,
    };
    const all = grouping.groups.length > 0 && expanded.size === grouping.groups.length;
    this.expandAll.hidden = grouping.groups.length === 0;
    this.expandAll.dataset.state = all ? "expanded" : "collapsed";
    this.expandAll.ariaLabel = this.expandAll.title = all ? "Collapse every group" : "Expand every group";
    const key = layoutKey(input);
    if (USE_CACHE && key === this.drawnKey && this.drawing && this.layout) {
      // The same layout as the one drawn: every box keeps its place, and only changed labels are written.
      for (const item of visible.items) {
        if (item.kind === "node") labelNode(this.drawing.elements.get(item.id)!, nodes.get(item.index)!, this.layout.boxes[item.id]);
      }
      this.visible = visible;
      this.mark(this.selected, focus === undefined);
      return;
    }
    this.element.ariaBusy = "true";
    const layout = await layOut(input);
    if (generation !== this.generation) return;
    const arrived = performance.now();
    const previous = focus ?? this.focusPoint();
    this.drawing = drawLayout(graph, visible, layout);
    this.visible = visible;
    this.layout = layout;
    this.drawnKey = key;
    this.canvas.replaceChildren(this.drawing.svg);
    // The drawing's own measure, for the benchmark and the tests: boxes drawn and dagre's milliseconds.
    this.element.dataset.boxes = String(visible.items.length);
    this.element.dataset.layoutMs = layout.ms.toFixed(0);
    // The milliseconds the page spent building the drawing (not counting the browser's style, layout and paint of it).
    this.element.dataset.drawMs = (performance.now() - arrived).toFixed(0);
    if (this.options.card) this.canvas.style.height = `${Math.max(CARD_MIN_HEIGHT, Math.min(CARD_MAX_HEIGHT, layout.height + 16))}px`;
    this.zoom.setDrawing(this.drawing.svg, layout.width, layout.height);
    if (reopen || !this.opened) {
      this.opened = true;
      this.zoom.open(this.opening(layout, visible), () => this.collapseToOpen());
      if (generation !== this.generation) return; // it opens collapsed instead: that drawing is on its way
    } else {
      // A group opened or closed, or a new recording in a view the user moved: what was at the centre
      // of the view (or the group toggled) is brought into view; a view left with no box in it opens afresh.
      const box = previous ? layout.boxes[previous] : undefined;
      if (box) this.zoom.reveal({ x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width, height: box.height });
      else if (!this.anyBoxInView(layout)) this.zoom.open(this.opening(layout, visible));
    }
    this.element.ariaBusy = "false";
    // After a group was opened or closed, the view stays on it rather than going back to the selection.
    this.mark(this.selected, focus === undefined);
  }

  private anyBoxInView(layout: Layout): boolean {
    const seen = this.zoom.visible();
    return Object.values(layout.boxes).some(
      (box) => box.x + box.width / 2 > seen.x && box.x - box.width / 2 < seen.x + seen.width && box.y + box.height / 2 > seen.y && box.y - box.height / 2 < seen.y + seen.height,
    );
  }

  /** The item (or frame) nearest the centre of the view, to keep in sight across a re-layout. */
  private focusPoint(): string | null {
    if (!this.layout) return null;
    const seen = this.zoom.visible();
    const cx = seen.x + seen.width / 2;
    const cy = seen.y + seen.height / 2;
    let best: string | null = null;
    let distance = Infinity;
    for (const [id, box] of Object.entries(this.layout.boxes)) {
      const d = Math.hypot(box.x - cx, box.y - cy);
      if (d < distance) [best, distance] = [id, d];
    }
    return best;
  }

  /**
   * A graph drawn with its groups expanded by default that does not fit the view readably opens with
   * them collapsed: its model's calls (layers, conv2d, a topos.grad) then show whole, as boxes. True
   * when it is drawn again so.
   */
  private collapseToOpen(): boolean {
    if (!this.expandedByDefault || this.choices.size || !this.grouping?.groups.length) return false;
    this.expandedByDefault = false;
    this.opened = false;
    void this.redraw(true);
    return true;
  }

  /** Where a graph opens when it is too large to fit readably: its top-level groups (and the topmost of them), else its sources. */
  private opening(layout: Layout, visible: Visible): { groups: Rect | null; first: Rect | null; sources: Rect } {
    const tops = [
      ...visible.items.filter((item) => item.kind === "group" && !item.frame).map((item) => item.id),
      ...visible.frames.filter((group) => !group.parent).map((group) => group.id),
    ];
    const boxes = tops.map((id) => layout.boxes[id]).filter(Boolean);
    const first = boxes.reduce<(typeof boxes)[number] | null>((best, box) => (!best || box.y - box.height / 2 < best.y - best.height / 2 ? box : best), null);
    return { groups: boundingBox(boxes), first: first && boundingBox([first]), sources: this.sources(layout, visible) };
  }

  /** The rectangle of the items at the top rank (the graph's sources). */
  private sources(layout: Layout, visible: Visible): Rect {
    const boxes = visible.items.map((item) => layout.boxes[item.id]).filter(Boolean);
    if (!boxes.length) return { x: 0, y: 0, width: layout.width, height: 0 };
    const top = Math.min(...boxes.map((box) => box.y));
    const row = boxes.filter((box) => box.y <= top + 1);
    const left = Math.min(...row.map((box) => box.x - box.width / 2));
    const right = Math.max(...row.map((box) => box.x + box.width / 2));
    return { x: left, y: top - row[0].height / 2, width: right - left, height: row[0].height };
  }
}

/** The rectangle around boxes given by their centres and sizes (null for none). */
function boundingBox(boxes: Layout["boxes"][string][]): Rect | null {
  if (!boxes.length) return null;
  const left = Math.min(...boxes.map((box) => box.x - box.width / 2));
  const top = Math.min(...boxes.map((box) => box.y - box.height / 2));
  const right = Math.max(...boxes.map((box) => box.x + box.width / 2));
  const bottom = Math.max(...boxes.map((box) => box.y + box.height / 2));
  return { x: left, y: top, width: right - left, height: bottom - top };
}

/** What stays when a recording changes only in its labels: the nodes' count and opcodes, the edges. */
function shapeOf(graph: GraphJson): string {
  return JSON.stringify([graph.nodes.map((node) => [node.opcode, node.scope ?? null]), graph.edges]);
}
