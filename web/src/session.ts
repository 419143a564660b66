// The page's side of the Python worker (web/src/worker.ts): one worker and the clients it
// runs code for. The playground is its only client (PythonSession, below); on a page of
// embeds, the embed elected to lead runs one worker for all of them (web/embed/shared-python.ts).
//
// - One run is in flight at a time, for all clients together.
// - Each client has at most one pending request: a newer one replaces it, so a newer edit
//   cancels an older one and the worker never builds up a queue of stale runs. When a run
//   answers, its result is dropped if its client has asked again meanwhile. Clients take
//   turns, so one embed typing fast cannot starve the others.
// - A run past its time limit, or a worker that failed, is stopped by terminating the
//   worker and starting a fresh one; the pending requests run on the fresh worker.

import type { Backend, RunResult, StageMessage, StageName, UserError, WebGpuStatus, WorkerToHost } from "../protocol";
import { describeCrash, timeLimitStop, workerErrorStop, type Stop } from "./python-failure";
import WorkerScript from "./worker?worker";

/** What the pages call each start-up stage while it loads. */
export const STAGE_TITLES: Record<StageName, string> = {
  pyodide: "Python (Pyodide)",
  numpy: "numpy",
  topos: "topos",
  webgpu: "WebGPU adapter",
};

/** What the worker tells one client about its own runs. */
export interface PythonClient {
  /** The client's run was sent to the worker. */
  busy(id: number): void;
  /** The client's run answered (not told when the client has asked again meanwhile: the result is stale). */
  result(result: RunResult, id: number, ms: number): void;
  /** The client's run was stopped (its time limit, or Python failed during it); the worker has been restarted. */
  stopped(stop: Stop, id: number): void;
}

/** What the worker tells its owner, for every client. */
export interface PythonEvents {
  stage(message: StageMessage): void;
  ready(webgpu: WebGpuStatus): void;
  /** Python could not start at all. The worker is not restarted: it would fail the same way. */
  failed(stop: Stop): void;
  /** The worker failed while no run was in flight; it has been restarted. */
  restarted(stop: Stop): void;
}

export interface PythonRequest {
  client: string;
  /** The client's own id for the request; ids of different clients may coincide. */
  id: number;
  code: string;
  backend: Backend;
  /** How long the run may take, in milliseconds, before the worker is stopped and restarted. */
  timeLimitMs: number;
}

type InFlight = PythonRequest & { workerId: number };

export class PythonWorker {
  private worker!: Worker;
  private started = false;
  private inFlight: InFlight | null = null;
  /** Each client's newest request; a Map keeps insertion order, which is the order clients take turns in. */
  private readonly pending = new Map<string, PythonRequest>();
  private readonly clients = new Map<string, PythonClient>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private nextWorkerId = 1;
  /** The start-up so far, replayed to a client that joins late. */
  private readonly stages = new Map<StageName, StageMessage>();
  private webgpu: WebGpuStatus | null = null;

  constructor(private readonly events: PythonEvents) {
    this.spawn();
  }

  /** Register a client (or replace its callbacks); returns the start-up so far, for it to show. */
  join(name: string, client: PythonClient): { stages: StageMessage[]; webgpu: WebGpuStatus | null } {
    this.clients.set(name, client);
    return { stages: [...this.stages.values()], webgpu: this.started ? this.webgpu : null };
  }

  /** A client went away: its pending request is dropped (a run in flight finishes unseen). */
  leave(name: string): void {
    this.clients.delete(name);
    this.pending.delete(name);
  }

  run(request: PythonRequest): void {
    // Deleting first moves a client that asks again to the back of the turn order.
    this.pending.delete(request.client);
    this.pending.set(request.client, request);
    this.pump();
  }

  private spawn(): void {
    this.started = false;
    this.stages.clear();
    this.worker = new WorkerScript({ name: "python" });
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
        this.stages.set(message.stage, message);
        this.events.stage(message);
        break;
      case "ready":
        this.started = true;
        this.webgpu = message.webgpu;
        this.events.ready(message.webgpu);
        this.pump();
        break;
      case "result": {
        const request = this.finish();
        const current = request !== null && request.workerId === message.id && !this.pending.has(request.client);
        if (current) this.clients.get(request.client)?.result(message.result, request.id, message.ms);
        this.pump();
        break;
      }
      case "crashed": {
        const stop = describeCrash(message, this.started);
        if (this.started) {
          this.restart(stop);
        } else {
          this.finish();
          this.events.failed(stop);
        }
        break;
      }
    }
  }

  private pump(): void {
    if (!this.started || this.inFlight) return;
    const next = this.pending.values().next();
    if (next.done) return;
    const request = next.value;
    this.pending.delete(request.client);
    // The worker's ids are this class's own, because ids from different clients may coincide.
    const workerId = this.nextWorkerId++;
    this.inFlight = { ...request, workerId };
    this.worker.postMessage({ type: "run", id: workerId, code: request.code, backend: request.backend });
    this.clients.get(request.client)?.busy(request.id);
    this.timer = setTimeout(() => this.restart(timeLimitStop(request.timeLimitMs)), request.timeLimitMs);
  }

  private finish(): InFlight | null {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const request = this.inFlight;
    this.inFlight = null;
    return request;
  }

  /** Terminate the worker and start a fresh one; the client whose run it was (else the owner) is told why. */
  private restart(stop: Stop): void {
    const request = this.finish();
    this.worker.terminate();
    if (request) this.clients.get(request.client)?.stopped(stop, request.id);
    else this.events.restarted(stop);
    this.spawn();
  }
}

// The playground: one client with a worker of its own -------------------------------------------

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

const PAGE = "page";

export class PythonSession {
  private readonly worker: PythonWorker;
  private nextId = 1;

  constructor(
    events: SessionEvents,
    /** How long one run may take, in milliseconds, before the worker is stopped and restarted. */
    private readonly timeLimitMs: number,
  ) {
    const stopped = (stop: Stop, id: number | null) => events.stopped(stop.reason, id, stop.failure);
    this.worker = new PythonWorker({
      stage: (message) => events.stage(message),
      ready: (webgpu) => events.ready(webgpu),
      failed: (stop) => stopped(stop, null),
      restarted: (stop) => stopped(stop, null),
    });
    this.worker.join(PAGE, {
      busy: (id) => events.busy(id),
      result: (result, id, ms) => events.result(result, id, ms),
      stopped,
    });
  }

  /** Queue `code` to run; returns the request id. */
  run(code: string, backend: Backend): number {
    const id = this.nextId++;
    this.worker.run({ client: PAGE, id, code, backend, timeLimitMs: this.timeLimitMs });
    return id;
  }

  /** The newest request id handed out (results of older ones are stale). */
  get latestId(): number {
    return this.nextId - 1;
  }
}
