// The code of a read-only embed: plain text, one element a line (so that the lines
// that recorded the selected nodes, and the line of an error, can be marked), with
// the same surface as the editable CodeInput.

export interface CodeView {
  readonly code: string;
  setCode(code: string): void;
  markError(line: number | null, column: number | undefined, message: string): void;
  clearError(): void;
  highlightLines(lines: number[]): void;
}

export class ReadOnlyCode implements CodeView {
  private readonly element: HTMLPreElement;
  private text = "";
  private lines: HTMLSpanElement[] = [];

  constructor(private readonly host: HTMLElement, code: string) {
    this.element = document.createElement("pre");
    this.element.className = "embed-readonly-code";
    this.element.ariaLabel = "Code (read-only)";
    host.append(this.element);
    host.dataset.editor = "readonly";
    this.setCode(code);
  }

  get code(): string {
    return this.text;
  }

  setCode(code: string): void {
    this.text = code;
    this.lines = code.split("\n").map((line) => {
      const span = document.createElement("span");
      span.className = "line";
      span.textContent = line;
      return span;
    });
    const fragment = document.createDocumentFragment();
    this.lines.forEach((span, index) => fragment.append(...(index ? ["\n", span] : [span])));
    this.element.replaceChildren(fragment);
  }

  markError(line: number | null, _column: number | undefined, message: string): void {
    this.clearError();
    if (line === null || !this.lines[line - 1]) return;
    this.lines[line - 1].classList.add("error-line");
    this.lines[line - 1].title = message;
    this.host.dataset.errorLine = String(line);
  }

  clearError(): void {
    for (const span of this.lines) {
      span.classList.remove("error-line");
      span.removeAttribute("title");
    }
    delete this.host.dataset.errorLine;
  }

  highlightLines(lines: number[]): void {
    this.lines.forEach((span, index) => span.classList.toggle("linked-line", lines.includes(index + 1)));
  }
}
