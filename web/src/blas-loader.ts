// The kernels the numpy interpreter multiplies with in the page (topos.pyodide.blas): numpy in
// Pyodide has no BLAS. First choice, measured faster (tests/bench/pyodide_matmul.mjs): the
// project's own WebAssembly SIMD kernels (topos.pyodide.wasm_gemm writes the module's bytes:
// nothing is downloaded), installed by every worker as soon as topos is imported, where the
// browser has WebAssembly SIMD (loadKernels, python-loader.ts). Where it has not: Pyodide 0.27.7's OpenBLAS (openblas-0.3.26.zip, a shared library, 6.1 MB,
// 1.9 MB gzipped) and scipy's _fblas wrappers of it (0.5 MB, taken out of the verified scipy
// wheel by web/scripts/fetch_pyodide_assets.py) lie in the site's pyodide/ folder, named with
// their sha256 in blas.json. They are not precached and not loaded at start: a worker loads
// them only once its Python trains (the readings worker: once its runs multiplied enough, the
// run worker: for every program, while Pyodide starts), so a visit that never trains never
// downloads them. Without them (offline before they were ever fetched, or a failed fetch),
// products stay in numpy: the same results to the documented tolerance, only slower.

import type { PyodideInterface } from "pyodide";
import { PYODIDE_URL } from "./python-loader";

/** public/pyodide/blas.json, written by the set-up. */
interface BlasManifest {
  library: { file: string; sha256: string; package: string };
  extension: { file: string; sha256: string; path: string };
}

/** The files, fetched (the extension's sha256 checked here; the library's by Pyodide, against its lock). */
export interface BlasFiles {
  manifest: BlasManifest;
  extension: Uint8Array<ArrayBuffer>;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Fetch the manifest and the extension (they need no Python: this may run while Pyodide starts). */
export async function fetchBlas(): Promise<BlasFiles> {
  const manifest = (await (await fetch(`${PYODIDE_URL}blas.json`, { cache: "no-cache" })).json()) as BlasManifest;
  const response = await fetch(`${PYODIDE_URL}${manifest.extension.file}?sha256=${manifest.extension.sha256}`);
  if (!response.ok) throw new Error(`${manifest.extension.file}: HTTP ${response.status}`);
  const extension = new Uint8Array(await response.arrayBuffer());
  const found = await sha256(extension);
  if (found !== manifest.extension.sha256) {
    throw new Error(`${manifest.extension.file} has sha256 ${found}, blas.json says ${manifest.extension.sha256}`);
  }
  return { manifest, extension };
}

/**
 * Load OpenBLAS (Pyodide's loadPackage: fetched from pyodide/ and checked against the lock's
 * sha256, then loaded as a global shared library), write _fblas beside it and hand it to
 * topos.pyodide.blas, which routes products through it from then on. Returns what it took.
 */
export async function installBlas(pyodide: PyodideInterface, files: Promise<BlasFiles> = fetchBlas()): Promise<string> {
  const started = performance.now();
  const { manifest, extension } = await files;
  await pyodide.loadPackage([manifest.library.package], { messageCallback: () => {}, checkIntegrity: true });
  const folder = "/lib/topos-blas";
  pyodide.FS.mkdirTree(folder);
  const path = `${folder}/${manifest.extension.path.split("/").pop()}`;
  pyodide.FS.writeFile(path, extension);
  const blas = pyodide.pyimport("topos.pyodide.blas");
  try {
    blas.load_extension(path);
  } finally {
    blas.destroy();
  }
  return `OpenBLAS ${manifest.library.file} in ${Math.round(performance.now() - started)} ms`;
}

/** Whether the numpy interpreter has multiplied enough without a BLAS for one to pay (topos.pyodide.blas.counts). */
export function blasWanted(pyodide: PyodideInterface, multiplyAdds = 2e8): boolean {
  const blas = pyodide.pyimport("topos.pyodide.blas");
  try {
    if (blas.installed()) return false;
    const counts = blas.counts();
    const wanted = counts.get("wanted") as number;
    counts.destroy();
    return wanted >= multiplyAdds;
  } finally {
    blas.destroy();
  }
}

/** Whether topos.pyodide.blas has kernels of any kind installed. */
export function kernelsInstalled(pyodide: PyodideInterface): boolean {
  const blas = pyodide.pyimport("topos.pyodide.blas");
  try {
    return (blas.installed() as string) !== "";
  } finally {
    blas.destroy();
  }
}
