// The code editor: Monaco with Python, error markers on the user's line, and the
// highlight of the source lines that recorded the selected nodes.

import * as monaco from "./monaco";

export interface EditorEvents {
  change(code: string): void;
  /** The cursor moved to `line` by the user (clicks and keys, not our own edits). */
  cursorLine(line: number): void;
  runNow(): void;
  nextPane(step: number): void;
  /** Ctrl+M switched what Tab does: `leaves` true when Tab now moves the focus out of the editor. */
  tabLeaves?(leaves: boolean): void;
}

// Marks stay on their own line: text typed or pasted at their edges never joins them.
const STAY = { stickiness: monaco.editor.TrackedRangeStickiness.NeverGrowsWhenTypingAtEdges };

const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");

export class CodeEditor {
  private readonly editor: monaco.editor.IStandaloneCodeEditor;
  private readonly linked: monaco.editor.IEditorDecorationsCollection;
  private readonly errorLine: monaco.editor.IEditorDecorationsCollection;
  private settingCode = false;

  constructor(private readonly host: HTMLElement, code: string, events: EditorEvents) {
    this.editor = monaco.editor.create(host, {
      value: code,
      language: "python",
      theme: darkScheme.matches ? "vs-dark" : "vs",
      automaticLayout: true,
      minimap: { enabled: false },
      fontSize: 13,
      scrollBeyondLastLine: false,
      tabSize: 4,
      insertSpaces: true,
      renderLineHighlight: "line",
      glyphMargin: true,
    });
    darkScheme.addEventListener("change", () => monaco.editor.setTheme(darkScheme.matches ? "vs-dark" : "vs"));
    this.linked = this.editor.createDecorationsCollection();
    this.errorLine = this.editor.createDecorationsCollection();
    this.editor.onDidChangeModelContent(() => {
      if (!this.settingCode) events.change(this.code);
    });
    this.editor.onDidChangeCursorPosition((event) => {
      const byUser = event.source === "mouse" || event.source === "keyboard";
      if (byUser && !this.settingCode) events.cursorLine(event.position.lineNumber);
    });
    const { KeyMod, KeyCode } = monaco;
    this.editor.addCommand(KeyMod.CtrlCmd | KeyCode.Enter, () => events.runNow());
    this.editor.addCommand(KeyMod.Alt | KeyCode.PageDown, () => events.nextPane(1));
    this.editor.addCommand(KeyMod.Alt | KeyCode.PageUp, () => events.nextPane(-1));
    this.keepTabFromTrapping(events);
  }

  /**
   * Tab indents, so a keyboard user needs another way out of the editor: Escape then Tab
   * (or Shift+Tab) moves the focus on, and Ctrl+M switches Tab to moving the focus for
   * good (VS Code's key; the slim build has no toggleTabFocusMode action). Both use
   * Monaco's tabFocusMode option, which leaves Tab to the browser.
   */
  private keepTabFromTrapping(events: EditorEvents): void {
    const { KeyMod, KeyCode } = monaco;
    let tabLeaves = false;
    let escaped = false;
    let applied = false;
    const apply = () => {
      if (applied === (tabLeaves || escaped)) return;
      applied = tabLeaves || escaped;
      this.editor.updateOptions({ tabFocusMode: applied });
    };
    this.editor.onKeyDown((event) => {
      if (event.keyCode === KeyCode.Escape) escaped = true;
      else if (event.keyCode !== KeyCode.Tab && event.keyCode !== KeyCode.Shift) escaped = false;
      apply();
    });
    const forgetEscape = () => {
      escaped = false;
      apply();
    };
    this.editor.onMouseDown(forgetEscape);
    this.editor.onDidBlurEditorText(forgetEscape);
    // Ctrl on every platform (KeyMod.WinCtrl is the Control key on a Mac, where Cmd+M minimises the window).
    const ctrl = /Mac|iPhone|iPad/.test(navigator.platform) ? KeyMod.WinCtrl : KeyMod.CtrlCmd;
    this.editor.addCommand(ctrl | KeyCode.KeyM, () => {
      tabLeaves = !tabLeaves;
      apply();
      this.host.dataset.tabLeaves = String(tabLeaves);
      events.tabLeaves?.(tabLeaves);
    });
  }

  get code(): string {
    return this.editor.getValue();
  }

  /** Replace the whole text (an example, a share link); no change event fires. */
  setCode(code: string): void {
    this.settingCode = true;
    try {
      this.editor.setValue(code);
    } finally {
      this.settingCode = false;
    }
  }

  /** Mark the user's line where the code failed (a SyntaxError, a ShapeError, any exception). */
  markError(line: number | null, column: number | undefined, message: string): void {
    const model = this.editor.getModel();
    if (!model) return;
    if (line === null || line < 1 || line > model.getLineCount()) {
      this.clearError();
      return;
    }
    const start = column ?? model.getLineFirstNonWhitespaceColumn(line) ?? 1;
    monaco.editor.setModelMarkers(model, "topos", [
      {
        severity: monaco.MarkerSeverity.Error,
        message,
        startLineNumber: line,
        startColumn: Math.max(1, start),
        endLineNumber: line,
        endColumn: model.getLineMaxColumn(line),
      },
    ]);
    this.errorLine.set([
      { range: new monaco.Range(line, 1, line, 1), options: { ...STAY, isWholeLine: true, className: "error-line", glyphMarginClassName: "error-glyph" } },
    ]);
    this.host.dataset.errorLine = String(line);
  }

  clearError(): void {
    const model = this.editor.getModel();
    if (model) monaco.editor.setModelMarkers(model, "topos", []);
    this.errorLine.clear();
    delete this.host.dataset.errorLine;
  }

  /** Highlight the lines that recorded the selected nodes, and bring the first into view. */
  highlightLines(lines: number[]): void {
    this.linked.set(
      lines.map((line) => ({ range: new monaco.Range(line, 1, line, 1), options: { ...STAY, isWholeLine: true, className: "linked-line" } })),
    );
    if (lines.length) {
      this.editor.revealLineInCenterIfOutsideViewport(lines[0]);
      this.host.dataset.linkedLines = lines.join(" ");
    } else {
      delete this.host.dataset.linkedLines;
    }
  }

  focus(): void {
    this.editor.focus();
  }

  /** Put the caret at a character offset of the text. */
  placeCaret(offset: number): void {
    const position = this.editor.getModel()?.getPositionAt(offset);
    if (position) this.editor.setPosition(position);
  }
}
