// When does the browser's run of a docs block print "the same" as the built docs?
// The rule of docs/tools/output_agreement.py, written again for the page (read that
// file's docstring for the why): text around the numbers exactly, spaces aside;
// integers exactly; decimals within RELATIVE of the larger, ABSOLUTE, or one unit in
// the last printed digit. Both replay docs/tools/output-agreement-cases.json.

export const RELATIVE = 1e-6;
export const ABSOLUTE = 1e-12;

// A number as Python and numpy print one; digits glued to letters (W1, float32, 2x3) are text.
const NUMBER =
  /(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])|(?<![\w.])[-+]?(?:nan|inf)(?![\w.])/g;
const SPACES = /[ \t]+/g;

function splitNumbers(text: string): { texts: string[]; numbers: string[] } {
  const texts: string[] = [];
  const numbers: string[] = [];
  let start = 0;
  for (const match of text.matchAll(NUMBER)) {
    texts.push(text.slice(start, match.index));
    numbers.push(match[0]);
    start = match.index! + match[0].length;
  }
  texts.push(text.slice(start));
  return { texts, numbers };
}

const isInteger = (token: string) => /^[-+]?\d+$/.test(token);

function parseNumber(token: string): number {
  const unsigned = token.replace(/^[-+]/, "");
  const sign = token.startsWith("-") ? -1 : 1;
  if (unsigned === "inf") return sign * Infinity;
  if (unsigned === "nan") return NaN;
  return Number(token);
}

function lastDigitUnit(token: string): number {
  const [mantissa, exponent] = token.toLowerCase().split("e");
  const decimals = mantissa.includes(".") ? mantissa.split(".")[1].length : 0;
  return 10 ** (Number(exponent ?? 0) - decimals);
}

export function numbersAgree(built: string, rerun: string): boolean {
  if (isInteger(built) || isInteger(rerun)) {
    return isInteger(built) && isInteger(rerun) && BigInt(built.replace("+", "")) === BigInt(rerun.replace("+", ""));
  }
  const a = parseNumber(built);
  const b = parseNumber(rerun);
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  const allowed = Math.max(RELATIVE * Math.max(Math.abs(a), Math.abs(b)), ABSOLUTE, lastDigitUnit(built), lastDigitUnit(rerun));
  return Math.abs(a - b) <= allowed;
}

function lineDisagreement(built: string, rerun: string): string | null {
  const left = splitNumbers(built);
  const right = splitNumbers(rerun);
  if (left.numbers.length !== right.numbers.length) return `${left.numbers.length} numbers against ${right.numbers.length}`;
  for (let i = 0; i < left.texts.length; i++) {
    if (left.texts[i].replace(SPACES, "") !== right.texts[i].replace(SPACES, "")) {
      return `text ${JSON.stringify(left.texts[i].trim())} against ${JSON.stringify(right.texts[i].trim())}`;
    }
  }
  for (let i = 0; i < left.numbers.length; i++) {
    if (!numbersAgree(left.numbers[i], right.numbers[i])) return `${left.numbers[i]} against ${right.numbers[i]}`;
  }
  return null;
}

/** null when the two outputs agree; else where they first differ. */
export function firstDisagreement(built: string, rerun: string): string | null {
  const builtLines = built.split("\n");
  const rerunLines = rerun.split("\n");
  for (let i = 0; i < Math.min(builtLines.length, rerunLines.length); i++) {
    const problem = lineDisagreement(builtLines[i], rerunLines[i]);
    if (problem) return `line ${i + 1}: ${problem}`;
  }
  if (builtLines.length !== rerunLines.length) {
    return `the built output has ${builtLines.length} lines, the rerun ${rerunLines.length}`;
  }
  return null;
}

export const outputsAgree = (built: string, rerun: string) => firstDisagreement(built, rerun) === null;
