// One Python for every embed of a page. Pyodide takes seconds of processor time and
// a hundred megabytes to start; a docs page with ten examples must not start ten.
//
// The embeds elect a leader with the Web Locks API: the first embed that needs
// Python takes the lock "topos-python:<site path>" and holds it for as long as it
// lives; it runs the one Python worker (PythonWorker, web/src/session.ts), with every
// embed of the page as one of its clients. The others are followers:
// they send their runs to the leader over a BroadcastChannel and get their results
// back on it. When the leader goes away (its iframe removed, its page closed), the
// browser hands the lock to the next embed waiting for it, which starts a fresh
// Python and announces itself; followers send it the request they were still
// waiting for. Locks and channels are shared by the documents of one origin in one
// storage partition (for a third-party iframe: the embeds under the same top-level
// site), which is exactly the set of embeds that can share a worker.
//
// Why not a SharedWorker: a SharedWorker cannot be terminated by its clients, and
// Chromium does not let it start a dedicated worker of its own, so an endless loop
// could never be stopped. The leader's worker is an ordinary dedicated worker that
// the time limit can terminate.
//
// Where the browser has no Web Locks or BroadcastChannel, each embed runs its own
// worker with the playground's PythonSession (see python.ts).

import type { Backend, RunResult, StageMessage, WebGpuStatus } from "../protocol";
import { PythonWorker, type PythonClient, type SessionEvents } from "../src/session";

type ChannelMessage =
  | { kind: "hello"; from: string }
  | { kind: "bye"; from: string }
  | { kind: "leader"; to: string | null; stages: StageMessage[]; webgpu: WebGpuStatus | null }
  | { kind: "stage"; message: StageMessage }
  | { kind: "ready"; webgpu: WebGpuStatus }
  | { kind: "failed"; reason: string }
  | { kind: "run"; from: string; id: number; code: string; backend: Backend; timeLimitMs: number }
  | { kind: "busy"; to: string; id: number }
  | { kind: "result"; to: string; id: number; result: RunResult; ms: number }
  | { kind: "stopped"; to: string; id: number; reason: string };

interface Request {
  id: number;
  code: string;
  backend: Backend;
}

export function canSharePython(): boolean {
  return typeof BroadcastChannel === "function" && Boolean(navigator.locks);
}

export class SharedPython {
  private readonly name = crypto.randomUUID();
  private readonly channel: BroadcastChannel;
  /** The Python worker, once this embed leads. */
  private worker: PythonWorker | null = null;
  private nextId = 1;
  /** The newest request whose answer has not come (sent again to a new leader). */
  private waiting: Request | null = null;

  constructor(
    private readonly events: SessionEvents,
    private readonly timeLimitMs: number,
    /** Told "follower" at once, and "leader" if this embed is elected. */
    private readonly onRole: (role: "leader" | "follower") => void = () => {},
  ) {
    this.onRole("follower");
    const scope = new URL(".", window.location.href).pathname;
    this.channel = new BroadcastChannel(`topos-python:${scope}`);
    this.channel.addEventListener("message", (event: MessageEvent<ChannelMessage>) => this.receive(event.data));
    // Held until this document goes away; then the browser grants it to the next embed waiting.
    void navigator.locks.request(`topos-python:${scope}`, () => {
      this.lead();
      return new Promise<never>(() => {});
    });
    this.post({ kind: "hello", from: this.name });
    window.addEventListener("pagehide", () => this.post({ kind: "bye", from: this.name }));
  }

  /** Queue `code` to run; returns the request id (results of older ids are dropped). */
  run(code: string, backend: Backend): number {
    const request = { id: this.nextId++, code, backend };
    this.waiting = request;
    this.send(request);
    return request.id;
  }

  get latestId(): number {
    return this.nextId - 1;
  }

  private send(request: Request): void {
    if (this.worker) {
      this.worker.run({ client: this.name, ...request, timeLimitMs: this.timeLimitMs });
    } else {
      this.post({ kind: "run", from: this.name, ...request, timeLimitMs: this.timeLimitMs });
    }
  }

  private post(message: ChannelMessage): void {
    this.channel.postMessage(message);
  }

  // Answers, from our own worker or from the leader ------------------------------------------

  private readonly self: PythonClient = {
    busy: (id) => this.events.busy(id),
    result: (result, id, ms) => {
      if (this.waiting?.id === id) this.waiting = null;
      if (id === this.latestId) this.events.result(result, id, ms);
    },
    stopped: (stop, id) => {
      if (this.waiting?.id === id) this.waiting = null;
      this.events.stopped(stop.reason, id);
    },
  };

  private receive(message: ChannelMessage): void {
    if (this.worker) {
      this.serve(message);
      return;
    }
    switch (message.kind) {
      case "leader":
        if (message.to !== null && message.to !== this.name) return;
        for (const stage of message.stages) this.events.stage(stage);
        if (message.webgpu) this.events.ready(message.webgpu);
        // A newly elected leader never saw our request (or its predecessor took it along).
        if (message.to === null && this.waiting) this.send(this.waiting);
        break;
      case "stage":
        this.events.stage(message.message);
        break;
      case "ready":
        this.events.ready(message.webgpu);
        break;
      case "failed":
        this.events.stopped(message.reason, null);
        break;
      case "busy":
        if (message.to === this.name) this.self.busy(message.id);
        break;
      case "result":
        if (message.to === this.name) this.self.result(message.result, message.id, message.ms);
        break;
      case "stopped":
        if (message.to === this.name) this.self.stopped({ reason: message.reason, failure: null }, message.id);
        break;
    }
  }

  // Leading ------------------------------------------------------------------------------------

  private lead(): void {
    this.worker = new PythonWorker({
      stage: (message) => {
        this.events.stage(message);
        this.post({ kind: "stage", message });
      },
      ready: (webgpu) => {
        this.events.ready(webgpu);
        this.post({ kind: "ready", webgpu });
      },
      failed: (stop) => {
        this.events.stopped(stop.reason, null);
        this.post({ kind: "failed", reason: stop.reason });
      },
      // No embed's run was stopped, so none is told (the pending runs go to the fresh worker).
      restarted: () => {},
    });
    this.worker.join(this.name, this.self);
    this.onRole("leader");
    this.post({ kind: "leader", to: null, stages: [], webgpu: null });
    if (this.waiting) this.send(this.waiting);
  }

  /** The leader's side of the channel: followers' runs go to the worker, answers go back to them. */
  private serve(message: ChannelMessage): void {
    const worker = this.worker!;
    switch (message.kind) {
      case "hello": {
        const state = worker.join(message.from, this.follower(message.from));
        this.post({ kind: "leader", to: message.from, ...state });
        break;
      }
      case "run":
        worker.join(message.from, this.follower(message.from));
        worker.run({ client: message.from, id: message.id, code: message.code, backend: message.backend, timeLimitMs: message.timeLimitMs });
        break;
      case "bye":
        worker.leave(message.from);
        break;
    }
  }

  private follower(name: string): PythonClient {
    return {
      busy: (id) => this.post({ kind: "busy", to: name, id }),
      result: (result, id, ms) => this.post({ kind: "result", to: name, id, result, ms }),
      stopped: (stop, id) => this.post({ kind: "stopped", to: name, id, reason: stop.reason }),
    };
  }
}
