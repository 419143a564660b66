// The JupyterLab extension's bundle (web/scripts/build-labextension.sh): web/jupyter/src as one ES
// module in web/jupyter/lib/, with the playground's card drawing, uPlot and dagre inside and
// JupyterLab's own packages left to JupyterLab (`jupyter labextension build` then shares them).
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

/**
 * The playground starts dagre's layout worker from a file next to its page (`?worker`); an
 * extension's files are served from elsewhere, so here the worker's code travels inside the
 * bundle (`?worker&inline`, started from a blob).
 */
function inlineWorkers(): Plugin {
  return {
    name: "topos-inline-workers",
    enforce: "pre",
    async resolveId(source, importer) {
      if (!source.endsWith("?worker")) return null;
      const resolved = await this.resolve(source.slice(0, -"?worker".length), importer, { skipSelf: true });
      return resolved ? `${resolved.id}?worker&inline` : null;
    },
  };
}

export default defineConfig({
  root: here,
  publicDir: false,
  plugins: [inlineWorkers()],
  worker: { format: "es" },
  build: {
    outDir: resolve(here, "lib"),
    emptyOutDir: true,
    target: "es2022",
    minify: false,
    lib: { entry: resolve(here, "src/index.ts"), formats: ["es"], fileName: () => "index.js", cssFileName: "index" },
    rolldownOptions: {
      external: [/^@jupyterlab\//, /^@lumino\//],
      checks: { bundlerTimings: false },
    },
  },
});
