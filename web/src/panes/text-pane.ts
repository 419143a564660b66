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

  /**
   * Show rows as they are (the kernels pane adds rows of its own after the reading's). The rows
   * shown before are kept where they read the same, so that an edit that changes a few rows
   * touches only those.
   */
  renderRows(rows: ReadingRow[]): void {
    if (!this.rowElements.length) this.element.replaceChildren(); // an error or an empty reading was shown
    const kept = Math.min(rows.length, this.rowElements.length);
    for (let index = 0; index < kept; index++) this.updateRow(this.rowElements[index], rows[index]);
    for (const row of this.rowElements.splice(rows.length)) {
      row.element.previousSibling?.remove(); // the newline before the row (none before the first)
      row.element.remove();
    }
    const fragment = document.createDocumentFragment();
    for (let index = kept; index < rows.length; index++) {
      if (index > 0) fragment.append("\n");
      const span = document.createElement("span");
      span.className = "line";
      const row = { element: span, nodes: [] as number[] };
      this.updateRow(row, rows[index]);
      fragment.append(span);
      this.rowElements.push(row);
    }
    this.element.append(fragment);
  }

  private updateRow(row: { element: HTMLElement; nodes: number[] }, next: ReadingRow): void {
    if (row.element.textContent !== next.text) row.element.textContent = next.text;
    const nodes = next.nodes.join(" ");
    if (row.nodes.join(" ") === nodes) return; // the element's data-nodes says the same
    if (nodes) row.element.dataset.nodes = nodes;
    else delete row.element.dataset.nodes;
    row.nodes = next.nodes;
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
