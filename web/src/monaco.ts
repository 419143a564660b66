// A slim Monaco: the editor core with the everyday editing features and the Python
// language only (no TypeScript, CSS, HTML or JSON services, no other grammars).
// The full entry (monaco-editor's editor.main) is about three times the size.
// "monaco-esm" is an alias for monaco-editor/esm/vs (vite.config.ts), so that
// CSS files can be imported by their real names.

import EditorWorker from "monaco-editor/editor/editor.worker?worker";

import "monaco-esm/base/browser/ui/codicons/codicon/codicon.css";
import "monaco-esm/base/browser/ui/codicons/codicon/codicon-modifiers.css";
import "monaco-esm/editor/browser/coreCommands.js";
import "monaco-esm/editor/browser/widget/codeEditor/codeEditorWidget.js";
import "monaco-esm/editor/contrib/bracketMatching/browser/bracketMatching.js";
import "monaco-esm/editor/contrib/caretOperations/browser/caretOperations.js";
import "monaco-esm/editor/contrib/clipboard/browser/clipboard.js";
import "monaco-esm/editor/contrib/comment/browser/comment.js";
import "monaco-esm/editor/contrib/contextmenu/browser/contextmenu.js";
import "monaco-esm/editor/contrib/cursorUndo/browser/cursorUndo.js";
import "monaco-esm/editor/contrib/dropOrPasteInto/browser/copyPasteContribution.js";
import "monaco-esm/editor/contrib/find/browser/findController.js";
import "monaco-esm/editor/contrib/folding/browser/folding.js";
import "monaco-esm/editor/contrib/gotoError/browser/gotoError.js";
import "monaco-esm/editor/contrib/hover/browser/hoverContribution.js";
import "monaco-esm/editor/contrib/indentation/browser/indentation.js";
import "monaco-esm/editor/contrib/lineSelection/browser/lineSelection.js";
import "monaco-esm/editor/contrib/linesOperations/browser/linesOperations.js";
import "monaco-esm/editor/contrib/multicursor/browser/multicursor.js";
import "monaco-esm/editor/contrib/smartSelect/browser/smartSelect.js";
import "monaco-esm/editor/contrib/suggest/browser/suggestController.js";
import "monaco-esm/editor/contrib/tokenization/browser/tokenization.js";
import "monaco-esm/editor/contrib/wordHighlighter/browser/wordHighlighter.js";
import "monaco-esm/editor/contrib/wordOperations/browser/wordOperations.js";
import "monaco-esm/editor/standalone/browser/quickAccess/standaloneCommandsQuickAccess.js";
import "monaco-esm/editor/standalone/browser/quickAccess/standaloneGotoLineQuickAccess.js";
import "monaco-esm/editor/common/standaloneStrings.js";
import "monaco-esm/languages/definitions/python/register.js";

export * from "monaco-esm/editor/editor.api.js";

// Monaco runs its text model services in a web worker of its own.
self.MonacoEnvironment = {
  getWorker: () => new EditorWorker(),
};
