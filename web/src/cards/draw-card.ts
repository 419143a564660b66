// A card of topos.show (Card.to_json(), MIME type application/vnd.topos.card+json) drawn as
// elements: the one drawing that the playground's output pane and the JupyterLab extension
// (web/jupyter) share. Everything is rendered as text or as data handed to uPlot and dagre:
// nothing a card holds is ever parsed as HTML.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./plot.css";
import type { GraphCard, HeatmapCard, ImageCard, LinesCard, PlotCard, ReadingRow, TextCard } from "../../protocol";
import { GraphView } from "../panes/graph-view";
import { drawHeatmapCard, drawImageCard } from "./draw-image";
import { TextPane } from "../panes/text-pane";

export const CARD_MIME_TYPE = "application/vnd.topos.card+json";

/** The cards this drawing knows, each of which may come with its text's rows (the readings' row JSON). */
export type Card = (TextCard | LinesCard | GraphCard | PlotCard | ImageCard | HeatmapCard) & { rows?: ReadingRow[] };

/** Any card, also of a kind this drawing does not know (from a newer engine): shown as its text. */
export interface AnyCard {
  kind: string;
  text?: string;
  rows?: ReadingRow[];
}

const PLOT_COLOURS = ["#2f6fdf", "#d9480f", "#2b8a3e", "#9c36b5", "#e67700", "#0b7285"];
/** A plot's height (its axes and lines, without its title and legend) unless its page asks for another. */
export const PLOT_HEIGHT = 220;

/**
 * What releases each drawn card that holds more than its elements: a chart listens on `window` until it
 * is destroyed, so a card taken off the page and not released stays alive with everything it drew.
 */
const releasers = new WeakMap<Element, () => void>();

/**
 * Release `root` (a card drawn here, or an element that holds some) and every card in it. Whoever
 * takes a drawn card off the page calls this, once the card is off: a redrawn plot, a new run, a new edit.
 */
export function releaseCards(root: Element): void {
  for (const element of [root, ...root.querySelectorAll(".card")]) {
    releasers.get(element)?.();
    releasers.delete(element);
  }
}

export function textBlock(className: string, text: string): HTMLPreElement {
  const block = document.createElement("pre");
  block.className = className;
  block.textContent = text;
  return block;
}

/**
 * Draw `card`; `width` is the room a plot gets, `plotHeight` the height of its axes. A card with rows
 * (a reading's text, each row knowing its nodes) reads as the playground's text panes do: a click on a
 * row highlights every row about the same nodes. A graph card draws its graph whether or not it has
 * rows. A card taken off the page again is given to releaseCards.
 */
export function drawCard(card: AnyCard, width: number, plotHeight = PLOT_HEIGHT): HTMLElement {
  const known = card as Card;
  if (known.kind === "graph") return drawGraphCard(known);
  if (card.rows) return drawRows(card.kind, card.rows);
  switch (known.kind) {
    case "lines":
      return textBlock("card card-lines", known.lines.join("\n"));
    case "spec":
    case "hlo":
    case "text":
      return textBlock(`card card-${known.kind}`, known.text);
    case "plot":
      return drawPlot(known, width, plotHeight);
    case "image":
      return drawImageCard(known);
    case "heatmap":
      return drawHeatmapCard(known, width);
    default:
      return textBlock(`card card-${card.kind}`, card.text ?? "");
  }
}

function drawGraphCard(card: GraphCard): HTMLElement {
  const host = document.createElement("div");
  host.className = "card card-graph";
  const view = new GraphView({ card: true });
  host.append(view.element);
  // dagre lays the graph out in its own worker; the view fills in when it is done.
  void view.show(card.graph);
  releasers.set(host, () => view.dispose());
  return host;
}

function drawRows(kind: string, rows: ReadingRow[]): HTMLElement {
  const pane: TextPane = new TextPane(kind, (nodes) => pane.highlight(new Set(nodes)));
  // A card, not one of the playground's reading panes: data-reading names those alone.
  pane.element.className = `card card-${kind} text-reading`;
  delete pane.element.dataset.reading;
  pane.renderRows(rows);
  return pane.element;
}

/** Tick labels that stay readable on a log axis (uPlot's default shows 0.001 as "0"). */
function tickLabel(value: number): string {
  if (value === 0) return "0";
  const size = Math.abs(value);
  return size >= 1e-3 && size < 1e5 ? String(Number(value.toPrecision(3))) : value.toExponential(0);
}

export function drawPlot(card: PlotCard, width: number, height = PLOT_HEIGHT): HTMLElement {
  // Axes take the page's colours (the playground's, or JupyterLab's theme), so that a plot reads in a dark theme too.
  const style = getComputedStyle(document.documentElement);
  const ink = style.getPropertyValue("--fg").trim() || style.getPropertyValue("--jp-content-font-color1").trim() || "#1f2328";
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
    height,
    scales: { x: { time: false }, y: card.log_y ? { distr: 3 } : {} },
    axes: [
      { label: card.x_label || undefined, stroke: ink, grid, ticks: grid },
      // The y axis's name is a line of text over the plot (below), not uPlot's label turned along the axis.
      { stroke: ink, grid, ticks: grid, values: (_plot, splits) => splits.map((v) => (v === null ? "" : tickLabel(v))), size: 60 },
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
  const chart = new uPlot(options, columns, host);
  releasers.set(host, () => chart.destroy());
  if (card.y_label) {
    // Written across, over the axis, as Observable Plot writes it: uPlot draws the name turned along the
    // axis on its canvas, where a name longer than the plot is tall is cut ("entropy / accurac" on a phone).
    const name = document.createElement("div");
    name.className = "plot-y-label";
    name.textContent = card.y_label;
    chart.root.querySelector(".u-wrap")?.before(name);
  }
  return host;
}
