// The user's files inside a Python worker (both: the readings worker, worker.ts, and the run
// worker, run-worker.ts). The worker holds the set the page sent last, outside Python's heap;
// before each run, topos.playground.files puts the working directory back to exactly that set
// (writing only the files a run changed or deleted), and after the run it lists what the run
// wrote there, whose bytes go to the page.

import type { PyodideInterface } from "pyodide";
import type { PyProxy } from "pyodide/ffi";
import type { FileBytes, FilesWrittenMessage } from "../../protocol";

export class WorkerFiles {
  /** The user's files by name, as the page sent them. */
  private stored = new Map<string, Uint8Array>();
  private directory: (PyProxy & { path: string }) | null = null;

  constructor(private readonly python: Promise<PyodideInterface>) {}

  /** The page's new set of the user's files: every run from now on starts with them. */
  replace(files: FileBytes[]): void {
    this.stored = new Map(files.map((file) => [file.name, file.bytes]));
  }

  /** Before a run: the working directory holds the user's files as stored, and nothing else. */
  async prepare(): Promise<void> {
    const pyodide = await this.python;
    const directory = this.workingDirectory(pyodide);
    const names = pyodide.toPy([...this.stored.keys()]);
    const write = (name: string, path: string) => pyodide.FS.writeFile(path, this.stored.get(name)!);
    try {
      (directory.prepare as (names: unknown, write: unknown) => void)(names, write);
    } finally {
      names.destroy();
    }
  }

  /** After a run: what it wrote in the working directory, with the bytes, for the page. */
  async written(id: number): Promise<{ message: FilesWrittenMessage; transfer: ArrayBuffer[] }> {
    const pyodide = await this.python;
    const directory = this.workingDirectory(pyodide);
    const listed = JSON.parse((directory.written_json as () => string)()) as { name: string }[];
    const files = listed.map(({ name }) => ({ name, bytes: pyodide.FS.readFile(`${directory.path}/${name}`) as Uint8Array }));
    return { message: { type: "files-written", id, files }, transfer: files.map((file) => file.bytes.buffer as ArrayBuffer) };
  }

  private workingDirectory(pyodide: PyodideInterface): PyProxy & { path: string } & Record<string, unknown> {
    this.directory ??= pyodide.pyimport("topos.playground.files").WorkingDirectory() as PyProxy & { path: string };
    return this.directory as PyProxy & { path: string } & Record<string, unknown>;
  }
}

/** The script as a Jupyter notebook's JSON text (topos.playground.notebook), made by this worker's Python. */
export async function notebookText(python: Promise<PyodideInterface>, code: string, title: string | null): Promise<string> {
  const pyodide = await python;
  const notebook = pyodide.pyimport("topos.playground.notebook");
  try {
    return (notebook.notebook_json as (code: string, title: string | null) => string)(code, title);
  } finally {
    notebook.destroy();
  }
}
