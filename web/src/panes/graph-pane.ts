// The graph reading: the recording's nodes laid out by dagre (in a worker, see graph-layout.ts),
// drawn as SVG and shown at any size by a GraphView (graph-view.ts): zoomed, panned, fitted, its
// groups of nodes (one call each: layer_norm, the user's own functions) collapsed or expanded in
// place. Every label is SVG text (textContent), one node or group a line of the pane's text
// content: "k Opcode shape". A node selected anywhere is brought into view.

import type { Reading } from "../../protocol";
import { GraphView } from "./graph-view";

export class GraphPane {
  readonly element: HTMLDivElement;
  private readonly view: GraphView;
  private generation = 0;

  constructor(onSelect: (nodes: number[]) => void) {
    this.element = document.createElement("div");
    this.element.className = "reading graph-reading";
    this.element.dataset.reading = "graph";
    // The pane is a tab panel that takes focus: there the keyboard zooms and pans the graph.
    this.view = new GraphView({ onSelect, keyTarget: this.element });
  }

  /** Draws the reading once its layout arrives; a newer render makes an older one give up. */
  async render(reading: Reading): Promise<void> {
    const generation = ++this.generation;
    this.element.classList.toggle("reading-error", Boolean(reading.error));
    if (!reading.graph) {
      this.element.textContent = reading.error ?? reading.empty ?? "";
      return;
    }
    if (this.view.element.parentNode !== this.element) this.element.replaceChildren(this.view.element);
    this.element.ariaBusy = "true";
    await this.view.show(reading.graph);
    if (generation === this.generation) this.element.ariaBusy = "false";
  }

  highlight(selected: Set<number>): void {
    this.view.highlight(selected);
  }
}
