// The kernels pane's rows: the kernels reading's own, then (when the kernels ran on
// WebGPU) a blank row and a table of the page's own: one row a launch with its time
// and its largest difference from the numpy interpreter, or the reason they did not
// run there. Every row carries the nodes it is about, as the reading's rows do.

import type { ReadingRow, WebGpuReport } from "../../protocol";

export function kernelsRows(rows: ReadingRow[], webgpu: WebGpuReport | undefined): ReadingRow[] {
  if (!webgpu) return rows;
  const composed = [...rows, { text: "", nodes: [] }];
  const row = (text: string, nodes: number[] = []) => composed.push({ text, nodes });
  if (!webgpu.ran) {
    row(`WebGPU: ${webgpu.detail}`);
    return composed;
  }
  row(`WebGPU (${webgpu.detail}): ${webgpu.launches.length} launches, each held against the numpy interpreter`);
  row(`${"launch".padEnd(8)}${"kernel".padEnd(26)}${"nodes".padEnd(14)}${"time".padStart(12)}  max |diff|`);
  webgpu.launches.forEach((launch, i) => {
    const time = `${launch.ms.toFixed(3)} ms`;
    row(`${String(i).padEnd(8)}${launch.kernel.padEnd(26)}${launch.nodes.join(", ").padEnd(14)}${time.padStart(12)}  ${difference(launch.maxAbsDiff)}`, launch.nodes);
  });
  for (const output of webgpu.outputs ?? []) {
    row(`readable ${output.node}: max |WebGPU - numpy| = ${difference(output.maxAbsDiff)}`, [output.node]);
  }
  return composed;
}

function difference(value: number | null): string {
  return value === null ? "-" : value.toExponential(2);
}
