// The gallery: the runnable scripts of docs/examples/, bundled as text at build time.

const sources = import.meta.glob("../../docs/examples/*.py", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;

export interface Example {
  /** The file name, e.g. "01_scalar_chain.py". */
  file: string;
  /** What the picker shows, e.g. "01 scalar chain". */
  title: string;
  code: string;
}

export const examples: Example[] = Object.entries(sources)
  .map(([path, code]) => {
    const file = path.split("/").pop() ?? path;
    return { file, title: file.replace(/\.py$/, "").replaceAll("_", " "), code };
  })
  .sort((a, b) => a.file.localeCompare(b.file));
