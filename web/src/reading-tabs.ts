// Reading tabs as the WAI-ARIA tabs pattern has them: a tab list whose tabs each control
// a tab panel. Only the selected tab is in the Tab order; the arrow keys, Home and End
// move between the tabs and show each one's panel. A panel takes focus itself, so that
// the keyboard can scroll a wide reading sideways. The playground and the embed both
// build their tabs here: one panel shown at a time (the embed may show none).

/** A tab's label where it is not the reading's own name. */
const TAB_LABELS: Record<string, string> = { hlo: "HLO" };

export class ReadingTabs<Name extends string> {
  private readonly tabs = new Map<Name, HTMLButtonElement>();
  private readonly panels = new Map<Name, HTMLElement>();

  /** `pick` is called when the user chooses a tab (a click, or a key in the tab list). */
  constructor(
    private readonly list: HTMLElement,
    /** Where the panels go. */
    private readonly host: HTMLElement,
    private readonly pick: (name: Name) => void,
  ) {
    list.role = "tablist";
    list.addEventListener("keydown", (event) => this.key(event));
  }

  /** A tab for `name`, and its panel, hidden until `show(name)`. */
  add(name: Name, panel: HTMLElement): void {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.role = "tab";
    tab.textContent = TAB_LABELS[name] ?? name;
    tab.dataset.tab = name;
    tab.id = `tab-${name}`;
    panel.id = `panel-${name}`;
    tab.setAttribute("aria-controls", panel.id);
    panel.role = "tabpanel";
    panel.setAttribute("aria-labelledby", tab.id);
    panel.tabIndex = 0;
    panel.hidden = true;
    tab.addEventListener("click", () => this.pick(name));
    this.list.append(tab);
    this.host.append(panel);
    this.tabs.set(name, tab);
    this.panels.set(name, panel);
  }

  /** Show `name`'s panel and select its tab (null: no panel shows, and no tab is selected). */
  show(name: Name | null): void {
    // The selected tab, else the first, is in the Tab order.
    const inTabOrder = name ?? this.tabs.keys().next().value;
    for (const [each, tab] of this.tabs) {
      tab.ariaSelected = String(each === name);
      tab.tabIndex = each === inTabOrder ? 0 : -1;
      this.panels.get(each)!.hidden = each !== name;
    }
  }

  /**
   * The tab `step` tabs after `from` (before it, for a negative step), wrapping around;
   * from no tab, a step forward reaches the first and a step back the last. Null when there are no tabs.
   */
  step(from: Name | null, step: number): Name | null {
    const names = [...this.tabs.keys()];
    if (!names.length) return null;
    const at = from === null ? (step > 0 ? -1 : names.length) : names.indexOf(from);
    return names[(((at + step) % names.length) + names.length) % names.length];
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
