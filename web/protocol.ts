// The messages between the page and the Python worker, and the shape of a run's result.
// Types only: both sides import this module, and it must stay free of code, so
// that the worker never pulls page code in (and the reverse).

/**
 * Where the kernels reading's program runs after each run: nowhere beyond the numpy
 * interpreter ("numpy"), on the browser's WebGPU ("webgpu"), or on WebGPU when the
 * adapter is a hardware one ("auto"; a software fallback adapter is slower than numpy).
 */
export type Backend = "numpy" | "webgpu" | "auto";

/** The start-up stages, in order; each reports "started" then "done" (or "failed"). */
export type StageName = "pyodide" | "numpy" | "topos" | "webgpu";
export type StageState = "started" | "done" | "failed";

/** The six readings of one recording, in the page's order (topos.playground.READINGS names the same). */
export type ReadingName = "spec" | "graph" | "plan" | "gradient" | "hlo" | "kernels";
/** The same names as a list, in the page's order: the pane registry's tabs and the worker's order of making readings. */
export const READING_NAMES: ReadingName[] = ["spec", "graph", "plan", "gradient", "hlo", "kernels"];

// Page -> worker -------------------------------------------------------------------------

export interface RunRequest {
  type: "run";
  /** Increases with every request; a result names the request it answers. */
  id: number;
  code: string;
  backend: Backend;
  /** The reading whose pane is in view: it is made and sent first (then the graph, then the rest). */
  first?: ReadingName;
}

/** A newer request will follow the run `id`: the worker sends no more of its readings, and ends it. */
export interface SupersedeRequest {
  type: "supersede";
  id: number;
}

export type HostToWorker = RunRequest | SupersedeRequest | FilesRequest | NotebookRequest;

// Worker -> page -------------------------------------------------------------------------

export interface StageMessage {
  type: "stage";
  stage: StageName;
  state: StageState;
  /** Milliseconds since the worker started, when the stage ended. */
  ms?: number;
  detail?: string;
}

export interface ReadyMessage {
  type: "ready";
  webgpu: WebGpuStatus;
}

// A run's result comes in parts, as each is ready: "ran" (the code ran: its output, its error or
// its recording; no readings yet), then one "reading" a reading (none after an error), then "done".

export interface RanMessage {
  type: "ran";
  id: number;
  /** The result so far: `readings` is null, and `timings` has the code's alone. */
  result: RunResult;
}

export interface ReadingMessage {
  type: "reading";
  id: number;
  name: ReadingName;
  reading: Reading;
}

export interface DoneMessage {
  type: "done";
  id: number;
  /** False when a newer request superseded the run before every reading was sent. */
  complete: boolean;
  timings: Record<string, number>;
  webgpu?: WebGpuReport;
  /** Milliseconds the worker spent on the request (Python and WebGPU). */
  ms: number;
}

/** The worker cannot go on: Python ran out of memory, or start-up or the runtime failed. The page restarts it. */
export interface CrashedMessage {
  type: "crashed";
  id: number | null;
  reason: "memory" | "fatal";
  message: string;
}

export type WorkerToHost =
  | StageMessage
  | ReadyMessage
  | RanMessage
  | ReadingMessage
  | DoneMessage
  | CrashedMessage
  | FilesWrittenMessage
  | NotebookMessage;

export interface WebGpuStatus {
  available: boolean;
  /** A software adapter (SwiftShader): "auto" leaves the kernels to numpy there. */
  fallback: boolean;
  /** Why "auto" does not take WebGPU, in a word (null: it does); see WebGpuReason. */
  reason: WebGpuReason | null;
  /** The adapter's description, or why there is none. */
  detail: string;
}

/**
 * Why the kernels run on numpy (Python's NoAdapterError.reason, py/topos/webgpu/device_interface.py):
 * no navigator.gpu, no adapter, no JSPI (Python cannot wait for WebGPU's promises), Python entered
 * synchronously, no wgpu-py (natively), an adapter that failed to start; or a fallback (software)
 * adapter, which "auto" leaves to numpy.
 */
export type WebGpuReason = "no-webgpu" | "no-adapter" | "no-jspi" | "synchronous-entry" | "no-wgpu" | "failed" | "fallback";

// Run mode: the page and the run worker (web/src/run-worker.ts) -----------------------------
// The run worker runs one script at a time as a program (topos.playground.run_main), for as long
// as it takes; the page stops it by terminating the worker.

export interface RunMainRequest {
  type: "run-main";
  id: number;
  code: string;
}

export type HostToRunWorker = RunMainRequest | FilesRequest;

/** The run worker has loaded Python and takes a run. */
export interface RunWorkerReadyMessage {
  type: "run-ready";
}

/** The run began (Python has it). */
export interface RunStartedMessage {
  type: "run-started";
  id: number;
}

/**
 * One batch of a run's output, as it comes (topos.playground.program says when batches go).
 * `append`: printed text (whole lines) and new cards, in order; the cards are numbered from 0
 * in the order they come. `changed`: cards sent before, as they are now (a plot that grew).
 */
export interface RunOutputMessage {
  type: "run-output";
  id: number;
  append: OutputItem[];
  changed: [number, OutputItem][];
  progress: RunProgress | null;
}

/** The newest step the script reported (show.progress(step, total)), and when. */
export interface RunProgress {
  step: number;
  total: number | null;
  /** Seconds since the run started, when the step was reported. */
  seconds: number;
}

/** The run ended: normally (`error` null) or with the error the script raised. */
export interface RunEndMessage {
  type: "run-end";
  id: number;
  error: UserError | null;
  /** The run's length, measured by Python. */
  seconds: number;
}

export type RunWorkerToHost =
  | StageMessage
  | RunWorkerReadyMessage
  | RunStartedMessage
  | RunOutputMessage
  | RunEndMessage
  | CrashedMessage
  | FilesWrittenMessage;

// The user's files and the files a run writes (web/src/files/), both workers ----------------
// The page sends each worker the user's whole set of files whenever it changes (and to a fresh
// worker); every run after starts in a working directory holding exactly those files
// (topos.playground.files). After each run the worker sends what the run wrote there.

/** The user's files, all of them: they replace the set the worker had. */
export interface FilesRequest {
  type: "files";
  files: FileBytes[];
}

/** One file: its name (a path relative to the working directory, for a written file) and its bytes. */
export interface FileBytes {
  name: string;
  bytes: Uint8Array;
}

/** What the run `id` wrote in its working directory: new files, and the user's files it changed. */
export interface FilesWrittenMessage {
  type: "files-written";
  id: number;
  files: FileBytes[];
}

/** Make the script a Jupyter notebook (topos.playground.notebook.notebook_json), in the readings worker. */
export interface NotebookRequest {
  type: "notebook";
  id: number;
  code: string;
  title: string | null;
}

/** The notebook's JSON text, or why there is none. */
export interface NotebookMessage {
  type: "notebook";
  id: number;
  text?: string;
  error?: string;
}

// A run's result (made by topos.playground.run in Python, completed by the worker) ---------

export interface RunResult {
  output: OutputItem[];
  /** The output as plain text: printed text, and each card's text on lines of its own (as the docs show it). */
  output_text: string;
  /** The user's code raised: no readings come with it (the page keeps the last good ones). */
  error: UserError | null;
  recording: RecordingInfo | null;
  /** Every node of the recording and the user's line that recorded it (null when topos did). */
  nodes: NodeInfo[];
  readings: Record<ReadingName, Reading> | null;
  timings: Record<string, number>;
  /** Present when the kernels ran on WebGPU, or were asked to and could not. */
  webgpu?: WebGpuReport;
}

export interface UserError {
  type: string;
  message: string;
  line: number | null;
  column?: number;
  traceback: string;
}

export interface RecordingInfo {
  kind: "network" | "tape";
  nodes: number;
  readables: number[];
}

export interface NodeInfo {
  index: number;
  opcode: string;
  line: number | null;
}

/**
 * One reading: its text and its rows (and, for the graph, its nodes and edges), or why there is none.
 * The rows' texts joined with "\n" are the text, exactly.
 */
export interface Reading {
  text?: string;
  rows?: ReadingRow[];
  error?: string;
  empty?: string;
  graph?: GraphJson;
  /**
   * The HLO reading's second module: a whole training step, the gradient reading's plan followed
   * by Adam's update (`emit_training_step`), or why there is none (its `error`).
   */
  step?: Reading;
}

/** One line of a reading and the nodes it is about (none for a summary line), as Python wrote them. */
export interface ReadingRow {
  text: string;
  nodes: number[];
}

export interface GraphJson {
  /**
   * `scope`: the calls the node was recorded inside, outermost first (the user's functions, then the
   * topos function the innermost called: ["build", "causal_self_attention", "softmax"]); the drawing
   * groups nodes by it. Absent in a `Graph.to_json()` (a graph card of a compiler graph).
   */
  nodes: { index: number; opcode: string; shape: string; line: number | null; scope?: string[] }[];
  edges: [number, number][];
}

export interface WebGpuReport {
  ran: boolean;
  /** Why the launches did not run on WebGPU, or on which adapter they did. */
  detail: string;
  launches: LaunchTiming[];
  /** Each readable's largest |WebGPU run - interpreter| once the whole program ran. */
  outputs?: { node: number; maxAbsDiff: number | null }[];
}

export interface LaunchTiming {
  kernel: string;
  nodes: number[];
  ms: number;
  /** Largest |WebGPU - interpreter| over the value the launch finishes (null: it finishes none). */
  maxAbsDiff: number | null;
}

// Output cards (topos.show), as JSON ---------------------------------------------------------

export type OutputItem = PrintItem | TextCard | LinesCard | GraphCard | PlotCard | ImageCard | HeatmapCard;

export interface PrintItem {
  kind: "print";
  text: string;
}

export interface TextCard {
  kind: "spec" | "hlo" | "text";
  text: string;
}

export interface LinesCard {
  kind: "lines";
  lines: string[];
}

export interface GraphCard {
  kind: "graph";
  graph: GraphJson;
}

export interface PlotCard {
  kind: "plot";
  title: string;
  x_label: string;
  y_label: string;
  log_y: boolean;
  layers: { label: string; x: number[]; y: (number | null)[] }[];
}

/** One picture of an image or heatmap card: a byte a pixel (a channel) in base64, rows top first. */
export interface CardPicture {
  width: number;
  height: number;
  channels: 1 | 3;
  pixels: string;
  caption?: string;
}

/** The drawing shared by image and heatmap cards (py/topos/show/pictures.py): a byte's colour through `palette`. */
interface PictureCard {
  title: string;
  shape: number[];
  scale: "gray" | "diverging" | "rgb";
  /** Colours evenly spaced from byte 0 to 255 (a byte between two is their blend); null for RGB bytes. */
  palette: [number, number, number][] | null;
  range: [number, number];
  downsampled: number;
}

export interface ImageCard extends PictureCard {
  kind: "image";
  count: number;
  images: CardPicture[];
}

export interface HeatmapCard extends PictureCard {
  kind: "heatmap";
  x_range: [number, number];
  y_range: [number, number];
  image: CardPicture;
  points: { x: number[]; y: number[]; class: number[] } | null;
  class_colours: [number, number, number][];
}
