// A reading shown as text: one element a row, each knowing the nodes it is about (as
// Python sent them). The pane's text content is exactly the reading's text: the rows'
// texts joined by newlines, so that what a user copies is the reading itself.

import type { Reading, ReadingRow } from "../../protocol";

export class TextPane {
  readonly element: HTMLPreElement;
  private rowElements: { element: HTMLElement; nodes: number[] }[] = [];

  constructor(
    readonly name: string,
    private readonly onSelect: (nodes: number[]) => void,
  ) {
    this.element = document.createElement("pre");
    this.element.className = "reading text-reading";
    this.element.dataset.reading = name;
    this.element.addEventListener("click", (event) => {
      const row = (event.target as HTMLElement).closest<HTMLElement>("[data-nodes]");
      if (row?.dataset.nodes) this.onSelect(row.dataset.nodes.split(" ").map(Number));
    });
  }

  /** Show a reading's rows, or its error or why it is empty. */
  render(reading: Reading): void {
    this.element.classList.toggle("reading-error", Boolean(reading.error));
    if (reading.rows === undefined) {
      this.rowElements = [];
      this.element.textContent = reading.error ?? reading.empty ?? "";
      return;
    }
    this.renderRows(reading.rows);
  }

  /** Show rows as they are (the kernels pane adds rows of its own after the reading's). */
  renderRows(rows: ReadingRow[]): void {
    this.element.replaceChildren();
    this.rowElements = [];
    const fragment = document.createDocumentFragment();
    rows.forEach((row, index) => {
      if (index > 0) fragment.append("\n");
      const span = document.createElement("span");
      span.className = "line";
      span.textContent = row.text;
      if (row.nodes.length) span.dataset.nodes = row.nodes.join(" ");
      fragment.append(span);
      this.rowElements.push({ element: span, nodes: row.nodes });
    });
    this.element.append(fragment);
  }

  highlight(selected: Set<number>): void {
    let first: HTMLElement | null = null;
    for (const row of this.rowElements) {
      const on = row.nodes.some((node) => selected.has(node));
      row.element.classList.toggle("linked", on);
      if (on && !first) first = row.element;
    }
    first?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}
