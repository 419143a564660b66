// Reading tabs as the WAI-ARIA tabs pattern has them: a tab list whose tabs each control
// a tab panel. Only the selected tab is in the Tab order; the arrow keys, Home and End
// move between the tabs and show each one's panel. A panel takes focus itself, so that
// the keyboard can scroll a wide reading sideways.

export class ReadingTabs<Name extends string> {
  private readonly tabs = new Map<Name, HTMLButtonElement>();

  /** `pick` is called when the user chooses a tab (a click, or a key in the tab list). */
  constructor(
    private readonly list: HTMLElement,
    private readonly pick: (name: Name) => void,
  ) {
    list.role = "tablist";
    list.addEventListener("keydown", (event) => this.key(event));
  }

  add(name: Name, label: string, panel: HTMLElement): void {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.role = "tab";
    tab.textContent = label;
    tab.dataset.tab = name;
    tab.id = `tab-${name}`;
    panel.id = `panel-${name}`;
    tab.setAttribute("aria-controls", panel.id);
    panel.role = "tabpanel";
    panel.setAttribute("aria-labelledby", tab.id);
    panel.tabIndex = 0;
    tab.addEventListener("click", () => this.pick(name));
    this.list.append(tab);
    this.tabs.set(name, tab);
  }

  /** Mark `name` as the selected tab (null: none is); the selected one, else the first, is in the Tab order. */
  select(name: Name | null): void {
    const inTabOrder = name ?? this.tabs.keys().next().value;
    for (const [each, tab] of this.tabs) {
      tab.ariaSelected = String(each === name);
      tab.tabIndex = each === inTabOrder ? 0 : -1;
    }
  }

  private key(event: KeyboardEvent): void {
    const names = [...this.tabs.keys()];
    const at = names.findIndex((name) => this.tabs.get(name) === event.target);
    if (at < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
    const moves: Record<string, number> = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const name = names[(moves[event.key] + names.length) % names.length];
    this.tabs.get(name)!.focus();
    this.pick(name);
  }
}
