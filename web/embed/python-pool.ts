// One Python worker serving several clients (the embeds of a page): the leader's side
// of shared-python.ts. It is the playground's PythonSession (web/src/session.ts) for
// many clients at once, with the same rules per client:
//
// - one run in flight at a time, for all clients together;
// - each client has at most one pending request: a newer one from the same client
//   replaces it (a newer edit cancels an older one), and clients take turns, so one
//   embed typing fast cannot starve the others;
// - a run past its client's time limit, or a worker that crashed, is stopped by
//   terminating the worker and starting a fresh one; the other clients' pending
//   requests run on the fresh worker.
//
// The worker is the playground's own (web/src/worker.ts), unchanged.

import type { Backend, RunResult, StageMessage, StageName, WebGpuStatus, WorkerToHost } from "../protocol";
import { describeCrash, timeLimitStop, workerErrorStop } from "../src/python-failure";
import PythonWorker from "../src/worker?worker";

/** What the pool tells one client. */
export interface PoolClient {
  busy(id: number): void;
  result(result: RunResult, id: number, ms: number): void;
  stopped(reason: string, id: number | null): void;
}

/** What the pool tells every client. */
export interface PoolBroadcast {
  stage(message: StageMessage): void;
  ready(webgpu: WebGpuStatus): void;
  /** Python could not start at all: every client is told why. */
  failed(reason: string): void;
}

export interface PoolRequest {
  client: string;
  id: number;
  code: string;
  backend: Backend;
  timeLimitMs: number;
}

export class PythonPool {
  private worker!: Worker;
  private started = false;
  private inFlight: (PoolRequest & { workerId: number }) | null = null;
  /** Each client's newest request; Map keeps insertion order, which is the order clients take turns in. */
  private readonly pending = new Map<string, PoolRequest>();
  private readonly clients = new Map<string, PoolClient>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private nextWorkerId = 1;
  /** The start-up so far, replayed to a client that joins late. */
  private readonly stages = new Map<StageName, StageMessage>();
  private webgpu: WebGpuStatus | null = null;

  constructor(private readonly broadcast: PoolBroadcast) {
    this.spawn();
  }

  /** Register a client (or replace its callbacks); it is told the start-up so far. */
  join(name: string, client: PoolClient): { stages: StageMessage[]; webgpu: WebGpuStatus | null } {
    this.clients.set(name, client);
    return { stages: [...this.stages.values()], webgpu: this.started ? this.webgpu : null };
  }

  /** A client went away: its pending request is dropped (a run in flight finishes unseen). */
  leave(name: string): void {
    this.clients.delete(name);
    this.pending.delete(name);
  }

  run(request: PoolRequest): void {
    // Deleting first moves a client that asks again to the back of the turn order.
    this.pending.delete(request.client);
    this.pending.set(request.client, request);
    this.pump();
  }

  private spawn(): void {
    this.started = false;
    this.stages.clear();
    this.worker = new PythonWorker({ name: "python" });
    this.worker.addEventListener("message", (event: MessageEvent<WorkerToHost>) => this.receive(event.data));
    this.worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.restart(workerErrorStop(event.message).reason);
    });
  }

  private receive(message: WorkerToHost): void {
    switch (message.type) {
      case "stage":
        this.stages.set(message.stage, message);
        this.broadcast.stage(message);
        break;
      case "ready":
        this.started = true;
        this.webgpu = message.webgpu;
        this.broadcast.ready(message.webgpu);
        this.pump();
        break;
      case "result": {
        const request = this.finish();
        if (request && request.workerId === message.id) this.clients.get(request.client)?.result(message.result, request.id, message.ms);
        this.pump();
        break;
      }
      case "crashed": {
        // One plain sentence, with the user's line when known (the traceback is not the embed's to show).
        const stop = describeCrash(message, this.started);
        if (this.started) {
          this.restart(stop.reason);
        } else {
          this.finish();
          this.broadcast.failed(stop.reason);
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
    // The worker's ids are the pool's own: ids from different clients may coincide.
    const workerId = this.nextWorkerId++;
    this.inFlight = { ...request, workerId };
    this.worker.postMessage({ type: "run", id: workerId, code: request.code, backend: request.backend });
    this.clients.get(request.client)?.busy(request.id);
    this.timer = setTimeout(() => this.restart(timeLimitStop(request.timeLimitMs).reason), request.timeLimitMs);
  }

  private finish(): (PoolRequest & { workerId: number }) | null {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const request = this.inFlight;
    this.inFlight = null;
    return request;
  }

  /** Terminate the worker and start a fresh one; the client whose run it was is told why. */
  private restart(reason: string): void {
    const request = this.finish();
    this.worker.terminate();
    if (request) this.clients.get(request.client)?.stopped(reason, request.id);
    this.spawn();
  }
}
