// Run mode's progress line: how long the run has gone, and, when the script reports its
// steps (show.progress(step, total)), the newest step and the steps per second.

import type { RunProgress, StageMessage, UserError } from "../protocol";
import { STAGE_TITLES } from "./session";

/** The steps per second are measured over the reports of the last few seconds. */
const RATE_WINDOW_SECONDS = 3;
const TICK_MS = 100;

const seconds = (value: number) => `${value.toFixed(1)} s`;

export class ProgressLine {
  private begun = 0;
  private reports: RunProgress[] = [];
  /** The first report of the run, for the mean rate at its end. */
  private firstReport: RunProgress | null = null;
  private ticker: ReturnType<typeof setInterval> | null = null;
  /** Run was pressed and Python has not begun the run yet. */
  private waitingForPython = false;

  constructor(private readonly element: HTMLElement) {}

  /** Run was pressed: Python may still be starting. */
  waiting(): void {
    this.stopTicking();
    this.reports = [];
    this.firstReport = null;
    this.waitingForPython = true;
    this.show("starting the run…");
  }

  /** A start-up stage of the run worker's Python: shown while a run waits for it (a fresh worker starts after Stop, unwatched). */
  stage(message: StageMessage): void {
    if (this.waitingForPython && message.state === "started") this.show(`starting the run: loading ${STAGE_TITLES[message.stage]}…`);
  }

  /** Python began the run: the clock starts. */
  started(): void {
    this.waitingForPython = false;
    this.begun = performance.now();
    this.stopTicking();
    this.ticker = setInterval(() => this.show(this.runningText()), TICK_MS);
    this.show(this.runningText());
  }

  report(progress: RunProgress): void {
    this.firstReport ??= progress;
    this.reports.push(progress);
    while (this.reports.length > 2 && progress.seconds - this.reports[0].seconds > RATE_WINDOW_SECONDS) this.reports.shift();
  }

  /** The run ended by itself; `total` is its length as Python measured it. */
  ended(error: UserError | null, total: number): void {
    this.waitingForPython = false;
    this.stopTicking();
    const mean = this.rate(this.firstReport, this.reports.at(-1) ?? null);
    const steps = this.stepText(mean);
    if (error) {
      const where = error.line === null ? "" : ` on line ${error.line}`;
      this.show(`failed after ${seconds(total)}: ${error.type}${where}${steps}`);
    } else {
      this.show(`finished in ${seconds(total)}${steps}`);
    }
  }

  /** The run was stopped (by Stop, or Python failed): `reason` says which. */
  stopped(reason: string): void {
    const after = this.ticker === null ? "" : ` after ${seconds(this.elapsed())}`;
    this.waitingForPython = false;
    this.stopTicking();
    this.show(`${reason}${after}`);
  }

  private elapsed(): number {
    return (performance.now() - this.begun) / 1000;
  }

  /** "running 4.2 s · step 40 of 300 · 12.5 steps/s": the steps per second of the last few seconds. */
  private runningText(): string {
    const recent = this.rate(this.reports[0] ?? null, this.reports.at(-1) ?? null);
    return `running ${seconds(this.elapsed())}${this.stepText(recent)}`;
  }

  /** " · step 40 of 300 · 12.5 steps/s", when the script reports its steps. */
  private stepText(rate: number | null): string {
    const last = this.reports.at(-1);
    if (!last) return "";
    const of = last.total === null ? "" : ` of ${last.total}`;
    const perSecond = rate === null ? "" : ` · ${rate < 10 ? rate.toFixed(2) : rate.toFixed(1)} steps/s`;
    return ` · step ${last.step}${of}${perSecond}`;
  }

  private rate(from: RunProgress | null, to: RunProgress | null): number | null {
    if (!from || !to || to.seconds <= from.seconds) return null;
    return (to.step - from.step) / (to.seconds - from.seconds);
  }

  private show(text: string): void {
    this.element.hidden = false;
    this.element.textContent = text;
    this.element.title = text;
  }

  private stopTicking(): void {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }
}
