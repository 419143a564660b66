// The single pane registry: which pane shows which reading, and how its lines name nodes.
// Adding a reading means adding one entry here (and its name to protocol.ts).

import type { ReadingName, Reading, RunResult } from "../../protocol";
import { GraphPane } from "./graph-pane";
import { kernelsReading } from "./kernels";
import { OutputPane } from "./output-pane";
import { describeRowNodes, hloLineNodes, TextPane, type LineNodes } from "./text-pane";

export const READING_NAMES: ReadingName[] = ["spec", "graph", "plan", "gradient", "hlo", "kernels"];

export interface ReadingPane {
  readonly element: HTMLElement;
  /** Show a reading; a pane that draws asynchronously (the graph) resolves once it has drawn. */
  render(reading: Reading, result: RunResult): void | Promise<void>;
  highlight(selected: Set<number>): void;
}

function textPane(name: ReadingName, lineNodes: LineNodes, onSelect: (nodes: number[]) => void): ReadingPane {
  const pane = new TextPane(name, () => lineNodes, onSelect);
  return { element: pane.element, render: (reading) => pane.render(reading), highlight: (s) => pane.highlight(s) };
}

function kernelsPane(onSelect: (nodes: number[]) => void): ReadingPane {
  let lineNodes = new Map<number, number[]>();
  const pane = new TextPane("kernels", () => (_line, index) => lineNodes.get(index) ?? [], onSelect);
  return {
    element: pane.element,
    render(reading, result) {
      const composed = kernelsReading(reading, result.webgpu);
      lineNodes = composed.lineNodes;
      pane.render(composed.reading);
    },
    highlight: (selected) => pane.highlight(selected),
  };
}

export function createPanes(onSelect: (nodes: number[]) => void) {
  const graph = new GraphPane(onSelect);
  const readings: Record<ReadingName, ReadingPane> = {
    spec: textPane("spec", describeRowNodes, onSelect),
    graph: { element: graph.element, render: (reading) => graph.render(reading), highlight: (s) => graph.highlight(s) },
    plan: textPane("plan", describeRowNodes, onSelect),
    gradient: textPane("gradient", describeRowNodes, onSelect),
    hlo: textPane("hlo", hloLineNodes, onSelect),
    kernels: kernelsPane(onSelect),
  };
  return { readings, output: new OutputPane() };
}
