// Share links and where edits are kept. A share link carries the code in the URL
// fragment, so no server ever sees it: "#code=v1:" followed by the code compressed
// with lz-string (compressToEncodedURIComponent). The version prefix lets a later
// format change keep old links readable.
//
// Every edit is kept twice: as the code of the current history entry (sessionStorage,
// under an id kept in history.state), which a reload, Back and Forward bring back and
// which wins over the share link in the address; and as the autosave (localStorage),
// which a visit without either starts from.

import LZString from "lz-string";

const FRAGMENT_KEY = "code=";
const VERSION = "v1";
const AUTOSAVE_KEY = "topos-playground:code";
const BACKEND_KEY = "topos-playground:backend";
const ENTRY_KEY = "topos-playground:entry:";

export function shareLink(code: string, base = window.location.href): string {
  const url = new URL(base);
  url.hash = `${FRAGMENT_KEY}${VERSION}:${LZString.compressToEncodedURIComponent(code)}`;
  return url.href;
}

/** The code a share link's fragment carries; null when there is none; throws for a link it cannot read. */
export function codeFromFragment(fragment: string): string | null {
  const body = fragment.replace(/^#/, "");
  if (!body.startsWith(FRAGMENT_KEY)) return null;
  const [version, ...rest] = body.slice(FRAGMENT_KEY.length).split(":");
  if (version !== VERSION) throw new Error(`this share link has format ${version}; this playground reads ${VERSION}`);
  const payload = rest.join(":").replace(/ /g, "+");
  const code = LZString.decompressFromEncodedURIComponent(payload);
  // lz-string reads a cut or garbled text as "" or as other text, without failing: a link is sound
  // when its code, compressed again, is what it carries (anything after that is ignored).
  const sound = typeof code === "string" && payload.startsWith(LZString.compressToEncodedURIComponent(code));
  if (!sound) throw new Error("this share link is damaged: its code cannot be read");
  return code;
}

function storage(kind: "localStorage" | "sessionStorage"): Storage | null {
  try {
    return window[kind];
  } catch {
    return null; // storage can be switched off; the playground works without it
  }
}

function read(kind: "localStorage" | "sessionStorage", key: string): string | null {
  return storage(kind)?.getItem(key) ?? null;
}

function write(kind: "localStorage" | "sessionStorage", key: string, value: string): void {
  try {
    storage(kind)?.setItem(key, value);
  } catch {
    // Full (or switched off): the code is still in the editor, and the next edit tries again.
  }
}

export const autosave = {
  load: (): string | null => read("localStorage", AUTOSAVE_KEY),
  save: (code: string): void => write("localStorage", AUTOSAVE_KEY, code),
  loadBackend: (): string | null => read("localStorage", BACKEND_KEY),
  saveBackend: (backend: string): void => write("localStorage", BACKEND_KEY, backend),
};

/** The id of the current history entry (null for an entry this page has not seen yet). */
function entryId(): string | null {
  const state: unknown = history.state;
  const id = typeof state === "object" && state !== null ? (state as { entry?: unknown }).entry : undefined;
  return typeof id === "string" ? id : null;
}

function newEntryId(): string {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}

/** The code of each history entry: what the editor showed there last, edits included. */
export const historyCode = {
  /** This entry's code, or null for an entry the page has not shown code in. */
  load(): string | null {
    const id = entryId();
    return id === null ? null : read("sessionStorage", ENTRY_KEY + id);
  },
  /** Keep `code` as this entry's (the entry is given an id first, if it has none). */
  save(code: string): void {
    let id = entryId();
    if (id === null) {
      id = newEntryId();
      history.replaceState({ entry: id }, "", window.location.href);
    }
    write("sessionStorage", ENTRY_KEY + id, code);
  },
  /** Open a new history entry at `url` that shows `code`; Back returns to the current one. */
  push(url: string, code: string): void {
    history.pushState({ entry: newEntryId() }, "", url);
    this.save(code);
  },
  /** Change the address of this entry (a share link made, a damaged one dropped), keeping its code. */
  setAddress(url: string): void {
    history.replaceState(history.state, "", url);
  },
};
