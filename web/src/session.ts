// The page's side of the Python worker: starts it, sends runs, enforces the time
// limit, and restarts the worker when a run is stopped or Python runs out of memory.
//
// Only one run is in flight at a time. An edit made while a run is in flight waits
// as the one pending request (a newer edit replaces it); when the run in flight
// answers, its result is dropped if a newer request exists, and the pending one is
// sent. So a newer edit cancels an older run's results, and the worker never
// builds up a queue of stale runs.

import type { Backend, RunResult, StageMessage, UserError, WebGpuStatus, WorkerToHost } from "../protocol";
import { describeCrash, timeLimitStop, workerErrorStop, type Stop } from "./python-failure";
import PythonWorker from "./worker?worker";

export interface SessionEvents {
  stage(message: StageMessage): void;
  ready(webgpu: WebGpuStatus): void;
  result(result: RunResult, id: number, ms: number): void;
  /**
   * A run was stopped, or the worker failed. `reason` is one plain sentence for the user;
   * `failure` is the Python failure behind it, when there was one (its traceback, the user's line).
   */
  stopped(reason: string, id: number | null, failure?: UserError | null): void;
  /** A run was sent to the worker (the page shows that it is busy). */
  busy(id: number): void;
}

interface Request {
  id: number;
  code: string;
  backend: Backend;
}

export class PythonSession {
  private worker!: Worker;
  private nextId = 1;
  private inFlight: Request | null = null;
  private pending: Request | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private started = false;

  constructor(
    private readonly events: SessionEvents,
    /** How long one run may take, in milliseconds, before the worker is stopped and restarted. */
    private readonly timeLimitMs: number,
  ) {
    this.spawn();
  }

  /** Queue `code` to run; returns the request id. */
  run(code: string, backend: Backend): number {
    const request = { id: this.nextId++, code, backend };
    this.pending = request;
    this.pump();
    return request.id;
  }

  /** The newest request id handed out (results of older ones are stale). */
  get latestId(): number {
    return this.nextId - 1;
  }

  private spawn(): void {
    this.started = false;
    this.worker = new PythonWorker({ name: "python" });
    this.worker.addEventListener("message", (event: MessageEvent<WorkerToHost>) => this.receive(event.data));
    // An uncaught error in the worker (a WebAssembly trap, for one) leaves Python unusable.
    this.worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.restart(workerErrorStop(event.message));
    });
  }

  private receive(message: WorkerToHost): void {
    switch (message.type) {
      case "stage":
        this.events.stage(message);
        break;
      case "ready":
        this.started = true;
        this.events.ready(message.webgpu);
        this.pump();
        break;
      case "result":
        this.finish();
        if (message.id === this.latestId) this.events.result(message.result, message.id, message.ms);
        this.pump();
        break;
      case "crashed": {
        const stop = describeCrash(message, this.started);
        if (this.started) {
          this.restart(stop, message.id);
        } else {
          this.finish();
          this.events.stopped(stop.reason, null, stop.failure);
        }
        break;
      }
    }
  }

  private pump(): void {
    if (!this.started || this.inFlight || !this.pending) return;
    const request = this.pending;
    this.pending = null;
    this.inFlight = request;
    this.worker.postMessage({ type: "run", ...request });
    this.events.busy(request.id);
    this.timer = setTimeout(() => this.restart(timeLimitStop(this.timeLimitMs), request.id), this.timeLimitMs);
  }

  private finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.inFlight = null;
  }

  /** Terminate the worker and start a fresh one; a pending request runs once it is ready. */
  private restart(stop: Stop, id: number | null = null): void {
    this.finish();
    this.worker.terminate();
    this.events.stopped(stop.reason, id, stop.failure);
    this.spawn();
  }
}
