// The embed's options, read from its URL. The embedding page chooses them in the
// iframe's src; docs/embedding.md documents each one.
//
//   embed.html?readings=spec,plan,output&show=plan&mode=readonly&origins=https://a.example#code=v1:...
//
// The code comes from the fragment (the playground's share format, "#code=v1:..."),
// or from ?example=<gallery file>, or later from the embedder (a set-code message).

import type { Backend, ReadingName } from "../protocol";
import { READING_NAMES } from "../src/panes/registry";

/** A tab of the embed: one of the six readings, or what the code printed. */
export type PaneName = ReadingName | "output";
export const PANE_NAMES: readonly PaneName[] = [...READING_NAMES, "output"];

export interface EmbedOptions {
  /** A name the embed puts in every message it sends, so that a page with several can tell them apart. */
  id: string;
  /** The tabs, in this order. */
  readings: PaneName[];
  /** The tab open at first; null starts with every tab closed. */
  show: PaneName | null;
  editable: boolean;
  /** The origins whose messages are read, and the only ones messages are sent to. */
  origins: string[];
  /** "visible": start Python when the embed is first scrolled into view; "now": at once. */
  start: "visible" | "now";
  /** Share one Python with the other embeds of the page (false: a worker of its own). */
  sharePython: boolean;
  backend: Backend;
  timeLimitMs: number;
  /** A gallery script's file name (docs/examples/), when the code is an example. */
  example: string | null;
  /** Run mode: a Run button runs the code as a program (as __main__), with no time limit but Stop. */
  run: boolean;
}

const BACKENDS: readonly Backend[] = ["auto", "numpy", "webgpu"];

/** The options in `url`, and a sentence for each parameter that could not be read (its default is used). */
export function readOptions(url: URL): { options: EmbedOptions; problems: string[] } {
  const params = url.searchParams;
  const problems: string[] = [];

  const readings = listParam(params.get("readings"), PANE_NAMES, "readings", problems) ?? [...PANE_NAMES];
  let show: PaneName | null = readings[0] ?? null;
  const shown = params.get("show");
  if (shown === "none") show = null;
  else if (shown !== null) {
    if ((readings as string[]).includes(shown)) show = shown as PaneName;
    else problems.push(`show=${shown}: not one of the readings shown (${readings.join(", ")}), or "none"`);
  }

  const mode = params.get("mode") ?? "editable";
  if (mode !== "editable" && mode !== "readonly") problems.push(`mode=${mode}: use "editable" or "readonly"`);

  const start = params.get("start") ?? "visible";
  if (start !== "visible" && start !== "now") problems.push(`start=${start}: use "visible" or "now"`);

  const backend = params.get("backend") ?? "auto";
  if (!(BACKENDS as string[]).includes(backend)) problems.push(`backend=${backend}: use one of ${BACKENDS.join(", ")}`);

  // Off unless the embedder allows it: a run takes as long as the script wants, and a second Python.
  const run = params.get("run") ?? "off";
  if (run !== "allow" && run !== "off") problems.push(`run=${run}: use "allow" or "off"`);

  const timeLimit = Number(params.get("timeLimit") ?? 10_000);
  if (!(timeLimit > 0)) problems.push(`timeLimit=${params.get("timeLimit")}: a number of milliseconds is needed`);

  return {
    options: {
      id: params.get("id") ?? "",
      readings,
      show,
      editable: mode !== "readonly",
      origins: readOrigins(params.get("origins"), url.origin, problems),
      start: start === "now" ? "now" : "visible",
      sharePython: params.get("python") !== "own",
      backend: (BACKENDS as string[]).includes(backend) ? (backend as Backend) : "auto",
      timeLimitMs: timeLimit > 0 ? timeLimit : 10_000,
      example: params.get("example"),
      run: run === "allow",
    },
    problems,
  };
}

function listParam<T extends string>(value: string | null, allowed: readonly T[], name: string, problems: string[]): T[] | null {
  if (value === null) return null;
  const items = value.split(",").map((item) => item.trim()).filter(Boolean);
  const unknown = items.filter((item) => !(allowed as readonly string[]).includes(item));
  if (unknown.length) problems.push(`${name}=${value}: ${unknown.join(", ")} unknown; choose from ${allowed.join(", ")}`);
  return items.filter((item): item is T => (allowed as readonly string[]).includes(item));
}

/**
 * The allow-list: comma-separated origins ("https://docs.example.org,http://localhost:8000").
 * Without the parameter, only the embed's own origin (a docs page on the same site).
 * "*" is refused: the embed would hand its code and readings to any page that frames it.
 */
function readOrigins(value: string | null, ownOrigin: string, problems: string[]): string[] {
  if (value === null) return [ownOrigin];
  const origins: string[] = [];
  for (const item of value.split(",").map((entry) => entry.trim()).filter(Boolean)) {
    if (item === "*") {
      problems.push('origins=*: not accepted; list the origins of the pages that embed this one');
      continue;
    }
    let origin: string;
    try {
      origin = new URL(item).origin;
    } catch {
      problems.push(`origins: ${item} is not an origin (write it as https://host[:port])`);
      continue;
    }
    if (origin === "null" || origin !== item.replace(/\/$/, "")) {
      problems.push(`origins: ${item} is not an origin (write it as https://host[:port], without a path)`);
      continue;
    }
    origins.push(origin);
  }
  return origins;
}
