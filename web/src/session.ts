// The page's side of the Python worker (web/src/worker.ts): one worker and the clients it
// runs code for. The playground is its only client (PythonSession, below); on a page of
// embeds, the embed elected to lead runs one worker for all of them (web/embed/shared-python.ts).
//
// - One run is in flight at a time, for all clients together.
// - Each client has at most one pending request: a newer one replaces it, so a newer edit
//   cancels an older one and the worker never builds up a queue of stale runs. A run's
//   result comes in parts (the code's output, then each reading, then its end; see
//   protocol.ts): a client that asks again while its run is in flight supersedes it (the
//   worker sends no more of its readings), and every part of it that still comes is
//   dropped. Clients take turns, so one embed typing fast cannot starve the others.
// - A run past its time limit, or a worker that failed, is stopped by terminating the
//   worker and starting a fresh one; the pending requests run on the fresh worker.

import type {
  Backend,
  FileBytes,
  HostToWorker,
  Reading,
  ReadingName,
  RunResult,
  StageMessage,
  StageName,
  UserError,
  WebGpuStatus,
  WorkerToHost,
} from "../protocol";
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
  /**
   * The client's code ran: its output and its error or recording, no readings yet (`readings` is null).
   * Like `reading`, told only while the run is the client's newest request.
   */
  ran?(result: RunResult, id: number): void;
  /** One reading of the client's run, as soon as it is made. */
  reading?(name: ReadingName, reading: Reading, id: number): void;
  /**
   * The client's run answered: the whole result, every reading in it (not told when the client has
   * asked again meanwhile: the result is stale).
   */
  result(result: RunResult, id: number, ms: number): void;
  /** The client's run was stopped (its time limit, or Python failed during it); the worker has been restarted. */
  stopped(stop: Stop, id: number): void;
  /** The files the client's run wrote in its working directory (none, often), before its result. */
  written?(files: FileBytes[], id: number): void;
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
  /** The reading whose pane is in view: the worker makes it first. */
  first?: ReadingName;
}

type InFlight = PythonRequest & {
  workerId: number;
  /** The result so far: set when the code has run, its readings filled in as they come. */
  result: RunResult | null;
  superseded: boolean;
};

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
  /** The user's files, sent again to a fresh worker (web/src/files/). */
  private files: FileBytes[] = [];
  /** Notebook exports waiting for the worker, by id. */
  private readonly notebooks = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  private nextNotebookId = 1;

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
    const running = this.inFlight;
    if (running && running.client === request.client && !running.superseded) {
      running.superseded = true;
      this.worker.postMessage({ type: "supersede", id: running.workerId } satisfies HostToWorker);
    }
    this.pump();
  }

  /** The user's files: every run from now on starts in a working directory that holds them. */
  setFiles(files: FileBytes[]): void {
    this.files = files;
    this.worker.postMessage({ type: "files", files } satisfies HostToWorker);
  }

  /** The code as a Jupyter notebook's JSON text, made by the worker's Python (after the run in flight). */
  notebook(code: string, title: string | null): Promise<string> {
    const id = this.nextNotebookId++;
    this.worker.postMessage({ type: "notebook", id, code, title } satisfies HostToWorker);
    return new Promise((resolve, reject) => this.notebooks.set(id, { resolve, reject }));
  }

  private spawn(): void {
    this.started = false;
    this.stages.clear();
    this.worker = new WorkerScript({ name: "python" });
    if (this.files.length) this.worker.postMessage({ type: "files", files: this.files } satisfies HostToWorker);
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
      case "ran": {
        const request = this.current(message.id);
        if (!request) break;
        request.result = { ...message.result }; // a copy of the client's own: the readings are filled in below
        this.clients.get(request.client)?.ran?.(message.result, request.id);
        break;
      }
      case "reading": {
        const request = this.current(message.id);
        if (!request?.result) break;
        request.result.readings ??= {} as Record<ReadingName, Reading>;
        request.result.readings[message.name] = message.reading;
        this.clients.get(request.client)?.reading?.(message.name, message.reading, request.id);
        break;
      }
      case "done": {
        const request = this.current(message.id);
        this.finish();
        if (request?.result && message.complete) {
          const { result } = request;
          const whole: RunResult = { ...result, timings: message.timings, ...(message.webgpu ? { webgpu: message.webgpu } : {}) };
          this.clients.get(request.client)?.result(whole, request.id, message.ms);
        }
        this.pump();
        break;
      }
      case "files-written": {
        const request = this.current(message.id);
        if (request) this.clients.get(request.client)?.written?.(message.files, request.id);
        break;
      }
      case "notebook": {
        const waiting = this.notebooks.get(message.id);
        this.notebooks.delete(message.id);
        if (message.text !== undefined) waiting?.resolve(message.text);
        else waiting?.reject(new Error(message.error ?? "no notebook"));
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

  /** The run in flight if the message with this worker id is about it and its client has not asked again since. */
  private current(workerId: number): InFlight | null {
    const request = this.inFlight;
    return request !== null && request.workerId === workerId && !this.pending.has(request.client) ? request : null;
  }

  private pump(): void {
    if (!this.started || this.inFlight) return;
    const next = this.pending.values().next();
    if (next.done) return;
    const request = next.value;
    this.pending.delete(request.client);
    // The worker's ids are this class's own, because ids from different clients may coincide.
    const workerId = this.nextWorkerId++;
    this.inFlight = { ...request, workerId, result: null, superseded: false };
    const message: HostToWorker = { type: "run", id: workerId, code: request.code, backend: request.backend, first: request.first };
    this.worker.postMessage(message);
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
    for (const waiting of this.notebooks.values()) waiting.reject(new Error(`Python was restarted: ${stop.reason}`));
    this.notebooks.clear();
    if (request) this.clients.get(request.client)?.stopped(stop, request.id);
    else this.events.restarted(stop);
    this.spawn();
  }
}

// The playground: one client with a worker of its own -------------------------------------------

export interface SessionEvents {
  stage(message: StageMessage): void;
  ready(webgpu: WebGpuStatus): void;
  /** The code ran (see PythonClient.ran); its readings follow one by one, then the whole result. */
  ran?(result: RunResult, id: number): void;
  reading?(name: ReadingName, reading: Reading, id: number): void;
  result(result: RunResult, id: number, ms: number): void;
  /**
   * A run was stopped, or the worker failed. `reason` is one plain sentence for the user;
   * `failure` is the Python failure behind it, when there was one (its traceback, the user's line).
   */
  stopped(reason: string, id: number | null, failure?: UserError | null): void;
  /** A run was sent to the worker (the page shows that it is busy). */
  busy(id: number): void;
  /** The files a run wrote in its working directory. */
  written?(files: FileBytes[], id: number): void;
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
      ran: (result, id) => events.ran?.(result, id),
      reading: (name, reading, id) => events.reading?.(name, reading, id),
      result: (result, id, ms) => events.result(result, id, ms),
      stopped,
      written: (files, id) => events.written?.(files, id),
    });
  }

  setFiles(files: FileBytes[]): void {
    this.worker.setFiles(files);
  }

  notebook(code: string, title: string | null): Promise<string> {
    return this.worker.notebook(code, title);
  }

  /** Queue `code` to run, the reading `first` made first; returns the request id. */
  run(code: string, backend: Backend, first?: ReadingName): number {
    const id = this.nextId++;
    this.worker.run({ client: PAGE, id, code, backend, first, timeLimitMs: this.timeLimitMs });
    return id;
  }

  /** The newest request id handed out (results of older ones are stale). */
  get latestId(): number {
    return this.nextId - 1;
  }
}
