// The output pane: what the user's code printed and the cards it made (topos.show),
// in order; and Run mode's output pane, which grows while a run goes. Everything is
// rendered as text or as data handed to uPlot and dagre: nothing the user's code
// produces is ever parsed as HTML.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { OutputItem, PlotCard, UserError } from "../../protocol";
import { drawGraph } from "./graph-pane";

const PLOT_COLOURS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#9c36b5", "#e67700", "#0b7285"];

function textBlock(className: string, text: string): HTMLPreElement {
  const block = document.createElement("pre");
  block.className = className;
  block.textContent = text;
  return block;
}

/** Tick labels that stay readable on a log axis (uPlot's default shows 0.001 as "0"). */
function tickLabel(value: number): string {
  if (value === 0) return "0";
  const size = Math.abs(value);
  return size >= 1e-3 && size < 1e5 ? String(Number(value.toPrecision(3))) : value.toExponential(0);
}

function drawPlot(card: PlotCard, width: number): HTMLElement {
  // Axes take the page's colours, so that a plot reads in the dark theme too.
  const style = getComputedStyle(document.documentElement);
  const ink = style.getPropertyValue("--fg").trim() || "#1f2328";
  const grid = { stroke: "rgba(127, 127, 127, 0.18)", width: 1 };
  const host = document.createElement("figure");
  host.className = "card card-plot";
  const longest = card.layers.reduce((best, layer) => (layer.x.length > best.length ? layer.x : best), [] as number[]);
  // The canvas does not say how far a line goes; this does (a plot that grows during a run).
  host.dataset.points = String(longest.length);
  // uPlot wants one shared x column; every line is re-sampled onto it by position.
  const columns: uPlot.AlignedData = [
    longest,
    ...card.layers.map((layer) => longest.map((_, i) => (i < layer.y.length ? layer.y[i] : null))),
  ];
  const options: uPlot.Options = {
    title: card.title || undefined,
    width: Math.max(260, width),
    height: 220,
    scales: { x: { time: false }, y: card.log_y ? { distr: 3 } : {} },
    axes: [
      { label: card.x_label || undefined, stroke: ink, grid, ticks: grid },
      { label: card.y_label || undefined, stroke: ink, grid, ticks: grid, values: (_plot, splits) => splits.map((v) => (v === null ? "" : tickLabel(v))), size: 60 },
    ],
    series: [
      { label: card.x_label || "x" },
      ...card.layers.map((layer, i) => ({
        label: layer.label || `line ${i + 1}`,
        stroke: PLOT_COLOURS[i % PLOT_COLOURS.length],
        width: 1.5,
        spanGaps: false,
      })),
    ],
  };
  new uPlot(options, columns, host);
  return host;
}

export class OutputPane {
  readonly element: HTMLDivElement;
  private items: OutputItem[] = [];

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "reading output-reading";
    this.element.dataset.reading = "output";
    // Plots take the theme's colours when drawn: draw them again when the theme changes.
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => this.render(this.items));
  }

  render(items: OutputItem[]): void {
    this.items = items;
    this.element.replaceChildren();
    const width = this.element.clientWidth - 24;
    for (const item of items) this.element.append(drawItem(item, width));
    if (!items.length) this.element.append(textBlock("card card-empty", "(no output)"));
  }
}

function drawItem(item: OutputItem, width: number): HTMLElement {
  switch (item.kind) {
    case "print":
      return textBlock("card card-print", item.text);
    case "lines":
      return textBlock("card card-lines", item.lines.join("\n"));
    case "spec":
    case "hlo":
    case "text":
      return textBlock(`card card-${item.kind}`, item.text);
    case "graph": {
      const host = document.createElement("div");
      host.className = "card card-graph";
      // dagre lays the graph out in its own worker; the host fills in when it is done.
      void drawGraph(host, item.graph);
      return host;
    }
    case "plot":
      return drawPlot(item, width);
  }
}

/**
 * Run mode's output: a run's printed lines and cards as they come. Printed text runs on in
 * one block until a card comes; a card that changes (a plot that grows) is drawn again in
 * its place. Its container stays scrolled to the end while it was there.
 */
export class RunOutputPane {
  readonly element: HTMLDivElement;
  /** The run's cards, by number (their order of arrival), with what each shows now. */
  private cards: { item: OutputItem; element: HTMLElement }[] = [];
  /** The block printed text goes on in, while no card has come after it. */
  private printBlock: HTMLPreElement | null = null;

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "reading output-reading run-output";
    this.element.dataset.runOutput = "";
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      for (const number of this.cards.keys()) this.change(number, this.cards[number].item);
    });
  }

  /** A new run: nothing shown yet. */
  clear(): void {
    this.cards = [];
    this.printBlock = null;
    this.element.replaceChildren();
  }

  append(items: OutputItem[]): void {
    this.keepingTheEndInView(() => {
      for (const item of items) {
        if (item.kind === "print") {
          if (!this.printBlock) {
            this.printBlock = textBlock("card card-print", "");
            this.element.append(this.printBlock);
          }
          // A text node of its own: the block's earlier text is not copied again.
          this.printBlock.append(document.createTextNode(item.text));
        } else {
          const element = drawItem(item, this.width());
          this.cards.push({ item, element });
          this.element.append(element);
          this.printBlock = null;
        }
      }
    });
  }

  /** Card `number` of the run changed: draw it again where it is. */
  change(number: number, item: OutputItem): void {
    const card = this.cards[number];
    if (!card) return;
    const element = drawItem(item, this.width());
    card.element.replaceWith(element);
    this.cards[number] = { item, element };
  }

  /** The run ended: say so when it printed nothing. */
  ended(): void {
    if (!this.element.childElementCount) this.element.append(textBlock("card card-empty", "(no output)"));
  }

  /** The script's error, after its output: the plain line, and the traceback behind "details". */
  error(summary: string, failure: UserError | null): void {
    this.keepingTheEndInView(() => {
      const block = document.createElement("div");
      block.className = "card card-error";
      block.append(Object.assign(document.createElement("p"), { textContent: summary }));
      if (failure?.traceback) {
        const details = document.createElement("details");
        details.append(Object.assign(document.createElement("summary"), { textContent: "details" }), textBlock("", failure.traceback));
        block.append(details);
      }
      this.element.append(block);
      this.printBlock = null;
    });
  }

  private width(): number {
    return this.element.clientWidth - 24;
  }

  /** Make `change`; if the pane's scrolling container showed the end before, it shows the end after. */
  private keepingTheEndInView(change: () => void): void {
    const scroller = this.element.parentElement ?? this.element;
    const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 8;
    change();
    if (atEnd) scroller.scrollTop = scroller.scrollHeight;
  }
}
