// The page's copy of the docs' output-agreement rule (web/docs-site/output-agreement.ts)
// replays the same cases as the Python rule (tests/python/test_output_agreement.py).
// It needs no browser: the TypeScript is transpiled with the project's own compiler.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import ts from "typescript";

const source = readFileSync(new URL("../../web/docs-site/output-agreement.ts", import.meta.url), "utf8");
const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } });
const rule = await import(`data:text/javascript;base64,${Buffer.from(outputText).toString("base64")}`);
const { cases } = JSON.parse(readFileSync(new URL("../../docs/tools/output-agreement-cases.json", import.meta.url), "utf8"));

test("the page's rule gives every shared case its verdict, both ways round", () => {
  assert.ok(cases.length > 10);
  for (const { built, rerun, agree, why } of cases) {
    assert.equal(rule.outputsAgree(built, rerun), agree, `${why}: ${JSON.stringify(built)} / ${JSON.stringify(rerun)}`);
    assert.equal(rule.outputsAgree(rerun, built), agree, `${why} (swapped)`);
  }
});

test("a disagreement names the line and both numbers", () => {
  assert.match(rule.firstDisagreement("a 1\nstep 200  loss 1.2870\n", "a 1\nstep 200  loss 1.2886\n"), /^line 2: 1\.2870 against 1\.2886/);
});
