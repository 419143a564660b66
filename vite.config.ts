// The playground's build: web/ is the root, public/ holds Pyodide's files and the
// topos wheel (put there by web/scripts/setup.sh), dist/ receives the site.
//
// Every URL in the built site is relative (base "./"), so one build works wherever it is
// copied: at the root of a domain or under any sub-path (docs/deploy.md).
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import { docsPageInputs } from "./web/docs-site/render-pages.ts";
import { playgroundPwa } from "./web/pwa.config.ts";

const root = fileURLToPath(new URL(".", import.meta.url));

/** The docs' notebooks (docs/notebooks/*.ipynb), as downloads beside the pages that link them. */
function docsNotebooks(): Plugin {
  const folder = resolve(root, "docs/notebooks");
  return {
    name: "topos-docs-notebooks",
    // `npm start` serves them from docs/notebooks/ as they are.
    configureServer(server) {
      server.middlewares.use((request, response, next) => {
        const name = /\/docs\/notebooks\/([\w-]+\.ipynb)$/.exec((request.url ?? "").split("?")[0])?.[1];
        if (!name || !readdirSync(folder).includes(name)) return next();
        response.setHeader("Content-Type", "application/x-ipynb+json");
        response.end(readFileSync(resolve(folder, name)));
      });
    },
    generateBundle() {
      for (const name of readdirSync(folder).filter((file) => file.endsWith(".ipynb"))) {
        this.emitFile({ type: "asset", fileName: `docs/notebooks/${name}`, source: readFileSync(resolve(folder, name)) });
      }
    },
  };
}

export default defineConfig({
  root: resolve(root, "web"),
  publicDir: resolve(root, "public"),
  base: "./",
  // The offline app: service worker, manifest, build id (web/pwa.config.ts).
  plugins: [playgroundPwa(root), docsNotebooks()],
  resolve: {
    // monaco-editor's export map appends ".js" to every path, which hides its CSS files; this alias does not.
    alias: { "monaco-esm": resolve(root, "node_modules/monaco-editor/esm/vs") },
  },
  build: {
    outDir: resolve(root, "dist"),
    emptyOutDir: true,
    target: "es2022",
    // Monaco is one large chunk by nature; the warning would only repeat that.
    chunkSizeWarningLimit: 8000,
    rolldownOptions: {
      // The timing report is for profiling the build, not news on every build.
      checks: { bundlerTimings: false },
      input: {
        playground: resolve(root, "web/index.html"),
        // The embeddable playground, and the docs pages rendered from docs/generated/ into web/docs/.
        embed: resolve(root, "web/embed.html"),
        ...docsPageInputs(root),
        // The benchmarks' pages are not part of the site: only tests/bench/playground.mjs (the baseline),
        // tests/bench/browser_train.mjs (the training page), tests/bench/matmul_browser.mjs (the matrix
        // product page) and tests/bench/convolution_browser.mjs (the convolution paths' page) build them.
        ...(process.env.TOPOS_BENCH_PAGES === "1"
          ? {
              bare: resolve(root, "web/bench/bare.html"),
              train: resolve(root, "web/bench/train.html"),
              matmul: resolve(root, "web/bench/matmul.html"),
              convolution: resolve(root, "web/bench/convolution.html"),
            }
          : {}),
      },
    },
  },
  worker: { format: "es" },
  // The gallery (docs/examples) and the kernels (kernels/) live outside web/.
  server: { host: "127.0.0.1", port: 5173, strictPort: true, fs: { allow: [root] } },
  preview: { host: "127.0.0.1", port: 5173, strictPort: true },
});
