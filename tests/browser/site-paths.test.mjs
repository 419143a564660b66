// The built site (dist/, built by tests/run-browser.sh before the suite) works from any
// sub-path: no file of it names another by a path from the domain's root ("/assets/...",
// "/sw.js", a manifest scope of "/"), so that copying dist/ to https://host/any/path/
// needs no rebuild (docs/deploy.md). The rest of the suite then serves it under a
// sub-path and uses it; this is the cheap check that says which file and which reference.
// The benchmark's page is not part of the site.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

const DIST = fileURLToPath(new URL("../../dist/", import.meta.url));
// The files that refer to other files: pages, scripts, styles, the manifest, Pyodide's lock.
const TEXT_FILES = new Set([".html", ".js", ".mjs", ".css", ".webmanifest", ".json"]);

function allFiles(folder = DIST) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? allFiles(join(folder, entry.name)) : [relative(DIST, join(folder, entry.name))],
  );
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("the built site's paths", () => {
  test("no built file refers to a file of the site by a path from the domain's root", () => {
    // "/assets/x.js", "/sw.js", url(/assets/...): a quote, "(" or "=" then "/" then a top-level name of dist/.
    const names = readdirSync(DIST).map(escape).join("|");
    const rooted = new RegExp(`[\"'\`(=]\\s*/(?:${names})(?=[/\"'\`?#)\\s]|$)`, "g");
    const found = [];
    for (const file of allFiles().filter((path) => TEXT_FILES.has(extname(path)))) {
      const text = readFileSync(join(DIST, file), "utf8");
      for (const match of text.matchAll(rooted)) found.push(`${file}: …${text.slice(Math.max(0, match.index - 40), match.index + 60)}…`);
    }
    assert.deepEqual(found, []);
  });

  test("the web app manifest names the app's start, scope and icons relative to itself", () => {
    const manifest = JSON.parse(readFileSync(join(DIST, "manifest.webmanifest"), "utf8"));
    const urls = [manifest.id, manifest.start_url, manifest.scope, ...manifest.icons.map((icon) => icon.src)];
    assert.deepEqual(urls.filter((url) => url === undefined || url.startsWith("/") || /^[a-z]+:/.test(url)), []);
    // Resolved against the manifest at any sub-path, the app is that sub-path.
    const at = "https://host/any/sub/path/manifest.webmanifest";
    assert.equal(new URL(manifest.start_url, at).href, "https://host/any/sub/path/");
    assert.equal(new URL(manifest.scope, at).href, "https://host/any/sub/path/");
  });

  test("every page links the manifest at the site's root, wherever the page lies", () => {
    for (const page of allFiles().filter((path) => path.endsWith(".html"))) {
      const link = /<link rel="manifest" href="([^"]*)"/.exec(readFileSync(join(DIST, page), "utf8"));
      assert.ok(link, `${page} links no manifest`);
      const at = `https://host/sub/${page}`;
      assert.equal(new URL(link[1], at).href, "https://host/sub/manifest.webmanifest", page);
    }
  });

  test("the benchmark's page is not part of the site", () => {
    assert.deepEqual(allFiles().filter((path) => path.startsWith("bench/") || /(^|\/)bare[-.]/.test(path)), []);
  });
});
