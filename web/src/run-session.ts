// The page's side of Run mode: the run worker (web/src/run-worker.ts), which runs the
// script as a program, beside the readings worker (session.ts), which keeps answering
// edits meanwhile. Used by the playground and by each embed that allows Run mode.
//
// - The worker starts with the first run (a page that never runs a program never loads a
//   second Python), and serves run after run.
// - One run at a time: Run during a run stops it and starts the new one.
// - Stop terminates the worker (a script in a tight Python loop cannot be interrupted
//   any other way without a SharedArrayBuffer), and a fresh worker starts at once, so
//   that the next run finds Python ready. A worker that failed is replaced the same way.

import type { FileBytes, HostToRunWorker, RunOutputMessage, RunWorkerToHost, StageMessage, UserError } from "../protocol";
import { describeCrash, workerErrorStop, type Stop } from "./python-failure";
import RunWorkerScript from "./run-worker?worker";

export interface RunEvents {
  /** A start-up stage of the run worker's Python (a first run waits for them). */
  stage(message: StageMessage): void;
  /** Python began the run. */
  started(id: number): void;
  /** A batch of the run's output. */
  output(message: RunOutputMessage): void;
  /** The run ended by itself: normally, or with the script's error. */
  ended(id: number, error: UserError | null, seconds: number): void;
  /** The run was stopped: by Stop, or because Python failed (`stop` says which). */
  stopped(id: number, stop: Stop): void;
}

/** What the page says when Stop ends a run. */
export const STOPPED: Stop = { reason: "stopped", failure: null };

export class RunSession {
  private worker: Worker | null = null;
  private ready = false;
  /** The run the worker has (or will have once it is ready). */
  private current: { id: number; code: string; sent: boolean } | null = null;
  private nextId = 1;
  /** The user's files, sent to every worker this session starts (web/src/files/). */
  private files: FileBytes[] = [];
  /** Told the files each run wrote in its working directory, as it ends (a run stopped tells nothing). */
  onWritten: ((files: FileBytes[]) => void) | null = null;

  constructor(private readonly events: RunEvents) {}

  /** The user's files: every run from now on starts in a working directory that holds them. */
  setFiles(files: FileBytes[]): void {
    this.files = files;
    this.worker?.postMessage({ type: "files", files } satisfies HostToRunWorker);
  }

  /** Run `code` as a program; a run in progress is stopped first. Returns the run's id. */
  run(code: string): number {
    if (this.current) this.stop();
    this.worker ??= this.spawn();
    this.current = { id: this.nextId++, code, sent: false };
    this.send();
    return this.current.id;
  }

  /** Stop the run in progress at once (nothing happens without one). */
  stop(): void {
    if (this.current) this.replaceWorker(STOPPED);
  }

  get running(): boolean {
    return this.current !== null;
  }

  private spawn(): Worker {
    this.ready = false;
    const worker = new RunWorkerScript({ name: "python-run" });
    if (this.files.length) worker.postMessage({ type: "files", files: this.files } satisfies HostToRunWorker);
    worker.addEventListener("message", (event: MessageEvent<RunWorkerToHost>) => {
      if (worker === this.worker) this.receive(event.data);
    });
    // An uncaught error in the worker (a WebAssembly trap, for one) leaves Python unusable.
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      if (worker === this.worker) this.replaceWorker(workerErrorStop(event.message));
    });
    return worker;
  }

  private send(): void {
    if (!this.worker || !this.ready || !this.current || this.current.sent) return;
    this.current.sent = true;
    this.worker.postMessage({ type: "run-main", id: this.current.id, code: this.current.code });
  }

  private receive(message: RunWorkerToHost): void {
    const current = this.current;
    switch (message.type) {
      case "stage":
        this.events.stage(message);
        break;
      case "run-ready":
        this.ready = true;
        this.send();
        break;
      case "run-started":
        if (current?.id === message.id) this.events.started(message.id);
        break;
      case "run-output":
        if (current?.id === message.id) this.events.output(message);
        break;
      case "files-written":
        if (current?.id === message.id) this.onWritten?.(message.files);
        break;
      case "run-end":
        if (current?.id !== message.id) break;
        this.current = null;
        this.events.ended(message.id, message.error, message.seconds);
        break;
      case "crashed": {
        const stop = describeCrash(message, this.ready);
        if (this.ready) {
          this.replaceWorker(stop);
        } else {
          // Python could not start: a fresh worker would fail the same way; the next Run tries again.
          this.worker?.terminate();
          this.worker = null;
          this.finish(stop);
        }
        break;
      }
    }
  }

  /** Terminate the worker and start a fresh one; the run in progress, if any, is told why it ended. */
  private replaceWorker(stop: Stop): void {
    this.worker?.terminate();
    this.worker = this.spawn();
    this.finish(stop);
  }

  private finish(stop: Stop): void {
    const current = this.current;
    this.current = null;
    if (current) this.events.stopped(current.id, stop);
  }
}
