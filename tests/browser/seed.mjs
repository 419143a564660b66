// The seed's first example and its readings, read from tests/python/golden/ (the one
// copy, taken by hand from the public contract, API.md, "Recording", "Lowering and the
// readings" and "Sealing, symbols, running"): these are the oracle, not output of the
// code under test. The reading files end with the newline `print` adds; a pane's text does not.

import { readFileSync } from "node:fs";

const golden = (name) => readFileSync(new URL(`../python/golden/${name}`, import.meta.url), "utf8");
const reading = (name) => golden(name).replace(/\n$/, "");

export const SEED_RECORDING = golden("seed_recording.txt");
export const SEED_DESCRIBE = reading("seed_describe.txt");
export const SEED_PLAN = reading("seed_plan.txt");
export const SEED_HLO = reading("seed_hlo.txt");

/** The sealed form of the same seed (API.md, "Sealing, symbols, running"). */
export const SEED_SEALED = golden("seed_sealed.txt");
