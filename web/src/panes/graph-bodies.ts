// Bodies as groups: a node that holds a body (a Scan's step, a While's predicate and body, a
// Cond's two branches, a custom_vjp's backward) is one node however many steps it runs, and the
// graph reading carries each body's own graph under the attribute's name, numbered from 0
// (py/topos/compiler/graph.py). The view draws such a node as a group, collapsed by default
// ("scan · 9 nodes a step, 1000 steps"), that expands in place into its body: the body's nodes,
// numbered as the spec numbers them, each placeholder wired from the operand that feeds it
// (`fed_by`), the outputs into the node itself, drawn last in the frame. A body that holds a body
// expands level by level; a node of two bodies (a Cond) shows a frame for each, open with it.
//
// So that the grouping, the layout and the drawing go on reading nodes by number, every body's
// nodes get numbers past the recording's, in order (the same while the recording keeps its shape);
// each knows its index in its body (`local`, its label's) and the recording's node it lies inside
// (`holder`, what a click on it selects). A collapsed body is one box: a 3,001-step loop lays out as
// its neighbours and one group, as a 3-step one does.

import type { GraphJson } from "../../protocol";
import type { Group, Grouping } from "./graph-groups";

export type GraphNode = GraphJson["nodes"][number] & {
  /** A body's node: its index in its body (the spec's number for it, and its label's). */
  local?: number;
  /** A body's node: the recording's node it lies inside, outermost (what selecting it selects). */
  holder?: number;
  attrs?: Record<string, unknown>;
};

/** A body as the graph reading writes it under the attribute's name. */
interface BodyJson {
  nodes: GraphNode[];
  edges: [number, number][];
  arguments: number[];
  captured: number[];
  outputs: number[];
  /** The operand of the holding node that feeds each placeholder (arguments, then captured), or null. */
  fed_by?: (number | null)[];
}

function bodiesOf(node: GraphNode): [string, BodyJson][] {
  const entries = Object.entries(node as unknown as Record<string, unknown>);
  return entries.filter((entry): entry is [string, BodyJson] => {
    const value = entry[1] as Partial<BodyJson> | null;
    return typeof value === "object" && value !== null && Array.isArray(value.nodes) && Array.isArray(value.outputs);
  });
}

/** A node that holds bodies: its name and count as a group's label, and each body's nodes by number. */
interface Holding {
  name: string;
  count: string;
  bodies: { key: string; members: number[] }[];
}

export interface Unfolded {
  /** The recording's nodes and edges, then every body's nodes and the edges that wire them in. */
  graph: GraphJson;
  /** Each node that holds a body, by number. */
  holdings: Map<number, Holding>;
}

/** A group's label for a node of `opcode` holding `bodies`: the loop's name as the user wrote it, and what it runs. */
function describe(node: GraphNode, bodies: [string, BodyJson][]): { name: string; count: string } {
  const size = (key: string) => bodies.find(([k]) => k === key)?.[1].nodes.length ?? 0;
  const attrs = node.attrs ?? {};
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  switch (node.opcode) {
    case "Scan":
      return { name: "scan", count: `${plural(size("body"), "node")} a step, ${plural(Number(attrs.length), "step")}` };
    case "While":
      return { name: "while_loop", count: `${plural(size("cond_body"), "node")} a test, ${size("body")} a trip` };
    case "Cond":
      return { name: "cond", count: `${size("true_body")} or ${plural(size("false_body"), "node")}` };
    case "CustomVjp":
      return { name: "custom backward", count: plural(size("backward"), "node") };
    default:
      return { name: node.opcode, count: plural(bodies.reduce((n, [, body]) => n + body.nodes.length, 0), "node") };
  }
}

/** The graph with every body's nodes numbered in; a graph without bodies is returned as it is. */
export function unfold(graph: GraphJson): Unfolded {
  const holdings = new Map<number, Holding>();
  if (!graph.nodes.some((node) => bodiesOf(node).length)) return { graph, holdings };
  const nodes: GraphNode[] = [...graph.nodes];
  const edges: [number, number][] = [...graph.edges];
  let next = Math.max(...graph.nodes.map((node) => node.index)) + 1;
  // `number` maps the enclosing graph's indices to numbers (the recording's are their own).
  const walk = (node: GraphNode, at: number, number: (index: number) => number, holder: number) => {
    const bodies = bodiesOf(node);
    if (!bodies.length) return;
    const holding: Holding = { ...describe(node, bodies), bodies: [] };
    holdings.set(at, holding);
    for (const [key, body] of bodies) {
      const first = next;
      next += body.nodes.length;
      const inner = (index: number) => first + index;
      const members: number[] = [];
      body.nodes.forEach((child, index) => {
        members.push(inner(index));
        nodes.push({ ...child, index: inner(index), local: index, holder, scope: undefined });
      });
      for (const [from, to] of body.edges) edges.push([inner(from), inner(to)]);
      const placeholders = [...body.arguments, ...body.captured];
      (body.fed_by ?? []).forEach((source, position) => {
        if (source !== null && placeholders[position] !== undefined) edges.push([number(source), inner(placeholders[position])]);
      });
      for (const output of new Set(body.outputs)) edges.push([inner(output), at]);
      holding.bodies.push({ key, members });
      body.nodes.forEach((child, index) => walk(child, inner(index), inner, holder));
    }
  };
  for (const node of graph.nodes) walk(node, node.index, (index) => index, node.index);
  return { graph: { nodes, edges }, holdings };
}

/** The calls that record a loop's node (with the Slices that cut its results apart): a group of one becomes the loop's group. */
const LOOP_CALLS = new Set(["scan", "fori_loop", "while_loop", "cond"]);

/**
 * `grouping` (the recording's scopes, graph-groups.ts) with each node that holds a body made a
 * group: the body's nodes (or, for two bodies, a group of each), then the node itself. The group of
 * the call that recorded the loop (`topos.fori_loop`'s, with its Slices) becomes the loop's group,
 * keeping the call's name, rather than a frame around a frame; otherwise the node is replaced by a
 * group of its own. Body groups open collapsed; a Cond's or a While's bodies open with their node's.
 */
export function withBodies(grouping: Grouping, unfolded: Unfolded): Grouping {
  const { holdings } = unfolded;
  if (!holdings.size) return grouping;
  const added: Group[] = [];
  const groupOf = new Map(grouping.groupOf);
  const settle = (members: number[], parent: Group): (number | Group)[] =>
    members.map((member) => {
      if (holdings.has(member)) return holdingGroup(member, parent);
      groupOf.set(member, parent);
      return member;
    });
  /** `group` made the group of the node `at`: what it counts, and the body's members (or a group a body) first. */
  const hold = (group: Group, at: number): (number | Group)[] => {
    const holding = holdings.get(at)!;
    Object.assign(group, { count: holding.count, opens: false });
    groupOf.set(at, group);
    if (holding.bodies.length === 1) return settle(holding.bodies[0].members, group);
    return holding.bodies.map(({ key, members }) => {
      const body: Group = { id: `b${at}.${key}`, name: key, opens: true, parent: group, members: [], nodes: [] };
      added.push(body);
      body.members = settle(members, body);
      return body;
    });
  };
  const holdingGroup = (at: number, parent: Group | null): Group => {
    const group: Group = { id: `b${at}`, name: holdings.get(at)!.name, parent, members: [], nodes: [] };
    added.push(group);
    group.members = [...hold(group, at), at];
    return group;
  };
  const replace = (members: (number | Group)[], parent: Group | null): (number | Group)[] => {
    const held = members.filter((member) => typeof member === "number" && holdings.has(member));
    const absorbed = parent !== null && held.length === 1 && LOOP_CALLS.has(parent.name);
    const kept = members.map((member) => {
      if (typeof member !== "number") {
        member.members = replace(member.members, member);
        return member;
      }
      return holdings.has(member) && !absorbed ? holdingGroup(member, parent) : member;
    });
    return absorbed ? [...hold(parent, held[0] as number), ...kept] : kept;
  };
  const roots = replace(grouping.roots, null);
  // Outer groups before the groups inside them: a body's group after the scope that holds it.
  const groups = [...grouping.groups, ...added];
  for (const group of [...groups].reverse()) {
    group.nodes = group.members.flatMap((member) => (typeof member === "number" ? [member] : member.nodes));
  }
  return { roots, groups, groupOf };
}
