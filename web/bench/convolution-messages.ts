// The convolution benchmark's messages between its page (convolution.ts) and worker. Types only.
import type { StageMessage } from "../protocol";

export interface ConvolutionBenchRequest {
  /** Timed rounds, the two paths interleaved, after one untimed run each. */
  rounds: number;
  /** Names of tests/bench/convolution.py's DEVICE_SHAPES rows; empty for all of them. */
  shapes: string[];
}

export type ConvolutionBenchReply =
  | StageMessage
  /** tests/bench/convolution.py's device_report(), as JSON text. */
  | { type: "report"; json: string }
  | { type: "failed"; error: string };
