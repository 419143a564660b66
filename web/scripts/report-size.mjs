// The built site's transfer sizes, per kind of asset: what a first visit downloads and
// what a revisit with a warm service-worker cache still fetches.
//
//   node web/scripts/report-size.mjs [dist]      (npm run build runs it after the build)
//
// A first visit downloads every file the service worker precaches (the page's own loads
// and the worker's install share the HTTP cache, so each file travels once; the browser
// tests check that), plus the worker script, plus the page itself a second time: the
// navigation asks for `/`, the worker for `/index.html`. A revisit is answered by the worker's cache:
// only the browser's update check of sw.js reaches the server. Sizes are raw, gzip -9 and
// brotli (quality 11), computed here with node's zlib; the brotli and gzip columns are the
// transfer when the server compresses every response (precompressed .br/.gz files, or on
// the fly). `vite preview` compresses nothing: from it, the transfer is the raw column.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
// Compressing Pyodide at brotli's best quality takes half a minute: results are kept by content hash.
const CACHE_DIR = join(ROOT, "node_modules/.cache/topos-size");
const AIM_FIRST_VISIT = 15_000_000;
const AIM_REVISIT = 100_000;

const KINDS = {
  ".html": "html",
  ".js": "js",
  ".mjs": "js",
  ".css": "css",
  ".wasm": "wasm",
  ".whl": "wheels",
  ".zip": "data",
  ".json": "data",
  ".webmanifest": "data",
  ".ttf": "fonts",
  ".woff": "fonts",
  ".woff2": "fonts",
  ".png": "images",
  ".svg": "images",
  ".ico": "images",
};

export function kindOf(path) {
  return KINDS[extname(path)] ?? "other";
}

/** The precache list vite-plugin-pwa injected into sw.js: `{url, revision}`, urls relative to dist/. */
export function precacheEntries(dist) {
  const worker = readFileSync(join(dist, "sw.js"), "utf8");
  const list = worker.match(/\[(?:\{"revision":(?:null|"[^"]*"),"url":"[^"]*"\},?)+\]/);
  if (!list) throw new Error(`${join(dist, "sw.js")}: no precache list found (was the site built with vite-plugin-pwa?)`);
  return JSON.parse(list[0]);
}

/** The precached files: paths relative to dist/, queries dropped. */
export function precachedFiles(dist) {
  return precacheEntries(dist).map((entry) => entry.url.split("?")[0]);
}

/** Every request of a first visit that the server answers in full: the navigation, the precached files, sw.js. */
export function firstVisitRequests(dist) {
  return ["/", ...new Set([...precachedFiles(dist), "sw.js"].map((file) => `/${file}`))].sort();
}

/** The file of dist/ that answers a request path. */
const fileOf = (path) => (path.endsWith("/") ? `${path}index.html` : path).replace(/^\//, "");

function allFiles(dist, folder = dist) {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? allFiles(dist, join(folder, entry.name)) : [relative(dist, join(folder, entry.name))],
  );
}

function compressedSizes(bytes) {
  const hash = createHash("sha256").update(bytes).digest("hex");
  const cached = join(CACHE_DIR, `${hash}.json`);
  if (existsSync(cached)) return JSON.parse(readFileSync(cached, "utf8"));
  const sizes = {
    gzip: gzipSync(bytes, { level: 9 }).length,
    brotli: brotliCompressSync(bytes, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
    }).length,
  };
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileSync(cached, JSON.stringify(sizes));
  return sizes;
}

function measure(dist, requests) {
  return requests.map((path) => {
    const bytes = readFileSync(join(dist, fileOf(path)));
    return { path, kind: kindOf(fileOf(path)), raw: bytes.length, ...compressedSizes(bytes) };
  });
}

function sum(rows) {
  return rows.reduce((total, row) => ({ raw: total.raw + row.raw, gzip: total.gzip + row.gzip, brotli: total.brotli + row.brotli }), {
    raw: 0,
    gzip: 0,
    brotli: 0,
  });
}

/** The report's numbers: first visit per kind and in total, the revisit, and what no visit loads. */
export function measureBuild(dist) {
  const firstVisit = measure(dist, firstVisitRequests(dist));
  const kinds = [...new Set(firstVisit.map((row) => row.kind))].sort();
  const byKind = kinds.map((kind) => {
    const rows = firstVisit.filter((row) => row.kind === kind);
    return { kind, files: rows.length, ...sum(rows) };
  });
  const loaded = new Set(firstVisit.map((row) => fileOf(row.path)));
  return {
    byKind,
    firstVisit: { files: firstVisit.length, ...sum(firstVisit) },
    revisit: { files: 1, ...sum(measure(dist, ["/sw.js"])) },
    notLoaded: allFiles(dist).filter((path) => !loaded.has(path)),
  };
}

const size = (bytes) => (bytes >= 1_000_000 ? `${(bytes / 1_000_000).toFixed(2)} MB` : `${(bytes / 1000).toFixed(1)} kB`);

function printReport(dist, report) {
  const row = (label, files, sizes) =>
    `  ${label.padEnd(8)}${String(files).padStart(9)}${size(sizes.raw).padStart(12)}${size(sizes.gzip).padStart(12)}${size(sizes.brotli).padStart(12)}`;
  const aim = (bytes, limit) => (bytes <= limit ? `under the aim of ${size(limit)}` : `OVER the aim of ${size(limit)}`);
  console.log(`\nSite size (${relative(process.cwd(), dist) || "."}/): a first visit downloads every precached file once, sw.js, and / again`);
  console.log(`  ${"kind".padEnd(8)}${"requests".padStart(9)}${"raw".padStart(12)}${"gzip -9".padStart(12)}${"brotli 11".padStart(12)}`);
  for (const kind of report.byKind) console.log(row(kind.kind, kind.files, kind));
  console.log(row("total", report.firstVisit.files, report.firstVisit));
  const { firstVisit, revisit } = report;
  console.log(`  first visit: ${size(firstVisit.brotli)} brotli, ${size(firstVisit.gzip)} gzip: ${aim(firstVisit.brotli, AIM_FIRST_VISIT)}`);
  console.log(
    `  revisit, warm cache: 1 request (sw.js, the update check), ${size(revisit.brotli)} brotli, ${size(revisit.gzip)} gzip, ` +
      `${size(revisit.raw)} raw: ${aim(revisit.raw, AIM_REVISIT)}`,
  );
  if (report.notLoaded.length > 0) console.log(`  not precached (no visit to the playground loads them): ${report.notLoaded.join(", ")}`);
  console.log("  (MB and kB are 10^6 and 10^3 bytes; compressed columns assume the server compresses every response.)\n");
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dist = resolve(process.argv[2] ?? join(ROOT, "dist"));
  printReport(dist, measureBuild(dist));
}
