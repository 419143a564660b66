// A reading shown as text, one element a line, each line knowing the nodes it is about.
// The pane's text content is exactly the reading's text (lines joined by newlines).

import type { Reading } from "../../protocol";

/** Which nodes a line of a reading is about (none for summary lines). */
export type LineNodes = (line: string, lineIndex: number) => number[];

/** Rows of describe() texts (spec, plan, gradient) start with the node's index. */
export const describeRowNodes: LineNodes = (line) => {
  const match = /^\s*(\d+)  \S/.exec(line);
  return match ? [Number(match[1])] : [];
};

/** A StableHLO line that defines node k's value starts with `%vk =` (or `%vk_1 =`, a helper value of node k). */
export const hloLineNodes: LineNodes = (line) => {
  const match = /^\s*%v(\d+)(?:_\w+)? = /.exec(line);
  return match ? [Number(match[1])] : [];
};

export class TextPane {
  readonly element: HTMLPreElement;
  private lineElements: HTMLElement[] = [];

  constructor(
    readonly name: string,
    private readonly nodesOfLine: (reading: Reading) => LineNodes,
    private readonly onSelect: (nodes: number[]) => void,
  ) {
    this.element = document.createElement("pre");
    this.element.className = "reading text-reading";
    this.element.dataset.reading = name;
    this.element.addEventListener("click", (event) => {
      const line = (event.target as HTMLElement).closest<HTMLElement>("[data-nodes]");
      if (line?.dataset.nodes) this.onSelect(line.dataset.nodes.split(" ").map(Number));
    });
  }

  render(reading: Reading): void {
    this.element.replaceChildren();
    this.lineElements = [];
    this.element.classList.toggle("reading-error", Boolean(reading.error));
    const text = reading.text ?? reading.error ?? reading.empty ?? "";
    if (reading.text === undefined) {
      this.element.textContent = text;
      return;
    }
    const nodesOf = this.nodesOfLine(reading);
    const fragment = document.createDocumentFragment();
    text.split("\n").forEach((line, index) => {
      if (index > 0) fragment.append("\n");
      const span = document.createElement("span");
      span.className = "line";
      span.textContent = line;
      const nodes = nodesOf(line, index);
      if (nodes.length) span.dataset.nodes = nodes.join(" ");
      fragment.append(span);
      this.lineElements.push(span);
    });
    this.element.append(fragment);
  }

  highlight(selected: Set<number>): void {
    let first: HTMLElement | null = null;
    for (const line of this.lineElements) {
      const nodes = line.dataset.nodes;
      const on = nodes !== undefined && nodes.split(" ").some((k) => selected.has(Number(k)));
      line.classList.toggle("linked", on);
      if (on && !first) first = line;
    }
    first?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}
