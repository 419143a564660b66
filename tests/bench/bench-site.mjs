// The site with its benchmark pages, built for a benchmark and served on a free local port.
// The pages under web/bench/ are built only when asked for (TOPOS_BENCH_PAGES=1), and never
// into dist/: they are not part of the deployed site. PLAYGROUND_URL reuses a running server.
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startStaticServer } from "../browser/static-server.mjs";

export const ROOT = new URL("../..", import.meta.url).pathname;

/** Builds the site with its benchmark pages into a temporary folder and serves it; `stop()` removes both. */
export async function serveBenchSite() {
  if (process.env.PLAYGROUND_URL) return { url: process.env.PLAYGROUND_URL, stop: () => {} };
  const outDir = mkdtempSync(join(tmpdir(), "topos-bench-site-"));
  execSync(`bash web/scripts/setup.sh && npx vite build --logLevel warn --outDir ${outDir} --emptyOutDir`, {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, TOPOS_BENCH_PAGES: "1" },
  });
  const server = await startStaticServer(outDir, { keepLog: false });
  return {
    url: server.url,
    stop: async () => {
      await server.close();
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}
