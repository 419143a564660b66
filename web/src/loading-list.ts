// The playground's loading list: one row a start-up stage (Pyodide, numpy, topos, the WebGPU
// adapter), each saying whether it is loading, done or failed, with its time and detail, and a
// last row for the first readings. The page hides the list once the first readings are shown.

import type { StageMessage } from "../protocol";
import { STAGE_TITLES } from "./session";

export class LoadingList {
  constructor(private readonly list: HTMLOListElement) {}

  /** A stage's row, made or brought up to date. */
  showStage(message: StageMessage): void {
    const row = this.row(message.stage);
    row.dataset.state = message.state;
    const seconds = message.ms !== undefined ? ` (${(message.ms / 1000).toFixed(1)} s)` : "";
    const detail = message.state !== "started" && message.detail ? `: ${message.detail}` : "";
    row.textContent = `${STAGE_TITLES[message.stage]} ${message.state === "started" ? "loading…" : message.state}${seconds}${detail}`;
  }

  /** The last row: the first readings, waiting (or failed: the first code raised, see the error). */
  showReadingsStage(state: "started" | "failed"): void {
    const row = this.row("readings");
    row.dataset.state = state;
    row.textContent = state === "started" ? "first readings…" : "first readings: waiting for code that runs (see the error)";
  }

  set hidden(hidden: boolean) {
    this.list.hidden = hidden;
  }

  private row(stage: string): HTMLLIElement {
    let row = this.list.querySelector<HTMLLIElement>(`[data-stage="${stage}"]`);
    if (!row) {
      row = document.createElement("li");
      row.dataset.stage = stage;
      this.list.append(row);
    }
    return row;
  }
}
