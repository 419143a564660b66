// Which Python an embed talks to: the page's shared one (shared-python.ts) where the
// browser can share it, else a worker of its own (the playground's PythonSession).

import type { Backend } from "../protocol";
import { PythonSession, type SessionEvents } from "../src/session";
import { canSharePython, SharedPython } from "./shared-python";

export interface Python {
  run(code: string, backend: Backend): number;
  readonly latestId: number;
}

/** "leader" or "follower" of the shared Python (a follower may be elected later), or "own": a worker of its own. */
export type PythonRole = "leader" | "follower" | "own";

export function startPython(
  events: SessionEvents,
  timeLimitMs: number,
  share: boolean,
  onRole: (role: PythonRole) => void,
): Python {
  if (share && canSharePython()) return new SharedPython(events, timeLimitMs, onRole);
  onRole("own");
  return new PythonSession(events, timeLimitMs);
}
