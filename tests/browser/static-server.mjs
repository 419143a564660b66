// A small static server for the browser tests: it serves one built site at a time under a
// sub-path of a fixed port (the way a project page is served: https://host/topos/), so that
// the tests show the site works away from the root of a domain, and a second build served
// on the same port is "a new deployment" of the same origin. It answers like a careful
// production host (ETag from the content, 304 on a match; hashed assets/ immutable,
// everything else revalidated), logs every request, and can play dead. Anything asked for
// outside the sub-path is answered 404: a page that reaches for `/assets/...` breaks here.
//
//   node tests/browser/static-server.mjs <folder> [--base /sub/path/] [--port N]
//
// serves <folder> until it is stopped, and prints its URL once it listens.

import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

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

/** The sub-path the browser tests serve the site under unless told otherwise. */
export const TEST_BASE = "/deploy/topos/";

/**
 * Start serving `root` under `base` (a path that starts and ends with "/"). The returned
 * server's `url` is the site's address, `base` its path; `root` may be changed (a new
 * deployment), `offline` set (every connection is dropped unanswered), and `log` read: one
 * entry a request, `{path, file, status, bytes}` (the path as requested, the file relative
 * to the root, null for a path outside `base`), or `{path, file, dropped: true}` (`keepLog:
 * false` keeps none, for a long-running server); each 404's entry is also handed to `onNotFound`.
 */
export async function startStaticServer(root, { base = TEST_BASE, port = 0, onNotFound = () => {}, keepLog = true } = {}) {
  if (!base.startsWith("/") || !base.endsWith("/")) throw new Error(`the base path ${base} must start and end with "/"`);
  const etags = new Map();
  const state = { root, base, offline: false, log: [] };
  const record = (entry) => keepLog && state.log.push(entry);

  function etagOf(path, stat) {
    const key = `${path}:${stat.size}:${stat.mtimeMs}`;
    if (!etags.has(key)) etags.set(key, `"${createHash("sha1").update(readFileSync(path)).digest("hex")}"`);
    return etags.get(key);
  }

  /** The file of the site that answers `pathname`, relative to the root; null outside the sub-path. */
  function fileOf(pathname) {
    if (!pathname.startsWith(base)) return null;
    let file = normalize(pathname.slice(base.length)).replace(/^[/\\]+/, "");
    if (file === "." || file === "" || file.endsWith("/")) file = `${file === "." ? "" : file}index.html`;
    return file.startsWith("..") ? null : file;
  }

  const server = createServer((request, response) => {
    const pathname = decodeURIComponent(new URL(request.url, "http://x").pathname);
    const file = fileOf(pathname);
    if (state.offline) {
      record({ path: pathname, file, dropped: true });
      request.socket.destroy();
      return;
    }
    const path = file === null ? null : join(state.root, file);
    let stat = null;
    try {
      stat = path && statSync(path);
    } catch {
      stat = null;
    }
    if (!stat?.isFile()) {
      const entry = { path: pathname, file, status: 404, bytes: 0 };
      record(entry);
      onNotFound(entry);
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
      record({ path: pathname, file, status: 304, bytes: 0 });
      response.writeHead(304, headers).end();
      return;
    }
    const body = readFileSync(path);
    record({ path: pathname, file, status: 200, bytes: body.length });
    response.writeHead(200, { ...headers, "Content-Length": body.length }).end(body);
  });

  await new Promise((done, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", done);
  });
  state.url = `http://127.0.0.1:${server.address().port}${base}`;
  /** The path a request for `file` (relative to the site's root, "" for the site itself) has on this server. */
  state.pathOf = (file) => `${base}${file.replace(/^\//, "")}`;
  state.close = () =>
    new Promise((done) => {
      server.close(done);
      server.closeAllConnections();
    });
  return state;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [folder, ...options] = process.argv.slice(2);
  const option = (name, fallback) => (options.includes(name) ? options[options.indexOf(name) + 1] : fallback);
  if (!folder) {
    console.error("usage: node tests/browser/static-server.mjs <folder> [--base /sub/path/] [--port N]");
    process.exit(2);
  }
  const base = option("--base", TEST_BASE);
  // A request outside the sub-path is a page that assumed it lives at the root of the domain.
  const onNotFound = (entry) => console.error(`static-server: 404 ${entry.path}${entry.file === null ? ` (outside ${base})` : ""}`);
  const server = await startStaticServer(resolve(folder), { base, port: Number(option("--port", 0)), onNotFound, keepLog: false });
  console.log(server.url);
}
