// The output pane: what the user's code printed and the cards it made (topos.show),
// in order; and Run mode's output pane, which grows while a run goes. The cards are drawn
// by web/src/cards/draw-card.ts, as the JupyterLab extension draws them; a card taken off
// (a new edit's output, a new run, a plot drawn again) is released there.

import type { OutputItem, UserError } from "../../protocol";
import { drawCard, PLOT_HEIGHT, releaseCards, textBlock } from "../cards/draw-card";
import "./output-pane.css";

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
    releaseCards(this.element);
    this.element.replaceChildren();
    const width = this.element.clientWidth - 24;
    for (const item of items) this.element.append(drawItem(item, width));
    if (!items.length) this.element.append(textBlock("card card-empty", "(no output)"));
  }
}

function drawItem(item: OutputItem, width: number, plotHeight = PLOT_HEIGHT): HTMLElement {
  return item.kind === "print" ? textBlock("card card-print", item.text) : drawCard(item, width, plotHeight);
}


/** Room the printed text keeps under the pinned cards: three lines, whatever the cards are. */
const TEXT_ROOM = 56;
/** No plot is drawn shorter than this to be pinned: a shorter one would not read well. */
const MIN_PLOT_HEIGHT = 120;

/** A card of the run: what it shows, and for a plot the height it is drawn at. */
interface RunCard {
  item: OutputItem;
  element: HTMLElement;
  /** It changed during the run: it is pinned where there is room. */
  live: boolean;
  plotHeight: number;
  /** Its height was measured since it was last drawn for a change or the container's size: it is not fitted again. */
  measured: boolean;
}

/**
 * Run mode's output: a run's printed lines and cards as they come. Printed text runs on in
 * one block until a card comes; a card that changes (a plot that grows) is drawn again in
 * its place. Its container stays scrolled to the end while it was there.
 *
 * A card that changes during the run is live: it is pinned (sticky) at the top of the
 * container, under the earlier live cards, so that it stays in view while the text scrolls
 * under it, during the run and after it. Cards are pinned in order while TEXT_ROOM is left
 * for the text; a live plot is drawn shorter (down to MIN_PLOT_HEIGHT) where that lets it be
 * pinned. `notice`, which the page places above `element` in the same container, says when
 * the code shown is no longer the code that ran (setStale).
 */
export class RunOutputPane {
  readonly element: HTMLDivElement;
  readonly notice: HTMLParagraphElement;
  /** The run's cards, by number (their order of arrival). */
  private cards: RunCard[] = [];
  /** The block printed text goes on in, while no card has come after it. */
  private printBlock: HTMLPreElement | null = null;
  private observed: Element | null = null;

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "reading output-reading run-output";
    this.element.dataset.runOutput = "";
    this.notice = document.createElement("p");
    this.notice.className = "run-stale";
    this.notice.hidden = true;
    this.notice.textContent = "The code has changed since this run: the output below is of the earlier code. Run runs the code shown.";
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      for (const card of this.cards) this.redraw(card, card.item);
      this.pinSoon();
    });
  }

  /** A new run: nothing shown yet. */
  clear(): void {
    releaseCards(this.element);
    this.cards = [];
    this.printBlock = null;
    this.element.replaceChildren();
    this.setStale(false);
  }

  /** Whether the code shown differs from the code of the run shown (the notice says so). */
  setStale(stale: boolean): void {
    if (this.notice.hidden !== stale) return;
    this.notice.hidden = !stale;
    this.refit();
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
          this.cards.push({ item, element, live: false, plotHeight: PLOT_HEIGHT, measured: false });
          this.element.append(element);
          this.printBlock = null;
        }
      }
    });
  }

  /** Card `number` of the run changed: it is live; draw it again where it is. */
  change(number: number, item: OutputItem): void {
    const card = this.cards[number];
    if (!card) return;
    card.live = true;
    card.measured = false;
    this.keepingTheEndInView(() => this.redraw(card, item));
    this.pinSoon();
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

  /** Draw `card` again, showing `item`, its plot at the height last fitted to the pane (see pin). */
  private redraw(card: RunCard, item: OutputItem): void {
    const element = drawItem(item, this.width(), card.plotHeight);
    card.element.replaceWith(element);
    releaseCards(card.element);
    card.element = element;
    card.item = item;
  }

  /** Pin once the charts just drawn have their sizes: uPlot gives its elements theirs in a microtask of its own. */
  private pinSoon(): void {
    queueMicrotask(() => this.pin());
  }

  /** The room for the cards has changed (the container's size, the notice): fit the live plots to it again. */
  private refit(): void {
    for (const card of this.cards) card.measured = false;
    this.pin();
  }

  /**
   * Pin the live cards, in order, while the text keeps TEXT_ROOM of the container under them. A live
   * plot is measured first, once a drawing: when the height that fits the room left for it (as usual
   * where there is room, else less, but as usual where even a MIN_PLOT_HEIGHT one would not fit: that
   * one is scrolled to, not pinned) is not the height it was drawn at, it is drawn again at that height
   * and pinned after that.
   */
  private pin(): void {
    this.observe(this.scroller());
    const room = this.room() - TEXT_ROOM;
    let top = this.notice.hidden ? 0 : this.notice.offsetHeight;
    for (const card of this.cards) {
      const height = card.live ? card.element.offsetHeight : 0;
      if (height && card.item.kind === "plot" && !card.measured) {
        card.measured = true;
        const fits = room - top - (height - card.plotHeight);
        const fitted = fits < MIN_PLOT_HEIGHT ? PLOT_HEIGHT : Math.min(PLOT_HEIGHT, fits);
        if (fitted !== card.plotHeight) {
          card.plotHeight = fitted;
          this.keepingTheEndInView(() => this.redraw(card, card.item));
          return this.pinSoon();
        }
      }
      const pinned = card.live && height > 0 && top + height <= room;
      card.element.classList.toggle("pinned", pinned);
      card.element.style.top = pinned ? `${top}px` : "";
      if (pinned) top += height;
    }
  }

  /** The container changes size (the window, or the container shown again): fit and pin again. */
  private observe(scroller: Element): void {
    if (this.observed === scroller || scroller === this.element) return;
    this.observed = scroller;
    new ResizeObserver(() => this.refit()).observe(scroller);
    // How far the text is scrolled sideways: a pinned card's background reaches that much further
    // right (output-pane.css), so that a long line scrolled under it does not show beside it.
    const sideways = () => this.element.style.setProperty("--scrolled-sideways", `${scroller.scrollLeft}px`);
    scroller.addEventListener("scroll", sideways, { passive: true });
  }

  /** The container's height; for one that grows with its content up to a maximum (the embed's), that maximum. */
  private room(): number {
    const scroller = this.scroller();
    const most = parseFloat(getComputedStyle(scroller).maxHeight); // NaN for "none"
    return Number.isFinite(most) ? most : scroller.clientHeight;
  }

  private scroller(): HTMLElement {
    return this.element.parentElement ?? this.element;
  }

  private width(): number {
    return this.element.clientWidth - 24;
  }

  /** Make `change`; if the pane's scrolling container showed the end before, it shows the end after. */
  private keepingTheEndInView(change: () => void): void {
    const scroller = this.scroller();
    const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 8;
    change();
    // After the microtask in which a chart just drawn takes its size (see pinSoon), so that the end is the end.
    if (atEnd) queueMicrotask(() => (scroller.scrollTop = scroller.scrollHeight));
  }
}
