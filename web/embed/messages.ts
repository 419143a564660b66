// The embed's postMessage API (documented in docs/embedding.md). Types, the
// allow-list check, and posting to the embedding page.
//
// The embedding page sends:
//   {type: "topos:set-code", code}            replace the code and run it
//   {type: "topos:get-readings", request?}    ask for the readings (answered by "topos:readings")
// The embed sends (each with `embed`, the id given in its URL):
//   {type: "topos:ready", readings, editable}             the embed has loaded and reads messages
//   {type: "topos:readings-changed", ...EmbedReadings}    after every run
//   {type: "topos:readings", request, ...EmbedReadings}   the answer to get-readings
//   {type: "topos:height", height}                        its content's height changed, in CSS pixels
//   {type: "topos:rejected", reason}                      a message it could not read (from an allowed origin)
//
// Messages are read only when they come from the embedding page (the iframe's
// parent) and its origin is on the allow-list; anything else is ignored without an
// answer. The embed posts to each allowed origin by name, never to "*", so the
// browser delivers nothing when the parent's origin is not on the list.

import type { OutputItem, Reading, ReadingName, UserError } from "../protocol";
import type { PaneName } from "./options";

/** What an embed shows, as data. */
export interface EmbedReadings {
  code: string;
  /**
   * "empty": no code yet; "loading": Python is starting or the code is running;
   * "ok": the readings are this code's; "error": the code failed (the readings are the
   * last good ones, `error` says why); "stopped": the run was stopped (time limit, memory).
   */
  status: "empty" | "loading" | "ok" | "error" | "stopped";
  error: UserError | null;
  /** Why the run was stopped, when status is "stopped". */
  stopped: string | null;
  output: OutputItem[];
  /** The output as text, each card's text on lines of its own (exactly what a docs page's output shows). */
  outputText: string;
  /** The six readings (null before the first run that recorded something). */
  readings: Record<ReadingName, Reading> | null;
  /** How many runs have finished. */
  runs: number;
}

export type HostMessage = { type: "topos:set-code"; code: string } | { type: "topos:get-readings"; request?: unknown };

export type EmbedMessage =
  | { type: "topos:ready"; embed: string; readings: PaneName[]; editable: boolean }
  | ({ type: "topos:readings-changed"; embed: string } & EmbedReadings)
  | ({ type: "topos:readings"; embed: string; request: unknown } & EmbedReadings)
  | { type: "topos:height"; embed: string; height: number }
  | { type: "topos:rejected"; embed: string; reason: string };

/** Distributes EmbedMessage's union over Omit, so each variant keeps its own fields. */
type WithoutEmbed<T> = T extends unknown ? Omit<T, "embed"> : never;

export class EmbedChannel {
  constructor(
    private readonly id: string,
    private readonly origins: string[],
  ) {}

  /** Send to the embedding page, once per allowed origin (the browser drops those that are not its origin). */
  post(message: WithoutEmbed<EmbedMessage>): void {
    if (window.parent === window) return; // opened on its own: nobody to tell
    const full = { ...message, embed: this.id } as EmbedMessage;
    for (const origin of this.origins) window.parent.postMessage(full, origin);
  }

  /** Call `handle` for each message from the embedding page on an allowed origin. */
  listen(handle: (message: HostMessage) => void): void {
    window.addEventListener("message", (event: MessageEvent) => {
      if (event.source !== window.parent || window.parent === window) return;
      if (!this.origins.includes(event.origin)) return;
      const type = (event.data as { type?: unknown } | null)?.type;
      // Other scripts on the embedding page may post messages of their own: only "topos:" ones are ours.
      if (typeof type !== "string" || !type.startsWith("topos:")) return;
      const problem = this.problemWith(event.data);
      if (problem) this.post({ type: "topos:rejected", reason: problem });
      else handle(event.data as HostMessage);
    });
  }

  private problemWith(data: unknown): string | null {
    const { type, code } = data as { type: string; code?: unknown };
    if (type === "topos:set-code") return typeof code === "string" ? null : "topos:set-code needs code, a string";
    if (type === "topos:get-readings") return null;
    return `unknown message type ${JSON.stringify(type)}; the embed reads topos:set-code and topos:get-readings`;
  }
}
