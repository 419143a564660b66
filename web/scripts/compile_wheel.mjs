// Adds Python bytecode to the topos wheel that the page installs (public/pyodide/), compiled by
// the page's own Python: Pyodide, run here in Node, so the bytecode is exactly the version the
// browser imports (a CPython of another minor version writes bytecode Pyodide cannot use).
//
// Without it, Pyodide compiles every topos module from source on every start: about half of
// importing topos, and part of the playground's cold start (tests/bench/playground.mjs). The
// .pyc files are "unchecked-hash" ones (PEP 552): the unpacked wheel's files carry no useful
// modification times, and the sources beside them never change. The sources stay in the
// wheel, so tracebacks still show topos's lines; RECORD lists the added files.
//
// Usage: node web/scripts/compile_wheel.mjs public/pyodide/topos_autodiff-….whl  (rewrites it in place)

import { readFileSync, writeFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const [wheelPath] = process.argv.slice(2);
if (!wheelPath) {
  console.error("usage: node web/scripts/compile_wheel.mjs WHEEL");
  process.exit(2);
}

const pyodide = await loadPyodide({ stdout: () => {}, stderr: (line) => console.error(line) });
pyodide.FS.writeFile("/tmp/in.whl", readFileSync(wheelPath));
const added = pyodide.runPython(`
import base64, hashlib, importlib.util, io, zipfile

def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

def bytecode(source, name):
    code = compile(source, name, "exec", dont_inherit=True)
    # PEP 552's header for an unchecked hash-based .pyc: the magic number, flags 0b01, the source's hash.
    flags = (1).to_bytes(4, "little")
    source_hash = importlib.util.source_hash(source)
    import marshal
    return importlib.util.MAGIC_NUMBER + flags + source_hash + marshal.dumps(code)

tag = __import__("sys").implementation.cache_tag
with zipfile.ZipFile("/tmp/in.whl") as wheel:
    entries = [(info, wheel.read(info)) for info in wheel.infolist()]
record_name = next(info.filename for info, _ in entries if info.filename.endswith(".dist-info/RECORD"))
compiled = []
for info, data in entries:
    if info.filename.endswith(".py"):
        folder, _, file = info.filename.rpartition("/")
        name = f"{folder}/__pycache__/{file[:-3]}.{tag}.pyc"
        compiled.append((name, bytecode(data, info.filename)))
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rewritten:
    for info, data in entries:
        if info.filename == record_name:
            lines = data.decode().rstrip("\\n").split("\\n")
            lines[-1:-1] = [record_line(name, pyc) for name, pyc in compiled]
            data = ("\\n".join(lines) + "\\n").encode()
        rewritten.writestr(info, data)
    for name, pyc in compiled:
        rewritten.writestr(name, pyc)
open("/tmp/out.whl", "wb").write(out.getvalue())
len(compiled)
`);
writeFileSync(wheelPath, pyodide.FS.readFile("/tmp/out.whl"));
console.log(`compile_wheel: ${added} modules compiled for Pyodide's Python into ${wheelPath}`);
