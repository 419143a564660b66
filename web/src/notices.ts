// The page's two messages beside the readings: the error panel under the editor (a plain summary,
// the traceback behind "details") and a notice under the toolbar that stays until it is dismissed.

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const errorPanel = element<HTMLDivElement>("error");

export function showError(summary: string, traceback: string | null): void {
  element("error-summary").textContent = summary;
  element("error-traceback").textContent = traceback ?? "";
  element("error-details").hidden = !traceback;
  errorPanel.hidden = false;
}

export function hideError(): void {
  errorPanel.hidden = true;
}

const notice = element<HTMLDivElement>("notice");
let onDismiss: (() => void) | null = null;

export function showNotice(text: string, dismissed: () => void): void {
  element("notice-text").textContent = text;
  notice.hidden = false;
  onDismiss = dismissed;
}

element<HTMLButtonElement>("notice-dismiss").addEventListener("click", () => {
  notice.hidden = true;
  onDismiss?.();
  onDismiss = null;
});
