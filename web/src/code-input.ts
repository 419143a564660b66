// The code input: a plain text area at first, Monaco once it has loaded.
//
// Monaco is the largest part of the page (megabytes of script to evaluate). Loading it
// while Pyodide starts makes both slower on a machine with few cores, so the page shows
// the code in a text area (which can be read and edited at once), starts Python, and
// loads Monaco after the first readings are shown, or as soon as the text area is
// focused, whichever comes first. Monaco then takes over the text, the caret, and the
// error mark and highlighted lines it should show.

import type { CodeEditor, EditorEvents } from "./editor";

interface Marks {
  error: { line: number | null; column: number | undefined; message: string } | null;
  linked: number[];
}

export class CodeInput {
  private readonly draft: HTMLTextAreaElement;
  private editor: CodeEditor | null = null;
  private loading: Promise<void> | null = null;
  private readonly marks: Marks = { error: null, linked: [] };

  constructor(private readonly host: HTMLElement, code: string, private readonly events: EditorEvents) {
    this.draft = document.createElement("textarea");
    this.draft.className = "code-draft";
    this.draft.spellcheck = false;
    this.draft.ariaLabel = "Code (the full editor is loading)";
    this.draft.value = code;
    this.draft.addEventListener("input", () => events.change(this.draft.value));
    this.draft.addEventListener("focus", () => void this.load(), { once: true });
    this.draft.addEventListener("keydown", (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter") events.runNow();
    });
    host.append(this.draft);
  }

  /** Load Monaco (once) and hand it the text, the caret and the marks. */
  load(): Promise<void> {
    this.loading ??= import("./editor").then(({ CodeEditor }) => {
      const { value, selectionStart } = this.draft;
      const hadFocus = document.activeElement === this.draft;
      this.draft.remove();
      this.editor = new CodeEditor(this.host, value, this.events);
      this.editor.placeCaret(selectionStart);
      if (this.marks.error) this.editor.markError(this.marks.error.line, this.marks.error.column, this.marks.error.message);
      this.editor.highlightLines(this.marks.linked);
      if (hadFocus) this.editor.focus();
      this.host.dataset.editor = "monaco";
    });
    return this.loading;
  }

  get code(): string {
    return this.editor ? this.editor.code : this.draft.value;
  }

  setCode(code: string): void {
    if (this.editor) this.editor.setCode(code);
    else this.draft.value = code;
  }

  markError(line: number | null, column: number | undefined, message: string): void {
    this.marks.error = { line, column, message };
    if (this.editor) this.editor.markError(line, column, message);
    else if (line !== null) this.host.dataset.errorLine = String(line);
  }

  clearError(): void {
    this.marks.error = null;
    if (this.editor) this.editor.clearError();
    else delete this.host.dataset.errorLine;
  }

  highlightLines(lines: number[]): void {
    this.marks.linked = lines;
    this.editor?.highlightLines(lines);
  }
}
