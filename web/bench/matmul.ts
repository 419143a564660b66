// The matrix product benchmark's page (built only with TOPOS_BENCH_PAGES=1; not part of the site):
// kernels/matmul.wgsl's two entry points and tfjs-webgpu's tf.matMul, on the same WebGPU adapter in
// one page load. tests/bench/matmul_browser.mjs drives it through `window.matmulBench`: it hands over
// each launch as compiler/wgsl/launch.py builds it (entry point, workgroups, parameter words), so the
// page dispatches exactly what topos would, and it decides the rounds and prints the table.
//
// A timing is `runs` products recorded back to back and submitted, until the queue reports the work
// done (onSubmittedWorkDone); tfjs's products are timed the same way on its own device's queue.
// Every contender's result is checked against a float64 product on the CPU first.
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-webgpu";
import type { WebGPUBackend } from "@tensorflow/tfjs-backend-webgpu";
import commonText from "../../kernels/common.wgsl?raw";
import matmulText from "../../kernels/matmul.wgsl?raw";

/** One launch of kernels/matmul.wgsl as topos.compiler.wgsl.launch.matmul builds it. */
interface LaunchJson {
  entry: string;
  workgroups: [number, number, number];
  params: number[];
}

/** A product a [m, k] @ b [k, n] and its launches, one per strategy ("tiled", "simple"). */
interface Problem {
  m: number;
  k: number;
  n: number;
  launches: Record<string, LaunchJson>;
}

/** The launch's uniform parameter block: array<vec4<u32>, 16>. */
const PARAM_BYTES = 256;
const TFJS = "tfjs";

// The kernel text as topos.webgpu.sources.specialise makes it: {{COMMON}} is kernels/common.wgsl,
// and kernels/matmul.wgsl has no other token.
function specialisedMatmul(): string {
  const text = matmulText.replace("{{COMMON}}", commonText);
  const left = /\{\{([A-Z_]+)\}\}/.exec(text);
  if (left) throw new Error(`kernels/matmul.wgsl has a token this page does not fill: ${left[0]}`);
  return text;
}

/** Values in [-1, 1) from a fixed seed, the same on every load. */
function operand(count: number, seed: number): Float32Array<ArrayBuffer> {
  const values = new Float32Array(count);
  let state = seed >>> 0;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    values[i] = state / 2 ** 31 - 1;
  }
  return values;
}

/** a @ b in float64 on the CPU. */
function cpuProduct(a: Float32Array, b: Float32Array, m: number, k: number, n: number): Float64Array {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    const row = out.subarray(i * n, (i + 1) * n);
    for (let p = 0; p < k; p++) {
      const scale = a[i * k + p];
      const bRow = p * n;
      for (let j = 0; j < n; j++) row[j] += scale * b[bRow + j];
    }
  }
  return out;
}

/** The largest |got - exact|, and the largest |exact| to scale it by. */
function disagreement(got: Float32Array, exact: Float64Array): { error: number; scale: number } {
  let error = 0;
  let scale = 0;
  for (let i = 0; i < exact.length; i++) {
    error = Math.max(error, Math.abs(got[i] - exact[i]));
    scale = Math.max(scale, Math.abs(exact[i]));
  }
  return { error, scale };
}

interface Loaded {
  problem: Problem;
  exact: Float64Array;
  out: GPUBuffer;
  dispatches: Map<string, { pipeline: GPUComputePipeline; group: GPUBindGroup; workgroups: [number, number, number] }>;
  tfA: tf.Tensor2D;
  tfB: tf.Tensor2D;
  release: () => void;
}

async function start() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) throw new Error("no WebGPU adapter (Chromium needs --enable-unsafe-webgpu)");
  const device = await adapter.requestDevice();
  const module = device.createShaderModule({ code: specialisedMatmul() });
  const pipelines = new Map<string, Promise<GPUComputePipeline>>();
  const pipelineFor = (entry: string) => {
    if (!pipelines.has(entry)) {
      pipelines.set(entry, device.createComputePipelineAsync({ label: `matmul:${entry}`, layout: "auto", compute: { module, entryPoint: entry } }));
    }
    return pipelines.get(entry)!;
  };

  if (!(await tf.setBackend("webgpu"))) throw new Error("tfjs could not start its webgpu backend");
  await tf.ready();
  const backend = tf.backend() as WebGPUBackend;
  const describe = (info: GPUAdapterInfo | undefined) => (info ? [info.vendor, info.architecture, info.description].filter(Boolean).join(" / ") : "?");

  let loaded: Loaded | null = null;

  async function readBack(buffer: GPUBuffer, bytes: number): Promise<Float32Array> {
    const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 0, staging, 0, bytes);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const values = new Float32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    staging.destroy();
    return values;
  }

  function storage(values: Float32Array<ArrayBuffer> | number): GPUBuffer {
    const bytes = typeof values === "number" ? 4 * values : values.byteLength;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const buffer = device.createBuffer({ size: bytes, usage });
    if (typeof values !== "number") device.queue.writeBuffer(buffer, 0, values);
    return buffer;
  }

  /** Record `runs` dispatches of one of our kernels; resolves when the queue has done them. */
  async function runOurs(strategy: string, runs: number) {
    const dispatch = loaded!.dispatches.get(strategy);
    if (!dispatch) throw new Error(`no launch for strategy ${strategy}`);
    const encoder = device.createCommandEncoder();
    for (let run = 0; run < runs; run++) {
      const pass = encoder.beginComputePass();
      pass.setPipeline(dispatch.pipeline);
      pass.setBindGroup(0, dispatch.group);
      pass.dispatchWorkgroups(...dispatch.workgroups);
      pass.end();
    }
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  }

  /** `runs` products by tfjs; the last one's tensor is returned undisposed. */
  async function runTfjs(runs: number): Promise<tf.Tensor> {
    const results: tf.Tensor[] = [];
    for (let run = 0; run < runs; run++) results.push(tf.matMul(loaded!.tfA, loaded!.tfB));
    // What tfjs does before it reads a tensor back: close the open pass, submit what is recorded.
    backend.ensureCommandEncoderReady();
    backend.endComputePassEncoder();
    backend.submitQueue();
    await backend.queue.onSubmittedWorkDone();
    const last = results.pop()!;
    for (const result of results) result.dispose();
    return last;
  }

  const bench = {
    adapters: () => ({ ours: describe(adapter.info), tfjs: describe(backend.device.adapterInfo), backend: tf.getBackend() }),

    async load(problem: Problem) {
      loaded?.release();
      const { m, k, n } = problem;
      const a = operand(m * k, 1 + m);
      const b = operand(k * n, 2 + n);
      const buffers = { a: storage(a), b: storage(b), out: storage(m * n) };
      const dispatches: Loaded["dispatches"] = new Map();
      const uniforms: GPUBuffer[] = [];
      for (const [strategy, launch] of Object.entries(problem.launches)) {
        const pipeline = await pipelineFor(launch.entry);
        const params = device.createBuffer({ size: PARAM_BYTES, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
        new Uint32Array(params.getMappedRange()).set(launch.params);
        params.unmap();
        uniforms.push(params);
        // Bindings as kernels/matmul.wgsl's header lists them: params, out, a, b.
        const group = device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: params } },
            { binding: 1, resource: { buffer: buffers.out } },
            { binding: 2, resource: { buffer: buffers.a } },
            { binding: 3, resource: { buffer: buffers.b } },
          ],
        });
        dispatches.set(strategy, { pipeline, group, workgroups: launch.workgroups });
      }
      const tfA = tf.tensor2d(a, [m, k]);
      const tfB = tf.tensor2d(b, [k, n]);
      loaded = {
        problem,
        exact: cpuProduct(a, b, m, k, n),
        out: buffers.out,
        dispatches,
        tfA,
        tfB,
        release: () => {
          for (const buffer of [...Object.values(buffers), ...uniforms]) buffer.destroy();
          tfA.dispose();
          tfB.dispose();
        },
      };
    },

    /** One product by `contender` ("tiled", "simple" or "tfjs") against the CPU's: the largest error and |value|. */
    async check(contender: string) {
      const { m, n } = loaded!.problem;
      let got: Float32Array;
      if (contender === TFJS) {
        const result = await runTfjs(1);
        got = (await result.data()) as Float32Array;
        result.dispose();
      } else {
        device.queue.writeBuffer(loaded!.out, 0, new Float32Array(m * n).fill(Number.NaN));
        await runOurs(contender, 1);
        got = await readBack(loaded!.out, 4 * m * n);
      }
      return disagreement(got, loaded!.exact);
    },

    /** Milliseconds for `runs` products by `contender`, recorded together and waited for. */
    async time(contender: string, runs: number) {
      const started = performance.now();
      if (contender === TFJS) (await runTfjs(runs)).dispose();
      else await runOurs(contender, runs);
      return performance.now() - started;
    },
  };

  (window as unknown as { matmulBench: typeof bench }).matmulBench = bench;
  document.body.dataset.state = "ready";
}

start().catch((error: unknown) => {
  document.body.dataset.state = "failed";
  document.body.dataset.error = String(error instanceof Error ? (error.stack ?? error.message) : error);
});
