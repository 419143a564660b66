import { loadPyodide } from "pyodide";
const py = await loadPyodide();
const m = py._module;
console.log(Object.keys(m).filter(k => /mem|Mem|LDSO|loadWebAssembly|wasm|asm/.test(k)));
console.log(m.wasmMemory, typeof m.loadWebAssemblyModule, typeof m.loadDynamicLibrary, m.LDSO && Object.keys(m.LDSO));
