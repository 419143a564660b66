// The offline PWA's build: vite-plugin-pwa with Workbox's precaching in a service worker
// of our own (web/src/sw.ts, "injectManifest"), the web app manifest, and the build id
// the update prompt shows. vite.config.ts adds `playgroundPwa(root)` to its plugins.
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { LogLevel, Plugin } from "vite";
import { VitePWA } from "vite-plugin-pwa";

/** One file of the precache list, as Workbox hands it to a manifest transform. */
interface ManifestEntry {
  url: string;
  revision: string | null;
  size: number;
}

// Everything a visit can load is precached, so that one visit is enough to work offline:
// the pages, their scripts and styles, Pyodide (wasm, its JavaScript, the standard library
// zip, the lock), the wheels, Monaco's font and the icons; vite-plugin-pwa adds the web app
// manifest itself. The examples are bundled into the page's script.
const PRECACHED = "**/*.{html,js,mjs,css,wasm,whl,zip,json,ttf,woff2,svg,png}";
// The benchmark's bare page (web/bench/) is not part of the playground. OpenBLAS (6.1 MB, 1.9 MB
// gzipped) and its manifest are loaded only by a worker whose browser lacks WebAssembly SIMD,
// once it trains (web/src/blas-loader.ts): a first visit does not pay for them.
const NOT_PRECACHED = ["bench/**", "assets/bare-*", "pyodide/openblas-*.zip", "pyodide/blas.json"];
// pyodide.asm.wasm is about 10 MB and Monaco's chunk several: far over Workbox's 2 MiB default.
const LARGEST_FILE = 64 * 1024 * 1024;

const THEME = "#1d3557";

/**
 * The worker fetches the topos wheel as `<file>?sha256=<sha256>` (the hash busts the HTTP
 * cache when the wheel is rebuilt under the same name). Precaching that same URL, rather
 * than the bare file name with a revision, lets the service worker's install take the
 * wheel from the HTTP cache instead of downloading it a second time on the first visit.
 */
function toposWheelByHash(publicDir: string) {
  return async (entries: ManifestEntry[]) => {
    const stamp = resolve(publicDir, "pyodide/topos-wheel.json");
    if (!existsSync(stamp)) throw new Error(`${stamp} is missing: run web/scripts/setup.sh (npm run build does) before building`);
    const wheel = JSON.parse(readFileSync(stamp, "utf8")) as { file: string; sha256: string };
    const url = `pyodide/${wheel.file}`;
    const manifest = entries.map((entry) => (entry.url === url ? { ...entry, url: `${url}?sha256=${wheel.sha256}`, revision: null } : entry));
    const warnings = entries.some((entry) => entry.url === url) ? [] : [`${url} (named in ${stamp}) is not in the site`];
    return { manifest, warnings };
  };
}

/** The id of this build (TOPOS_BUILD_ID, set by web/scripts/build.sh), shown by the update prompt. */
function buildId(): Plugin {
  const id = process.env.TOPOS_BUILD_ID || "local";
  return { name: "topos-build-id", config: () => ({ define: { __TOPOS_BUILD__: JSON.stringify(id) } }) };
}

/**
 * The dev server (`npx vite`) listens where `npm start` serves the build, 127.0.0.1:5173, so
 * a browser that visited the build has a service worker there that would keep answering
 * with the built pages. On the dev server, sw.js is a worker that takes over at once,
 * unregisters itself and reloads its pages from the dev server.
 */
const RETIRING_SERVICE_WORKER = `self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil((async () => {
  await self.registration.unregister();
  for (const client of await self.clients.matchAll({ type: "window" })) client.navigate(client.url);
})()));
`;

function retireServiceWorkerInDev(): Plugin {
  return {
    name: "topos-retire-service-worker-in-dev",
    apply: "serve",
    configureServer(server) {
      server.middlewares.use("/sw.js", (_request, response) => {
        response.setHeader("Content-Type", "text/javascript");
        response.setHeader("Cache-Control", "no-cache");
        response.end(RETIRING_SERVICE_WORKER);
      });
    },
  };
}

/**
 * vite-plugin-pwa links every page to the manifest as "./manifest.webmanifest" (the base),
 * which is right only for pages at the site's root; a docs page (docs/<page>.html) needs
 * "../manifest.webmanifest". This runs after it and makes the link relative to each page.
 */
function manifestLinkFromEveryPage(): Plugin {
  return {
    name: "topos-manifest-link-from-every-page",
    apply: "build",
    enforce: "post",
    transformIndexHtml: {
      order: "post",
      handler(html, context) {
        const depth = context.path.split("/").length - 2; // "/index.html" is 0 folders deep, "/docs/x.html" 1
        const up = depth > 0 ? "../".repeat(depth) : "./";
        return html.replace('<link rel="manifest" href="./manifest.webmanifest"', `<link rel="manifest" href="${up}manifest.webmanifest"`);
      },
    },
  };
}

export function playgroundPwa(root: string): Plugin[] {
  const publicDir = resolve(root, "public");
  let serviceWorkerLogLevel: LogLevel = "info";
  return [
    buildId(),
    retireServiceWorkerInDev(),
    ...VitePWA({
      strategies: "injectManifest",
      srcDir: "src",
      filename: "sw.ts",
      // web/src/pwa.ts registers the worker and asks before an update takes over.
      registerType: "prompt",
      injectRegister: false,
      // Relative to the manifest's own URL, the site's root: the app is wherever the site was copied.
      manifest: {
        id: "./",
        name: "topos playground",
        short_name: "topos",
        description: "Type Python; read what topos records six ways as you type. Runs offline, in the browser.",
        start_url: "./",
        scope: "./",
        display: "standalone",
        background_color: THEME,
        theme_color: THEME,
        icons: [
          { src: "icons/icon.svg", sizes: "any", type: "image/svg+xml" },
          { src: "icons/icon-192.png", sizes: "192x192", type: "image/png" },
          { src: "icons/icon-512.png", sizes: "512x512", type: "image/png" },
          { src: "icons/icon-512.png", sizes: "512x512", type: "image/png", purpose: "maskable" },
        ],
      },
      injectManifest: {
        globPatterns: [PRECACHED],
        globIgnores: NOT_PRECACHED,
        maximumFileSizeToCacheInBytes: LARGEST_FILE,
        manifestTransforms: [toposWheelByHash(publicDir)],
      },
      // The glob above has the icons already; the plugin would list them a second time.
      includeManifestIcons: false,
      integration: {
        configureOptions(config) {
          serviceWorkerLogLevel = config.logLevel ?? "info";
        },
        // The service worker is built by a second, inner Vite build: quiet when the outer one
        // is, and asked for one file the way Vite 8 spells it (vite-plugin-pwa 2.0 still uses
        // rollup's `inlineDynamicImports`, which rolldown warns is deprecated).
        configureCustomSWViteBuild(config) {
          config.logLevel = serviceWorkerLogLevel;
          const output = config.build?.rollupOptions?.output;
          if (output && !Array.isArray(output)) {
            delete output.inlineDynamicImports;
            Object.assign(output, { codeSplitting: false });
          }
        },
      },
    }),
    manifestLinkFromEveryPage(),
  ];
}
