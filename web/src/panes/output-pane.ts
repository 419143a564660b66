// The output pane: what the user's code printed and the cards it made (topos.show),
// in order. Everything is rendered as text or as data handed to uPlot and dagre:
// nothing the user's code produces is ever parsed as HTML.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { OutputItem, PlotCard } from "../../protocol";
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
    for (const item of items) {
      switch (item.kind) {
        case "print":
          this.element.append(textBlock("card card-print", item.text));
          break;
        case "lines":
          this.element.append(textBlock("card card-lines", item.lines.join("\n")));
          break;
        case "spec":
        case "hlo":
        case "text":
          this.element.append(textBlock(`card card-${item.kind}`, item.text));
          break;
        case "graph": {
          const host = document.createElement("div");
          host.className = "card card-graph";
          this.element.append(host);
          void drawGraph(host, item.graph);
          break;
        }
        case "plot":
          this.element.append(drawPlot(item, width));
          break;
      }
    }
    if (!items.length) this.element.append(textBlock("card card-empty", "(no output)"));
  }
}
