// The kernels pane's text: the kernels reading, then (when the kernels ran on
// WebGPU) one row a launch with its time and its largest difference from the
// numpy interpreter, or the reason they did not run there.

import type { Reading, WebGpuReport } from "../../protocol";

export function kernelsReading(reading: Reading, webgpu: WebGpuReport | undefined) {
  const lineNodes = new Map<number, number[]>();
  for (const launch of reading.launches ?? []) lineNodes.set(launch.line, launch.nodes);
  if (reading.text === undefined || !webgpu) return { reading, lineNodes };

  const lines = reading.text.split("\n");
  lines.push("");
  if (!webgpu.ran) {
    lines.push(`WebGPU: ${webgpu.detail}`);
  } else {
    lines.push(`WebGPU (${webgpu.detail}): ${webgpu.launches.length} launches, each held against the numpy interpreter`);
    lines.push(`${"launch".padEnd(8)}${"kernel".padEnd(26)}${"nodes".padEnd(14)}${"time".padStart(12)}  max |diff|`);
    webgpu.launches.forEach((launch, i) => {
      lineNodes.set(lines.length, launch.nodes);
      const time = `${launch.ms.toFixed(3)} ms`;
      lines.push(`${String(i).padEnd(8)}${launch.kernel.padEnd(26)}${launch.nodes.join(", ").padEnd(14)}${time.padStart(12)}  ${difference(launch.maxAbsDiff)}`);
    });
    for (const output of webgpu.outputs ?? []) {
      lineNodes.set(lines.length, [output.node]);
      lines.push(`readable ${output.node}: max |WebGPU - numpy| = ${difference(output.maxAbsDiff)}`);
    }
  }
  return { reading: { ...reading, text: lines.join("\n") }, lineNodes };
}

function difference(value: number | null): string {
  return value === null ? "-" : value.toExponential(2);
}
