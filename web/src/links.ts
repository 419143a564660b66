// Linked readings: the selected nodes, shared by every pane and the editor.
// Selecting node k anywhere highlights it in every reading and the source line that
// recorded it; putting the cursor on a line selects the nodes that line recorded.

import type { NodeInfo } from "../protocol";

export class Links {
  private selected = new Set<number>();
  private lineOfNode = new Map<number, number>();
  private listeners: ((selected: Set<number>) => void)[] = [];

  onChange(listener: (selected: Set<number>) => void): void {
    this.listeners.push(listener);
  }

  /** The nodes of the newest readings (and the user's line of each). */
  setNodes(nodes: NodeInfo[]): void {
    this.lineOfNode = new Map(nodes.filter((n) => n.line !== null).map((n) => [n.index, n.line as number]));
  }

  select(nodes: number[]): void {
    this.selected = new Set(nodes);
    this.refresh();
  }

  selectLine(line: number): void {
    const nodes = [...this.lineOfNode].filter(([, at]) => at === line).map(([index]) => index);
    this.select(nodes);
  }

  /** Apply the selection again (after the panes were redrawn). */
  refresh(): void {
    for (const listener of this.listeners) listener(this.selected);
  }

  linesOf(selected: Set<number>): number[] {
    const lines = new Set<number>();
    for (const index of selected) {
      const line = this.lineOfNode.get(index);
      if (line !== undefined) lines.add(line);
    }
    return [...lines].sort((a, b) => a - b);
  }
}
