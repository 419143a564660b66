// Share links and autosave. A share link carries the code in the URL fragment, so
// no server ever sees it: "#code=v1:" followed by the code compressed with
// lz-string (compressToEncodedURIComponent). The version prefix lets a later
// format change keep old links readable.

import LZString from "lz-string";

const FRAGMENT_KEY = "code=";
const VERSION = "v1";
const AUTOSAVE_KEY = "topos-playground:code";
const BACKEND_KEY = "topos-playground:backend";

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
  const code = LZString.decompressFromEncodedURIComponent(rest.join(":"));
  if (code === null || code === undefined) throw new Error("this share link is damaged: its code cannot be read");
  return code;
}

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null; // storage can be switched off; the playground works without it
  }
}

export const autosave = {
  load: (): string | null => storage()?.getItem(AUTOSAVE_KEY) ?? null,
  save: (code: string): void => storage()?.setItem(AUTOSAVE_KEY, code),
  loadBackend: (): string | null => storage()?.getItem(BACKEND_KEY) ?? null,
  saveBackend: (backend: string): void => storage()?.setItem(BACKEND_KEY, backend),
};
