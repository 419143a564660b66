// The lines a child process writes to its standard output, one at a time, as an async iterator:
// the benchmarks that take turns with a native process (pyodide_train.mjs, browser_train.mjs)
// write it a line to start a chunk and read back the line it prints when the chunk is done.

/** An async iterator over the lines (without their "\n") of `stream`. */
export async function* lines(stream) {
  let buffer = "";
  for await (const data of stream) {
    buffer += data;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
    }
  }
}
