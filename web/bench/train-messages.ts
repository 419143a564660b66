// The training benchmark's messages between its page (train.ts) and worker (train-worker.ts). Types only.
import type { StageMessage } from "../protocol";

export interface TrainBenchRequest {
  type?: undefined;
  /** Timed steps for each backend, after `warmup` untimed ones. */
  steps: number;
  warmup: number;
  /** "numpy", "numpy-no-blas", "webgpu" (any of them), in the order they take turns. */
  backends: string[];
  /** Whether the worker loads the playground's BLAS first (web/src/blas-loader.ts). */
  blas: boolean;
}

/** Train the numpy model of the chunks (made, and warmed up `warmup` steps, at the first) `steps` more steps. */
export interface TrainChunkRequest {
  type: "chunk";
  steps: number;
  warmup: number;
}

export type TrainBenchReply =
  | StageMessage
  /** tests/bench/train_webgpu.py's report (measure()), as JSON text. */
  | { type: "report"; json: string }
  /** A chunk's wall-clock milliseconds a step, timed in Python around the steps. */
  | { type: "chunk"; ms: number }
  | { type: "failed"; error: string };
