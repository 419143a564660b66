// The single pane registry: which pane shows which reading. Every text reading arrives as
// rows that name their nodes (see protocol.ts), so a pane never reads nodes out of text.
// Adding a reading means adding one entry here (and its name to protocol.ts's ReadingName and
// READING_NAMES and to topos.playground.READINGS; tests/python/test_playground_rows.py holds them together).

import { READING_NAMES, type ReadingName, type Reading, type RunResult } from "../../protocol";
import { GraphPane } from "./graph-pane";
import { HloPane } from "./hlo-pane";
import { kernelsRows } from "./kernels";
import { OutputPane } from "./output-pane";
import { TextPane } from "./text-pane";

export { READING_NAMES };

export interface ReadingPane {
  readonly element: HTMLElement;
  /** Show a reading; a pane that draws asynchronously (the graph) resolves once it has drawn. */
  render(reading: Reading, result: RunResult): void | Promise<void>;
  highlight(selected: Set<number>): void;
}

function textPane(name: ReadingName, onSelect: (nodes: number[]) => void): ReadingPane {
  const pane = new TextPane(name, onSelect);
  return { element: pane.element, render: (reading) => pane.render(reading), highlight: (s) => pane.highlight(s) };
}

/** The HLO reading: the plan's module, or the training step's (see hlo-pane.ts). */
function hloPane(onSelect: (nodes: number[]) => void): ReadingPane {
  const pane = new HloPane(onSelect);
  return { element: pane.element, render: (reading) => pane.render(reading), highlight: (s) => pane.highlight(s) };
}

/** The kernels reading, and after it what WebGPU made of its launches when they ran there. */
function kernelsPane(onSelect: (nodes: number[]) => void): ReadingPane {
  const pane = new TextPane("kernels", onSelect);
  return {
    element: pane.element,
    render(reading, result) {
      if (reading.rows === undefined) pane.render(reading);
      else pane.renderRows(kernelsRows(reading.rows, result.webgpu));
    },
    highlight: (selected) => pane.highlight(selected),
  };
}

export function createPanes(onSelect: (nodes: number[]) => void) {
  const graph = new GraphPane(onSelect);
  const readings: Record<ReadingName, ReadingPane> = {
    spec: textPane("spec", onSelect),
    graph: { element: graph.element, render: (reading) => graph.render(reading), highlight: (s) => graph.highlight(s) },
    plan: textPane("plan", onSelect),
    gradient: textPane("gradient", onSelect),
    hlo: hloPane(onSelect),
    kernels: kernelsPane(onSelect),
  };
  return { readings, output: new OutputPane() };
}
