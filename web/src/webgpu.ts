// Runs the kernels reading's program (topos.compiler.kernels) on the browser's WebGPU,
// mirroring the native runner (py/topos/webgpu/runner.py): buffers as the program
// lists them, then its steps in order — uploads, launches, readbacks and host steps
// (which Python's interpreter computes). Each launch is submitted on its own so that
// it can be timed, and the value it finishes is read back and held against the
// interpreter's (the largest absolute difference).

import type { PyodideInterface } from "pyodide";
import type { PyProxy } from "pyodide/ffi";
import type { LaunchTiming, WebGpuReport } from "../protocol";

// The WGSL kernel files, bundled as text from the repository's kernels/ folder.
const kernelFiles = import.meta.glob("../../kernels/*.wgsl", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;
const KERNELS = new Map(Object.entries(kernelFiles).map(([path, text]) => [path.split("/").pop()!.replace(".wgsl", ""), text]));

/** A launch's uniform parameter block: array<vec4<u32>, 16>. */
const PARAM_BYTES = 256;

interface ViewJson {
  buffer: number | null;
  offset: number;
  shape: number[];
  strides: number[];
  constant: number | null;
}

interface LaunchStep {
  type: "launch";
  kernel: string;
  entry: string;
  specialisation: Record<string, string>;
  workgroups: [number, number, number];
  bindings: { index: number; buffer: number; access: "read" | "read_write" }[];
  params: number[];
  nodes: number[];
  out: ViewJson | null;
}

type Step =
  | LaunchStep
  | { type: "upload"; key: number; buffer: number; dtype: Dtype }
  | { type: "readback"; key: number; view: ViewJson; dtype: Dtype }
  | { type: "host"; key: number; reason: string }
  | { type: "view"; key: number };

type Dtype = "float32" | "int32";

interface ProgramJson {
  buffers: { id: number; elements: number; dtype: Dtype }[];
  steps: Step[];
  outputs: number[];
}

/** The specialised kernel text: every {{NAME}} replaced, as topos.webgpu.sources.specialise does. */
export function specialise(kernel: string, substitutions: Record<string, string>): string {
  const text = KERNELS.get(kernel);
  if (text === undefined) throw new Error(`no kernel file kernels/${kernel}.wgsl`);
  // {{COMMON}} is kernels/common.wgsl, the helpers every file shares (WGSL has no includes).
  const all: Record<string, string> = { COMMON: KERNELS.get("common") ?? "", ...substitutions };
  return text.replace(/\{\{([A-Z_]+)\}\}/g, (_match, name: string) => {
    if (!(name in all)) throw new Error(`kernel ${kernel} needs a substitution for {{${name}}}`);
    return all[name];
  });
}

// Pipelines are compiled once per device, kernel, entry, specialisation and binding layout.
const pipelines = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

function pipelineFor(device: GPUDevice, launch: LaunchStep): Promise<GPUComputePipeline> {
  let cache = pipelines.get(device);
  if (!cache) pipelines.set(device, (cache = new Map()));
  const layoutKey = launch.bindings.map((b) => [b.index, b.access]);
  const key = JSON.stringify([launch.kernel, launch.entry, launch.specialisation, layoutKey]);
  let pipeline = cache.get(key);
  if (!pipeline) {
    const entries: GPUBindGroupLayoutEntry[] = [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } }];
    for (const binding of launch.bindings) {
      const type = binding.access === "read_write" ? "storage" : "read-only-storage";
      entries.push({ binding: binding.index, visibility: GPUShaderStage.COMPUTE, buffer: { type } });
    }
    const layout = device.createBindGroupLayout({ entries });
    pipeline = device.createComputePipelineAsync({
      label: `${launch.kernel}:${launch.entry}`,
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module: device.createShaderModule({ code: specialise(launch.kernel, launch.specialisation) }), entryPoint: launch.entry },
    });
    cache.set(key, pipeline);
  }
  return pipeline;
}

function elementCount(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** The elements of `view` in row-major order, read from the device (or filled, for a constant). */
async function readView(device: GPUDevice, buffers: Map<number, GPUBuffer>, view: ViewJson, dtype: Dtype): Promise<Float32Array | Int32Array> {
  const count = elementCount(view.shape);
  const Typed = dtype === "int32" ? Int32Array : Float32Array;
  if (view.buffer === null) return new Typed(count).fill(view.constant ?? 0);
  if (count === 0) return new Typed(0);
  const span = view.offset + view.shape.reduce((sum, extent, axis) => sum + (extent - 1) * view.strides[axis], 0) + 1;
  const bytes = 4 * (span - view.offset);
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffers.get(view.buffer)!, 4 * view.offset, staging, 0, bytes);
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const raw = new Typed(staging.getMappedRange().slice(0));
  staging.unmap();
  staging.destroy();
  // Gather the strided elements into a dense array (the view's offset is raw[0]).
  const dense = new Typed(count);
  const rank = view.shape.length;
  const index = new Array<number>(rank).fill(0);
  for (let i = 0; i < count; i++) {
    let at = 0;
    for (let axis = 0; axis < rank; axis++) at += index[axis] * view.strides[axis];
    dense[i] = raw[at];
    for (let axis = rank - 1; axis >= 0; axis--) {
      if (++index[axis] < view.shape[axis]) break;
      index[axis] = 0;
    }
  }
  return dense;
}

const bytesOf = (array: Float32Array | Int32Array) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

async function dispatch(device: GPUDevice, buffers: Map<number, GPUBuffer>, launch: LaunchStep): Promise<number> {
  const pipeline = await pipelineFor(device, launch);
  const params = device.createBuffer({ size: PARAM_BYTES, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
  new Uint32Array(params.getMappedRange()).set(launch.params);
  params.unmap();
  const group = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: { buffer: params } },
      ...launch.bindings.map((b) => ({ binding: b.index, resource: { buffer: buffers.get(b.buffer)! } })),
    ],
  });
  const started = performance.now();
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(...launch.workgroups);
  pass.end();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  const ms = performance.now() - started;
  params.destroy();
  return ms;
}

export async function runKernelsOnGpu(pyodide: PyodideInterface, device: GPUDevice, adapter: string): Promise<WebGpuReport> {
  const playground = pyodide.pyimport("topos.playground");
  let bridge: PyProxy | null = null;
  const buffers = new Map<number, GPUBuffer>();
  device.pushErrorScope("validation");
  try {
    bridge = playground.gpu_bridge() as PyProxy;
    const program = JSON.parse(bridge.program_json()) as ProgramJson;
    for (const buffer of program.buffers) {
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      buffers.set(buffer.id, device.createBuffer({ label: `b${buffer.id}`, size: 4 * Math.max(buffer.elements, 1), usage }));
    }
    // A launch finishes its nodes' value when no later launch covers the same nodes.
    const launches = program.steps.filter((s): s is LaunchStep => s.type === "launch");
    const finishing = new Set(launches.filter((l, i) => !launches.slice(i + 1).some((m) => m.nodes.join() === l.nodes.join())));

    const timings: LaunchTiming[] = [];
    for (const step of program.steps) {
      if (step.type === "upload") {
        const proxy = bridge.upload(step.key, step.dtype) as PyProxy;
        const bytes = proxy.toJs() as Uint8Array<ArrayBuffer>;
        proxy.destroy();
        if (bytes.byteLength) device.queue.writeBuffer(buffers.get(step.buffer)!, 0, bytes);
      } else if (step.type === "launch") {
        const ms = await dispatch(device, buffers, step);
        let maxAbsDiff: number | null = null;
        if (finishing.has(step) && step.out) {
          const node = Math.max(...step.nodes);
          const values = await readView(device, buffers, step.out, "float32");
          maxAbsDiff = bridge.difference(node, "float32", step.out.shape, bytesOf(values)) ?? null;
        }
        timings.push({ kernel: `${step.kernel}:${step.entry}`, nodes: step.nodes, ms, maxAbsDiff });
      } else if (step.type === "readback") {
        const values = await readView(device, buffers, step.view, step.dtype);
        bridge.readback(step.key, step.dtype, step.view.shape, bytesOf(values));
      } else if (step.type === "host") {
        bridge.host_step(step.key);
      } // a "view" step makes a new view of a buffer: nothing runs
    }
    const outputs = JSON.parse(bridge.output_differences()) as WebGpuReport["outputs"];
    const error = await device.popErrorScope();
    if (error) throw new Error(error.message);
    return { ran: true, detail: adapter, launches: timings, outputs };
  } catch (error) {
    await device.popErrorScope().catch(() => null);
    return { ran: false, detail: `the kernels failed on WebGPU (${adapter}): ${error}`, launches: [] };
  } finally {
    for (const buffer of buffers.values()) buffer.destroy();
    bridge?.destroy();
    playground.destroy();
  }
}
