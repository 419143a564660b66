// The output pane: what the user's code printed and the cards it made (topos.show),
// in order; and Run mode's output pane, which grows while a run goes. The cards are drawn
// by web/src/cards/draw-card.ts, as the JupyterLab extension draws them.

import type { OutputItem, UserError } from "../../protocol";
import { drawCard, textBlock } from "../cards/draw-card";

export class OutputPane {
  readonly element: HTMLDivElement;
  private items: OutputItem[] = [];

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "reading output-reading";
    this.element.dataset.reading = "output";
    // Plots take the theme's colours when drawn: draw them again when the theme changes.
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => this.render(this.items));
  }

  render(items: OutputItem[]): void {
    this.items = items;
    this.element.replaceChildren();
    const width = this.element.clientWidth - 24;
    for (const item of items) this.element.append(drawItem(item, width));
    if (!items.length) this.element.append(textBlock("card card-empty", "(no output)"));
  }
}

function drawItem(item: OutputItem, width: number): HTMLElement {
  return item.kind === "print" ? textBlock("card card-print", item.text) : drawCard(item, width);
}

/**
 * Run mode's output: a run's printed lines and cards as they come. Printed text runs on in
 * one block until a card comes; a card that changes (a plot that grows) is drawn again in
 * its place. Its container stays scrolled to the end while it was there.
 */
export class RunOutputPane {
  readonly element: HTMLDivElement;
  /** The run's cards, by number (their order of arrival), with what each shows now. */
  private cards: { item: OutputItem; element: HTMLElement }[] = [];
  /** The block printed text goes on in, while no card has come after it. */
  private printBlock: HTMLPreElement | null = null;

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "reading output-reading run-output";
    this.element.dataset.runOutput = "";
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      for (const number of this.cards.keys()) this.change(number, this.cards[number].item);
    });
  }

  /** A new run: nothing shown yet. */
  clear(): void {
    this.cards = [];
    this.printBlock = null;
    this.element.replaceChildren();
  }

  append(items: OutputItem[]): void {
    this.keepingTheEndInView(() => {
      for (const item of items) {
        if (item.kind === "print") {
          if (!this.printBlock) {
            this.printBlock = textBlock("card card-print", "");
            this.element.append(this.printBlock);
          }
          // A text node of its own: the block's earlier text is not copied again.
          this.printBlock.append(document.createTextNode(item.text));
        } else {
          const element = drawItem(item, this.width());
          this.cards.push({ item, element });
          this.element.append(element);
          this.printBlock = null;
        }
      }
    });
  }

  /** Card `number` of the run changed: draw it again where it is. */
  change(number: number, item: OutputItem): void {
    const card = this.cards[number];
    if (!card) return;
    const element = drawItem(item, this.width());
    card.element.replaceWith(element);
    this.cards[number] = { item, element };
  }

  /** The run ended: say so when it printed nothing. */
  ended(): void {
    if (!this.element.childElementCount) this.element.append(textBlock("card card-empty", "(no output)"));
  }

  /** The script's error, after its output: the plain line, and the traceback behind "details". */
  error(summary: string, failure: UserError | null): void {
    this.keepingTheEndInView(() => {
      const block = document.createElement("div");
      block.className = "card card-error";
      block.append(Object.assign(document.createElement("p"), { textContent: summary }));
      if (failure?.traceback) {
        const details = document.createElement("details");
        details.append(Object.assign(document.createElement("summary"), { textContent: "details" }), textBlock("", failure.traceback));
        block.append(details);
      }
      this.element.append(block);
      this.printBlock = null;
    });
  }

  private width(): number {
    return this.element.clientWidth - 24;
  }

  /** Make `change`; if the pane's scrolling container showed the end before, it shows the end after. */
  private keepingTheEndInView(change: () => void): void {
    const scroller = this.element.parentElement ?? this.element;
    const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 8;
    change();
    if (atEnd) scroller.scrollTop = scroller.scrollHeight;
  }
}
