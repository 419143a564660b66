// What a page shows of a Run-mode run: the run's output in a RunOutputPane, its ProgressLine,
// the body's data-run ("starting", "running", "finished", "failed" or "stopped"; the tests read
// it) and whether Stop can be pressed. The playground and each embed that allows Run mode use
// it; a page adds what is its own through `failed` and `stopped` (the playground marks the
// error in its editor and its error panel).

import type { RunOutputMessage, StageMessage, UserError } from "../protocol";
import type { RunOutputPane } from "./panes/output-pane";
import type { Stop } from "./python-failure";
import type { ProgressLine } from "./run-progress";
import type { RunEvents } from "./run-session";

/** The script's own error as the error panel's first line says it: "Type on line N: message". */
export function errorSummary(error: UserError): string {
  const where = error.line === null ? "" : ` on line ${error.line}`;
  return `${error.type}${where}: ${error.message}`;
}

/** A stopped run as one sentence, with Python's failure when that is why it stopped. */
export function stopSummary(reason: string, failure: UserError | null): string {
  const cause = failure?.message ? `\n${failure.type}: ${failure.message}` : "";
  return `${reason[0].toUpperCase()}${reason.slice(1)}.${cause}`;
}

export interface RunDisplayHooks {
  /** The run ended with the script's error. */
  failed?(error: UserError): void;
  /** The run was stopped, by Stop or because Python failed. */
  stopped?(stop: Stop): void;
}

export class RunDisplay implements RunEvents {
  constructor(
    private readonly pane: RunOutputPane,
    private readonly line: ProgressLine,
    private readonly stopButton: HTMLButtonElement,
    private readonly hooks: RunDisplayHooks = {},
  ) {}

  /** A run was asked for: clear the last one's output and wait for Python. */
  begin(): void {
    this.pane.clear();
    this.setState("starting");
    this.line.waiting();
  }

  stage(message: StageMessage): void {
    this.line.stage(message);
  }

  started(): void {
    this.setState("running");
    this.line.started();
  }

  output(batch: RunOutputMessage): void {
    this.pane.append(batch.append);
    for (const [number, card] of batch.changed) this.pane.change(number, card);
    if (batch.progress) this.line.report(batch.progress);
  }

  ended(_id: number, error: UserError | null, seconds: number): void {
    this.line.ended(error, seconds);
    if (error) {
      this.setState("failed");
      this.hooks.failed?.(error);
      this.pane.error(errorSummary(error), error);
    } else {
      this.setState("finished");
      this.pane.ended();
    }
  }

  stopped(_id: number, stop: Stop): void {
    this.line.stopped(stop.reason);
    this.setState("stopped");
    this.hooks.stopped?.(stop);
    if (stop.failure) this.pane.error(stopSummary(stop.reason, stop.failure), stop.failure);
  }

  private setState(state: string): void {
    document.body.dataset.run = state;
    this.stopButton.disabled = state !== "starting" && state !== "running";
  }
}
