// The HLO reading: the plan's module, or, chosen by a switch above it, the module of a whole
// training step (the gradient reading's plan followed by an optimizer's update, as Python's
// `emit_training_step` writes it). Both are text panes' rows, so selecting a line selects its
// nodes in either; the update's lines are about no node of the recording.

import type { Reading } from "../../protocol";
import { TextPane } from "./text-pane";

type Module = "plan" | "step";

const MODULE_LABELS: Record<Module, string> = { plan: "plan", step: "training step" };

export class HloPane {
  readonly element: HTMLDivElement;
  private readonly text: TextPane;
  private readonly choice: HTMLDivElement;
  private readonly buttons = new Map<Module, HTMLButtonElement>();
  private shown: Module = "plan";
  private reading: Reading = {};
  private selected = new Set<number>();

  constructor(onSelect: (nodes: number[]) => void) {
    this.text = new TextPane("hlo", onSelect);
    this.choice = document.createElement("div");
    this.choice.className = "module-choice";
    this.choice.role = "group";
    this.choice.ariaLabel = "Which module";
    for (const module of ["plan", "step"] as Module[]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = MODULE_LABELS[module];
      button.dataset.module = module;
      button.addEventListener("click", () => this.choose(module));
      this.choice.append(button);
      this.buttons.set(module, button);
    }
    this.element = document.createElement("div");
    this.element.append(this.choice, this.text.element);
    this.choose("plan");
  }

  render(reading: Reading): void {
    this.reading = reading;
    // Without a plan module there is no training step either: the pane shows the reading's error alone.
    this.choice.hidden = reading.step === undefined;
    this.show();
  }

  highlight(selected: Set<number>): void {
    this.selected = selected;
    this.text.highlight(selected);
  }

  private choose(module: Module): void {
    this.shown = module;
    for (const [each, button] of this.buttons) button.ariaPressed = String(each === module);
    this.show();
  }

  private show(): void {
    const step = this.reading.step;
    this.text.render(this.shown === "step" && step !== undefined ? step : this.reading);
    this.text.highlight(this.selected);
  }
}
