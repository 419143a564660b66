// A small static server for the offline app's tests: it serves one built site at a time
// from a fixed port (so that a second build is "a new deployment" of the same origin),
// answers like a careful production host (ETag from the content, 304 on a match; hashed
// assets/ immutable, everything else revalidated), logs every request, and can play dead.

import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ttf": "font/ttf",
};

/**
 * Start serving `root`. The returned server's `root` may be changed (a new deployment),
 * `offline` set (every connection is dropped unanswered), and `log` read: one entry a
 * request, `{path, file, status, bytes}` (the path as requested, the file relative to the root), or
 * `{path, file, dropped: true}`.
 */
export async function startStaticServer(root) {
  const etags = new Map();
  const state = { root, offline: false, log: [] };

  function etagOf(path, stat) {
    const key = `${path}:${stat.size}:${stat.mtimeMs}`;
    if (!etags.has(key)) etags.set(key, `"${createHash("sha1").update(readFileSync(path)).digest("hex")}"`);
    return etags.get(key);
  }

  const server = createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url, "http://x").pathname);
    let file = normalize(pathname).replace(/^[/\\]+/, "");
    if (file === "" || file.endsWith("/")) file += "index.html";
    if (state.offline) {
      state.log.push({ path: pathname, file, dropped: true });
      request.socket.destroy();
      return;
    }
    const path = join(state.root, file);
    let stat;
    try {
      stat = statSync(path);
    } catch {
      stat = null;
    }
    if (file.startsWith("..") || !stat?.isFile()) {
      state.log.push({ path: pathname, file, status: 404, bytes: 0 });
      response.writeHead(404).end();
      return;
    }
    const etag = etagOf(path, stat);
    const headers = {
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      "Cache-Control": file.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      ETag: etag,
    };
    if (request.headers["if-none-match"] === etag) {
      state.log.push({ path: pathname, file, status: 304, bytes: 0 });
      response.writeHead(304, headers).end();
      return;
    }
    const body = readFileSync(path);
    state.log.push({ path: pathname, file, status: 200, bytes: body.length });
    response.writeHead(200, { ...headers, "Content-Length": body.length }).end(body);
  });

  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${server.address().port}/`;
  state.close = () =>
    new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections();
    });
  return state;
}
