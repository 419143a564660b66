// The load indicator under the toolbar: one row a start-up stage of the readings worker's Python,
// and a last row for the first readings, kept until they are shown.

import type { StageMessage } from "../protocol";
import { STAGE_TITLES } from "./session";

/** A start-up stage's row, made the first time the stage reports. */
export function showStage(loading: HTMLElement, message: StageMessage): void {
  let row = loading.querySelector<HTMLLIElement>(`[data-stage="${message.stage}"]`);
  if (!row) {
    row = document.createElement("li");
    row.dataset.stage = message.stage;
    loading.append(row);
  }
  row.dataset.state = message.state;
  const seconds = message.ms !== undefined ? ` (${(message.ms / 1000).toFixed(1)} s)` : "";
  const detail = message.state !== "started" && message.detail ? `: ${message.detail}` : "";
  row.textContent = `${STAGE_TITLES[message.stage]} ${message.state === "started" ? "loading…" : message.state}${seconds}${detail}`;
}

/** The last row: the first readings, waiting (or failed: the first code raised, see the error). */
export function showReadingsStage(loading: HTMLElement, state: "started" | "failed"): void {
  let row = loading.querySelector<HTMLLIElement>('[data-stage="readings"]');
  if (!row) {
    row = document.createElement("li");
    row.dataset.stage = "readings";
    loading.append(row);
  }
  row.dataset.state = state;
  row.textContent = state === "started" ? "first readings…" : "first readings: waiting for code that runs (see the error)";
}
