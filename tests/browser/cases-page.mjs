// The script of the page that cases.test.mjs opens: it replays the shared test vectors
// (tests/cases/primitives.json) on the browser's WebGPU the way the playground's worker
// runs a script's kernels (web/src/worker.ts): topos.playground.run records the case and
// makes its readings, then Python runs the kernels reading's program through topos.webgpu's
// runner on its browser device (topos.playground.KernelsRun), entered so that it can wait
// for WebGPU (callPython, web/src/webgpu.ts). The test builds this file with Vite and serves
// it beside the built site, whose pyodide/ folder (Pyodide, numpy and the topos wheel) it
// loads Python from.

import { callPython } from "../../web/src/webgpu.ts";

const PYODIDE_URL = new URL("pyodide/", window.location.href).href;

/** Pyodide with numpy and the site's topos wheel, installed as the worker installs them. */
async function startPython() {
  const { loadPyodide } = await import(/* @vite-ignore */ `${PYODIDE_URL}pyodide.mjs`);
  const pyodide = await loadPyodide({ indexURL: PYODIDE_URL });
  await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
  const manifest = await (await fetch(`${PYODIDE_URL}topos-wheel.json`)).json();
  const wheel = await fetch(`${PYODIDE_URL}${manifest.file}?sha256=${manifest.sha256}`);
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
  pyodide.unpackArchive(new Uint8Array(await wheel.arrayBuffer()), "wheel", { extractDir: sitePackages });
  pyodide.runPython("import topos.playground");
  pyodide.runPython("import topos.pyodide; topos.pyodide.load_kernels()"); // as python-loader.ts's loadKernels
  return pyodide;
}

/**
 * The script a case is replayed as. Its nodes must be recorded by the script itself (the
 * playground reads only what the user's own lines record), so it rebuilds the case's graph
 * here, as tests/python/kernel_cases.py's record() does.
 */
const caseScript = (index) => `
from topos import Tape
from kernel_cases import decode, load_cases

case = load_cases()[${index}]

def build(tape):
    values = [tape.input(decode(tensor), dtype=tensor["dtype"]) for tensor in case["inputs"]]
    for node in case["nodes"]:
        if node["opcode"] == "Leaf":
            values.append(tape.leaf(decode(node["value"]), dtype=node["value"]["dtype"]))
        else:
            operands = [values[i] for i in node["operands"]]
            values.append(tape.apply(node["opcode"], operands, **node.get("attrs", {})))
    return [values[i] for i in case["outputs"]]

Tape.record(build, dtype="float32")
`;

// The host side of the replay: the newest run's kernel program runs on the device, and its
// values (what readbacks wrote and host steps computed) are checked against the case, as are
// the numpy interpreter's.
const HOST = `
import topos.playground as playground
from kernel_cases import disagreement, load_cases
from topos.compiler.wgsl.program import HostStep
from topos.ops import lookup

def check(index):
    """Run the newest readings' kernel program on WebGPU; a sentence naming what went wrong with case index, or None."""
    held = playground.KernelsRun(playground.latest_readings).run()
    case = load_cases()[index]
    interpreted = disagreement(case, [held.expected[k] for k in case["outputs"]])
    if interpreted is not None:
        return f"the numpy interpreter: {interpreted}"
    on_device = disagreement(case, [held.values[k] for k in case["outputs"]])
    if on_device is not None:
        return f"WebGPU: {on_device}"
    # Every node with a kernel ran on the device; only the declined ones on the host.
    for step in held.program.steps:
        if not isinstance(step, HostStep):
            continue
        node = held.plan.nodes[step.key]
        if lookup(node.opcode).kernel is not None and node.dtype == "float32":
            return f"node {step.key} {node.opcode} ran on the host, not on WebGPU"
    return None
`;

/** What went wrong with case `index`, or null when it agreed. */
async function replayCase(pyodide, check, playground, index) {
  try {
    const result = JSON.parse(playground.run(caseScript(index)));
    if (result.error) return `the script raised ${result.error.type}: ${result.error.message}`;
    return (await callPython(pyodide, check, index)) ?? null;
  } catch (error) {
    return String(error);
  }
}

/**
 * Replay every case; `kernelCases` is tests/python/kernel_cases.py's text and `casesJson`
 * primitives.json's. Returns the adapter's name and, per case, its name and what went
 * wrong (null when it agreed).
 */
async function replayCases(kernelCases, casesJson) {
  const pyodide = await startPython();
  // kernel_cases.py finds primitives.json as tests/python/../cases/primitives.json.
  pyodide.FS.mkdirTree("/replay/python");
  pyodide.FS.mkdirTree("/replay/cases");
  pyodide.FS.writeFile("/replay/python/kernel_cases.py", kernelCases);
  pyodide.FS.writeFile("/replay/cases/primitives.json", casesJson);
  pyodide.FS.writeFile("/replay/python/browser_replay.py", HOST);
  pyodide.runPython("import sys; sys.path.insert(0, '/replay/python')");
  const host = pyodide.pyimport("browser_replay");
  const check = host.check;
  const playground = pyodide.pyimport("topos.playground");
  const status = playground.status_json;
  // Python's own device: its adapter, or why there is none.
  const gpu = JSON.parse(await callPython(pyodide, status));
  if (!gpu.available) throw new Error(`no WebGPU for Python: ${gpu.detail}`);
  const names = JSON.parse(casesJson).cases.map((c) => c.name);
  const results = [];
  for (const [index, name] of names.entries()) {
    results.push({ name, problem: await replayCase(pyodide, check, playground, index) });
  }
  // The attributes' proxies go with their modules'.
  host.destroy();
  playground.destroy();
  return { adapter: gpu.detail, results };
}

Object.assign(window, { replayCases });
