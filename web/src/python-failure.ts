// Why Python stopped, told the way the page shows it: one plain sentence for the status
// bar (what happened, and the user's line when it is known), and the Python failure
// behind it (its type, message and traceback) for the error panel's "details" toggle.
//
// The worker reports a failure that escaped topos.playground.run as the text of
// Pyodide's PythonError, which is CPython's traceback: "Traceback (most recent call
// last):", the frames (innermost last), then the exception's own lines.

import type { CrashedMessage, UserError } from "../protocol";

/** The file name the user's code runs under (topos.playground.FILENAME). */
const USER_FILE = "main.py";
const TRACEBACK_HEADER = "Traceback (most recent call last):";
const FRAME = /^ {2}File "(.*)", line (\d+)/;

export interface Stop {
  /** One plain sentence: what happened and what the page did about it. */
  reason: string;
  /** The Python failure behind it, when there was one (its traceback goes behind "details"). */
  failure: UserError | null;
}

/** A Python failure's parts, and its first line as the text says it ("Type: message"). */
export interface Failure extends UserError {
  headline: string;
}

/** Read a Python failure's text (a PythonError's, or any "Type: message" text) into its parts. */
export function readFailure(text: string): Failure {
  const lines = text.replace(/^Uncaught\s+/, "").replace(/^PythonError:\s*/, "").replace(/\s+$/, "").split("\n");
  // The last traceback is the exception raised last; a chained one ("During handling ...") comes earlier.
  const start = lines.lastIndexOf(TRACEBACK_HEADER);
  let line: number | null = null;
  let exceptionStart = 0;
  if (start >= 0) {
    exceptionStart = start + 1;
    for (let i = start + 1; i < lines.length; i++) {
      const frame = FRAME.exec(lines[i]);
      if (frame) {
        if (frame[1] === USER_FILE) line = Number(frame[2]); // the innermost frame of the user's code wins
        exceptionStart = i + 1;
      } else if (lines[i].startsWith("    ") && exceptionStart === i) {
        exceptionStart = i + 1; // a frame's source line, or the carets under it
      }
    }
  }
  const exception = lines.slice(exceptionStart).join("\n").trim();
  // "numpy._core._exceptions._ArrayMemoryError: Unable to allocate ..." names the type by its module path.
  const named = /^([A-Za-z_][\w.]*)(?::\s?([\s\S]*))?$/.exec(exception);
  const type = named ? named[1].split(".").pop()! : "Error";
  const message = named ? (named[2] ?? "").trim() : exception;
  return { type, message, line, traceback: lines.join("\n"), headline: exception.split("\n")[0] };
}

const onLine = (line: number | null) => (line === null ? "" : ` on line ${line}`);

/** What the page says when the worker reports that Python cannot go on. */
export function describeCrash(message: CrashedMessage, started: boolean): Stop {
  const failure = readFailure(message.message);
  if (!started) return { reason: `Python could not start: ${failure.headline}`, failure };
  if (message.reason === "memory") {
    return { reason: `your code ran out of memory${onLine(failure.line)}; Python has been restarted`, failure };
  }
  return { reason: `Python failed${onLine(failure.line)} (${failure.type}); it has been restarted`, failure };
}

export function timeLimitStop(limitMs: number): Stop {
  const seconds = (limitMs / 1000).toFixed(0);
  return { reason: `stopped: your code ran longer than ${seconds} s (an endless loop?); Python has been restarted`, failure: null };
}

/** An uncaught error in the worker (a WebAssembly trap, for one): Python is not usable afterwards. */
export function workerErrorStop(message: string): Stop {
  const failure = message ? readFailure(message) : null;
  const cause = failure ? ` (${failure.type})` : "";
  return { reason: `Python stopped${cause}; it has been restarted`, failure };
}
