// The graph's groups, as TensorBoard groups name scopes: every node names the calls it was
// recorded inside (its `scope`, from Python: the user's functions, then the topos function
// such as layer_norm that the innermost called), and one call is one group. A tape records in
// order, so one call's nodes are consecutive: a group is a run of consecutive nodes whose scopes
// share a prefix. A graph without scopes (a compiler graph's JSON) is grouped by the source line
// of each run of nodes that one line recorded. Collapsed, a group is one box; expanded, a frame
// around its members, drawn in place.

import type { GraphJson } from "../../protocol";

type GraphNode = GraphJson["nodes"][number];

export interface Group {
  /** Stable while the recording keeps its shape: the group's first node and depth ("g12.2"). */
  id: string;
  /** The call's name as written (the qualified name's last part: "split_heads"). */
  name: string;
  parent: Group | null;
  /** Its members in order: nodes (by index) and the groups of calls inside it. */
  members: (number | Group)[];
  /** Every node inside, however deep. */
  nodes: number[];
  /** What its label counts, where not its nodes (a loop's: "9 nodes a step, 1000 steps"; graph-bodies.ts). */
  count?: string;
  /** Whether it is drawn expanded until the user opens or closes it, where not the graph's default (a body's group). */
  opens?: boolean;
}

export interface Grouping {
  /** The top level: nodes and groups. */
  roots: (number | Group)[];
  /** Every group, outer ones before the groups inside them. */
  groups: Group[];
  /** The innermost group of each node (absent: a node at the top level). */
  groupOf: Map<number, Group>;
}

/** A run of nodes that one line recorded is a group only when it has this many nodes (a loop, a long expression). */
export const LINE_GROUP_MIN = 10;
const LINE = "line ";

/**
 * The names of the calls a node was recorded inside. A node recorded outside any function (the
 * script's top level), or in a graph without scopes, is in the group of the line that recorded it.
 */
function pathOf(node: GraphNode, scoped: boolean): string[] {
  const scope = scoped ? (node.scope ?? []) : [];
  return scope.length || node.line === null ? scope : [`${LINE}${node.line}`];
}

function nodeCount(members: (number | Group)[]): number {
  return members.reduce<number>((count, member) => count + (typeof member === "number" ? 1 : nodeCount(member.members)), 0);
}

export function groupNodes(graph: GraphJson): Grouping {
  const scoped = graph.nodes.some((node) => node.scope !== undefined);
  const top: Group = { id: "", name: "", parent: null, members: [], nodes: [] };
  // The groups open at the node being placed, outermost first, and the scope name of each.
  let open: { group: Group; name: string }[] = [];
  for (const node of graph.nodes) {
    const path = pathOf(node, scoped);
    let shared = 0;
    while (shared < open.length && shared < path.length && open[shared].name === path[shared]) shared++;
    open = open.slice(0, shared);
    for (let depth = shared; depth < path.length; depth++) {
      const parent = depth ? open[depth - 1].group : top;
      const qualified = path[depth];
      const group: Group = { id: `g${node.index}.${depth}`, name: qualified.slice(qualified.lastIndexOf(".") + 1), parent, members: [], nodes: [] };
      parent.members.push(group);
      open.push({ group, name: qualified });
    }
    (open.length ? open[open.length - 1].group : top).members.push(node.index);
  }
  // A call around the whole graph (the function that records it all) is no group; neither is a
  // call of a single node, which is drawn as that node.
  let roots = top.members;
  while (roots.length === 1 && typeof roots[0] !== "number") roots = roots[0].members;
  const groups: Group[] = [];
  const groupOf = new Map<number, Group>();
  const settle = (members: (number | Group)[], parent: Group | null): (number | Group)[] =>
    members.flatMap((member) => {
      if (typeof member === "number") {
        if (parent) groupOf.set(member, parent);
        return [member];
      }
      member.parent = parent;
      const single = member.members.length === 1 && typeof member.members[0] === "number";
      const shortLine = member.name.startsWith(LINE) && nodeCount(member.members) < LINE_GROUP_MIN;
      if (single || shortLine) return settle(member.members, parent);
      groups.push(member);
      member.members = settle(member.members, member);
      return [member];
    });
  roots = settle(roots, null);
  for (const group of [...groups].reverse()) {
    group.nodes = group.members.flatMap((member) => (typeof member === "number" ? [member] : member.nodes));
  }
  return { roots, groups, groupOf };
}

/** A thing the layout places: a node, or a collapsed group's box. Expanded groups are frames around their members. */
export type Item = { kind: "node"; id: string; index: number; frame: Group | null } | { kind: "group"; id: string; group: Group; frame: Group | null };

export interface Visible {
  items: Item[];
  /** The expanded groups, outer ones first: frames around their visible members. */
  frames: Group[];
  /** Edges between visible items (by id), one a pair. */
  edges: [string, string][];
  /** The item that shows each node: itself, or the collapsed group that holds it. */
  shownBy: Map<number, string>;
}

export const nodeId = (index: number) => `n${index}`;

/** What is drawn when the groups in `expanded` are open and every other group is closed. */
export function visibleItems(graph: GraphJson, grouping: Grouping, expanded: ReadonlySet<string>): Visible {
  const items: Item[] = [];
  const frames: Group[] = [];
  const shownBy = new Map<number, string>();
  const place = (members: (number | Group)[], frame: Group | null) => {
    for (const member of members) {
      if (typeof member === "number") {
        items.push({ kind: "node", id: nodeId(member), index: member, frame });
        shownBy.set(member, nodeId(member));
      } else if (expanded.has(member.id)) {
        frames.push(member);
        place(member.members, member);
      } else {
        items.push({ kind: "group", id: member.id, group: member, frame });
        for (const index of member.nodes) shownBy.set(index, member.id);
      }
    }
  };
  place(grouping.roots, null);
  const seen = new Set<string>();
  const edges: [string, string][] = [];
  for (const [from, to] of graph.edges) {
    const a = shownBy.get(from);
    const b = shownBy.get(to);
    if (a === undefined || b === undefined || a === b || seen.has(`${a} ${b}`)) continue;
    seen.add(`${a} ${b}`);
    edges.push([a, b]);
  }
  return { items, frames, edges, shownBy };
}
